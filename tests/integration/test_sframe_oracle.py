"""SFrame against the real binutils, on programs compiled during the test.

- v1: gcc -Wa,--gsframe with this machine's binutils 2.40; its objdump is
  the oracle for our dump, and for sections we generate from CFI.
- v2/v3: sections we generate are read back by objdump 2.44 and 2.47
  (Debian trixie/sid packages, unpacked by shared/tools/get-binutils.sh
  into build/toolchains on first use).
- AArch64: the committed fixtures, their .sframe removed and generated again
  from .eh_frame, read back by the cross objdumps of 2.40, 2.44 and 2.47.
- Big-endian AArch64 (a freestanding program built -mbig-endian at test
  time by each release's gas), dumped and generated, against the same objdumps.
- s390x: functions assembled by gas 2.47 (sid's binutils-s390x-linux-gnu,
  fetched beside the others), dumped, looked up and generated (v2, v3).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from stackmark.cli.main import main
from stackmark.formats.sframe.dump import objdump_text
from stackmark.formats.sframe.from_cfi import generate_from_file
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.reader import read_sframe_file
from stackmark.formats.sframe.spec import AbiArch
from stackmark.unwind_rules import RuleKind, ValueRule
from tests.conftest import require_tool
from tests.support.build import REPO, compile_program
from tests.support.s390x_binutils import s390x_binutils

GSFRAME = ("-O2", "-fomit-frame-pointer", "-Wa,--gsframe")
PLAIN = ("-O2", "-fomit-frame-pointer")


def _objdump(objdump: str, binary: Path) -> str:
    proc = subprocess.run(
        [objdump, "--sframe", binary.name],
        cwd=binary.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge", "sframe_wide"])
def test_v1_from_gas_matches_system_objdump(program: str) -> None:
    objdump = require_tool("objdump")
    binary = compile_program(f"{program}_v1", [f"{program}.c"], flags=GSFRAME)
    section = read_sframe_file(binary)
    assert section.version == 1
    assert objdump_text(section, binary.name) == _objdump(objdump, binary)


def test_wide_fixture_has_every_start_and_offset_size() -> None:
    """sframe_wide.c makes gas use 1-, 2- and 4-byte FRE start addresses and CFA
    offsets, so the oracle tests above cover every FRE encoding."""
    section = read_sframe_file(compile_program("sframe_wide_v1", ["sframe_wide.c"], flags=GSFRAME))
    start_sizes = {fde.info & 0xF for fde in section.fdes}  # SFRAME_FRE_TYPE_ADDR1/2/4
    offset_sizes = {(fre.info >> 5) & 3 for fde in section.fdes for fre in fde.fres}
    assert start_sizes == {0, 1, 2} and offset_sizes == {0, 1, 2}


def _generate(binary: Path, out: Path, version: int) -> None:
    assert (
        main(["sframe", "generate", str(binary), "-o", str(out), "--sframe-version", str(version)])
        == 0
    )


@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge", "sframe_wide"])
def test_generated_v1_read_back_by_system_objdump(program: str, tmp_path: Path) -> None:
    objdump = require_tool("objdump")
    binary = compile_program(f"{program}_plain", [f"{program}.c"], flags=PLAIN)
    out = tmp_path / f"{program}-generated"
    _generate(binary, out, 1)
    section = read_sframe_file(out)
    assert len(section.fdes) >= 6
    assert objdump_text(section, out.name) == _objdump(objdump, out)
    # the copy still runs
    assert subprocess.run([str(out)], check=False).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge", "sframe_wide"])
@pytest.mark.parametrize(
    ("version", "releases"), [(2, ("2.44", "2.47")), (3, ("2.47",))], ids=["v2", "v3"]
)
def test_generated_sections_read_back_by_newer_objdump(
    newer_binutils: Path, program: str, version: int, releases: tuple[str, ...], tmp_path: Path
) -> None:
    binary = compile_program(f"{program}_plain", [f"{program}.c"], flags=PLAIN)
    out = tmp_path / f"{program}-v{version}"
    _generate(binary, out, version)
    section = read_sframe_file(out)
    if version == 3 and program == "sframe_edge":
        assert any(f.is_flex for f in section.fdes)  # drap's DRAP prologue
    suite = {"2.44": "bin-trixie", "2.47": "bin-sid"}
    for release in releases:
        expected = _objdump(str(newer_binutils / suite[release] / "objdump"), out)
        assert objdump_text(section, out.name, style=release) == expected, release
    assert subprocess.run([str(out)], check=False).returncode == 0


SFRAME_FIXTURES = REPO / "tests" / "fixtures" / "sframe"


@pytest.mark.slow
@pytest.mark.parametrize("program", ["deep", "a64"])
def test_generated_aarch64_sections_read_back_by_every_objdump(
    newer_binutils: Path, program: str, tmp_path: Path
) -> None:
    """AArch64 (a64: pac-ret with both keys): the committed v1 fixture without its
    .sframe, generated again from .eh_frame as v1, v2 and v3, then read by the
    cross objdump of binutils 2.40 (v1), 2.44 (v2) and 2.47 (v2, v3)."""
    bare = tmp_path / f"{program}-aarch64"
    subprocess.run(
        [
            require_tool("aarch64-linux-gnu-objcopy"),
            "--remove-section=.sframe",
            str(SFRAME_FIXTURES / f"{program}-aarch64-v1"),
            str(bare),
        ],
        check=True,
    )
    objdumps = {
        "2.40": require_tool("aarch64-linux-gnu-objdump"),
        "2.44": str(newer_binutils / "bin-trixie" / "aarch64-objdump"),
        "2.47": str(newer_binutils / "bin-sid" / "aarch64-objdump"),
    }
    readers = {1: ("2.40",), 2: ("2.44", "2.47"), 3: ("2.47",)}
    for version, releases in readers.items():
        out = tmp_path / f"{program}-v{version}"
        _generate(bare, out, version)
        section = read_sframe_file(out)
        assert section.version == version and len(section.fdes) >= 8
        if program == "a64":  # return addresses signed with the A and the B key
            assert {f.pauth_key for f in section.fdes} == {0, 1}
        for release in releases:
            expected = _objdump(objdumps[release], out)
            assert objdump_text(section, out.name, style=release) == expected, release


def _aarch64_as_ld(newer_binutils: Path, suite: str, where: Path) -> Path:
    """A directory with the suite's AArch64 `as` and `ld` under their plain names (for gcc -B)."""
    where.mkdir(exist_ok=True)
    for tool in ("as", "ld"):
        link = where / tool
        if not link.exists():
            link.symlink_to(newer_binutils / f"bin-{suite}" / f"aarch64-{tool}")
    return where


