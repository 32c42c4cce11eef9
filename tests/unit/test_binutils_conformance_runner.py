"""The binutils SFrame conformance runner's own logic (no download, no tools)."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.binutils_sframe import DumpTest, _known_difference, functions

GAS = """
  Function Index :

    func idx [0]: pc = 0x0, size = 0 bytes
    STARTPC         CFA       FP        RA
    0000000000000000  sp+8      u         f

    func idx [1]: pc = 0x400000, size = 8 bytes
    STARTPC         CFA       FP        RA
    0000000000400000  sp+8      u         f
    0000000000400004  sp+8      u         f
    0000000000400006  sp+16     u         f
"""

OURS = """
    func idx [0]: pc = 0x401000, size = 8 bytes
    STARTPC         CFA       FP        RA
    0000000000401000  sp+8      u         f
    0000000000401006  sp+16     u         f
"""


def test_functions_are_compared_relative_to_their_start_without_repeated_rows() -> None:
    assert functions(OURS) == [["size 8", "+0 sp+8 u f", "+6 sp+16 u f"]]
    assert functions(GAS)[1] == functions(OURS)[0]


def test_gas_zero_length_fdes_are_a_known_difference() -> None:
    assert _known_difference(GAS, OURS, "") == "known:gas-zero-length-fde"
    assert _known_difference(GAS, OURS.replace("sp+16", "sp+24"), "") is None


def test_a_row_at_the_function_end_is_a_known_difference() -> None:
    gas = OURS + "    0000000000401008  sp+8      u         f            \n"
    assert functions(gas) != functions(OURS)
    assert _known_difference(gas, OURS, "") == "known:gas-row-at-function-end"


def test_dump_test_directives(tmp_path: Path) -> None:
    d = tmp_path / "link.d"
    d.write_text(
        "#as: --gsframe\n#source: a.s\n#source: b.s -mfoo\n#readelf: --sframe=.sframe2\n"
        "#ld: -shared\n#target: x86_64-*-*\n#notarget: ![gas_sframe_check]\n"
        "#name: x\n\nContents of the SFrame section .sframe2:\n#pass\n"
    )
    test = DumpTest.read(d)
    assert test.first("as") == "--gsframe" and test.first("ld") == "-shared"
    assert test.dump_tool == ("readelf", "--sframe=.sframe2")
    assert test.sources == [(tmp_path / "a.s", []), (tmp_path / "b.s", ["-mfoo"])]
    assert test.runs_on("x86_64") and not test.runs_on("aarch64")