@pytest.mark.slow
def test_big_endian_aarch64_against_every_objdump(newer_binutils: Path, tmp_path: Path) -> None:
    """Byte order: a big-endian AArch64 program (ELF MSB, abi_arch 1) assembled with
    --gsframe by binutils 2.40 (v1), 2.44 (v2) and 2.47 (v3): our dump equals each
    one's objdump; then its .sframe removed and generated again as v1, v2 and v3,
    which each objdump reads back as we do."""
    gcc = require_tool("aarch64-linux-gnu-gcc")
    objdumps = {
        "2.40": require_tool("aarch64-linux-gnu-objdump"),
        "2.44": str(newer_binutils / "bin-trixie" / "aarch64-objdump"),
        "2.47": str(newer_binutils / "bin-sid" / "aarch64-objdump"),
    }
    flags = ["-mbig-endian", "-O2", "-Wa,--gsframe", "-nostdlib", "-static", "-Wl,-e,entry"]
    built = {}
    for version, release, suite in ((1, "2.40", None), (2, "2.44", "trixie"), (3, "2.47", "sid")):
        extra = []
        if suite is not None:
            tools = _aarch64_as_ld(newer_binutils, suite, newer_binutils / f"bin-{suite}-aarch64")
            extra = [f"-B{tools}/"]
        binary = compile_program(
            f"sframe_be_v{version}", ["sframe_big_endian.c"], compiler=gcc, flags=[*extra, *flags]
        )
        section = read_sframe_file(binary)
        assert section.version == version
        assert section.header.endian == ">" and section.header.abi_arch == AbiArch.AARCH64_BIG
        assert len(section.fdes) == 3
        assert objdump_text(section, binary.name, style=release) == _objdump(
            objdumps[release], binary
        )
        built[version] = binary
    bare = tmp_path / "be-bare"
    subprocess.run(
        [
            require_tool("aarch64-linux-gnu-objcopy"),
            "--remove-section=.sframe",
            str(built[1]),
            str(bare),
        ],
        check=True,
    )
    readers = {1: ("2.40",), 2: ("2.44", "2.47"), 3: ("2.47",)}
    for version, releases in readers.items():
        out = tmp_path / f"be-generated-v{version}"
        _generate(bare, out, version)
        section = read_sframe_file(out)
        assert section.header.endian == ">" and len(section.fdes) == 3
        for release in releases:
            expected = _objdump(objdumps[release], out)
            assert objdump_text(section, out.name, style=release) == expected, release


@pytest.fixture(scope="session")
def s390x_tools(newer_binutils: Path) -> Path:
    return s390x_binutils(newer_binutils)


def _s390x_cfi_rows(path: Path) -> dict[int, dict[Any, Any]]:
    """pc -> pyelftools' decoded CFI row, for every byte of every function."""
    from elftools.dwarf.callframe import FDE
    from elftools.elf.elffile import ELFFile

    rows: dict[int, dict[Any, Any]] = {}
    with open(path, "rb") as f:
        for entry in ELFFile(f).get_dwarf_info().EH_CFI_entries():
            if not isinstance(entry, FDE):
                continue
            end = entry.header["initial_location"] + entry.header["address_range"]
            table = entry.get_decoded().table
            for i, row in enumerate(table):
                row_end = table[i + 1]["pc"] if i + 1 < len(table) else end
                rows.update(dict.fromkeys(range(row["pc"], row_end), row))
    return rows


def _assert_rows_follow_the_cfi(binary: Path) -> None:
    """Every s390x row as the unwinder reads it (CFA, RA, FP) against the DWARF CFI."""
    table = SFrameTable.from_elf(binary)
    checked = 0
    for pc, cfi in _s390x_cfi_rows(binary).items():
        row = table.row(pc)
        assert row is not None, hex(pc)
        ra_rule, fp_rule = cfi.get(14), cfi.get(11)
        if ra_rule is not None and ra_rule.type == "UNDEFINED":
            assert row.outermost, hex(pc)
            continue
        assert (row.cfa_register, row.cfa_offset) == (cfi["cfa"].reg, cfi["cfa"].offset), hex(pc)
        for rule, got in ((ra_rule, row.ra), (fp_rule, row.fp)):
            if rule is None or rule.type == "SAME_VALUE":
                assert got == ValueRule.same(), hex(pc)
            elif rule.type == "OFFSET":
                assert got == ValueRule.at_cfa(rule.arg), hex(pc)
            else:
                assert rule.type == "REGISTER"
                assert got == ValueRule(RuleKind.VALUE, rule.arg, 0), hex(pc)
        checked += 1
    assert checked > 50


@pytest.mark.slow
def test_s390x_against_objdump_2_47(s390x_tools: Path, tmp_path: Path) -> None:
    """s390x (big-endian; CFA offsets stored as (offset - 160) / 8, RA padding words,
    RA and FP kept in registers, an outermost frame), assembled by gas 2.47 from
    tests/fixtures/src/sframe_s390x.S: our dump equals its objdump's, our rows
    follow the CFI; then the .sframe removed and generated again as v2 and v3:
    objdump reads back what we read, and our v3 is the one gas wrote."""
    source = REPO / "tests" / "fixtures" / "src" / "sframe_s390x.S"
    obj, binary = tmp_path / "s390x.o", tmp_path / "s390x"
    subprocess.run([s390x_tools / "as", "--gsframe", source, "-o", obj], check=True)
    subprocess.run([s390x_tools / "ld", "--build-id=sha1", obj, "-o", binary], check=True)
    objdump = str(s390x_tools / "objdump")
    section = read_sframe_file(binary)
    assert section.version == 3 and section.abi_arch == AbiArch.S390X_BIG
    assert len(section.fdes) == 5 and sum(f.is_flex for f in section.fdes) == 1
    gas_dump = _objdump(objdump, binary)
    assert objdump_text(section, binary.name) == gas_dump
    _assert_rows_follow_the_cfi(binary)

    bare = tmp_path / "s390x-bare"
    subprocess.run([s390x_tools / "objcopy", "--remove-section=.sframe", binary, bare], check=True)
    v1 = ["sframe", "generate", str(bare), "-o", str(tmp_path / "v1"), "--sframe-version", "1"]
    assert main(v1) == 1  # s390x SFrame starts at v2 (binutils 2.45)
    for version in (2, 3):
        out = tmp_path / f"s390x-v{version}"
        _generate(bare, out, version)
        generated = read_sframe_file(out)
        expected = _objdump(objdump, out)
        assert objdump_text(generated, out.name) == expected
        _assert_rows_follow_the_cfi(out)
        if version == 3:
            assert expected.replace(out.name, binary.name, 1) == gas_dump


def test_s390x_cfa_offset_sframe_cannot_store_is_reported(
    s390x_tools: Path, tmp_path: Path
) -> None:
    """s390x stores the CFA offset as (offset - 160) / 8: a CFA of sp+164 has no
    encoding, so the function is left out and reported (gas 2.47 writes sp+160 for it)."""
    source = tmp_path / "odd.S"
    source.write_text(
        "\t.text\n\t.globl odd\n\t.type odd, @function\nodd:\n\t.cfi_startproc\n"
        "\taghi %r15,-4\n\t.cfi_def_cfa_offset 164\n\taghi %r15,4\n\t.cfi_def_cfa_offset 160\n"
        "\tbr %r14\n\t.cfi_endproc\n\t.size odd, .-odd\n"
    )
    obj, binary = tmp_path / "odd.o", tmp_path / "odd"
    subprocess.run([s390x_tools / "as", source, "-o", obj], check=True)
    subprocess.run([s390x_tools / "ld", "-e", "odd", obj, "-o", binary], check=True)
    result = generate_from_file(binary, version=3)
    assert result.section.fdes == []
    [skipped] = result.skipped
    assert skipped.name == "odd" and "CFA offset 164 is not 160 plus a multiple of 8" in (
        skipped.reason
    )
