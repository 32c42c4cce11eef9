"""Our `objdump --sframe` text against the text each binutils release printed
for the committed fixtures (tests/fixtures/sframe/NAME.objdump-REL.txt)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from stackmark.errors import StackmarkError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.dump import default_style, dump_sframe, objdump_text
from stackmark.formats.sframe.model import SFrameSection
from stackmark.formats.sframe.reader import read_sframe_file
from stackmark.formats.sframe.writer import build_fde, build_fre, new_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sframe"
DUMPS = sorted(FIXTURES.glob("*.objdump-*.txt"))


def test_every_binary_has_the_dump_of_its_own_release() -> None:
    names = {p.name for p in DUMPS}
    for binary in FIXTURES.iterdir():
        if binary.is_file() and "." not in binary.name:
            own = default_style(int(binary.name[-1]))
            assert f"{binary.name}.objdump-{own}.txt" in names


@pytest.mark.parametrize("expected", DUMPS, ids=lambda p: p.name)
def test_dump_matches_objdump_row_for_row(expected: Path) -> None:
    binary, style = expected.name.split(".objdump-")
    style = style.removesuffix(".txt")
    section = read_sframe_file(FIXTURES / binary)
    ours = objdump_text(section, binary, style=style).splitlines()
    theirs = expected.read_text().splitlines()
    for number, (mine, reference) in enumerate(zip(ours, theirs, strict=False), 1):
        assert mine == reference, f"line {number}"
    assert len(ours) == len(theirs)
    assert objdump_text(section, binary, style=style) == expected.read_text()


def test_styles_refuse_versions_their_objdump_cannot_read() -> None:
    v3 = read_sframe_file(FIXTURES / "deep-x86_64-v3")
    v1 = read_sframe_file(FIXTURES / "deep-x86_64-v1")
    with pytest.raises(StackmarkError, match=r"objdump 2\.40 cannot display SFrame version 3"):
        dump_sframe(v3, style="2.40")
    with pytest.raises(StackmarkError, match=r"objdump 2\.44 cannot display SFrame version 3"):
        dump_sframe(v3, style="2.44")
    with pytest.raises(StackmarkError, match=r"objdump 2\.47 cannot display SFrame version 1"):
        dump_sframe(v1, style="2.47")
    v2 = read_sframe_file(FIXTURES / "deep-x86_64-v2")
    pcrel = SFrameSection(
        dataclasses.replace(v2.header, flags=v2.header.flags | spec.F_FDE_FUNC_START_PCREL),
        v2.fdes,
        v2.address,
    )
    with pytest.raises(StackmarkError, match="flags 0x5"):
        dump_sframe(pcrel, style="2.44")


def _s390x_section(version: int) -> SFrameSection:
    """Rows whose s390x notation follows from the spec: CFA words scaled by 8 plus
    160, RA word 0 = padding, odd words in v2 = register numbers."""
    fres = [
        build_fre(0, cfa_base_sp=True, words=[0]),
        build_fre(4, cfa_base_sp=True, words=[20, 0, -72]),
        build_fre(8, cfa_base_sp=False, words=[20, -48, -56]),
    ]
    if version == 2:
        fres.append(build_fre(12, cfa_base_sp=True, words=[0, 2 * 14 + 1, 2 * 11 + 1]))
    header = new_header(spec.AbiArch.S390X_BIG, version=version)
    return SFrameSection(header, [build_fde(0x1000, 0x20, fres)], 0)


def test_s390x_rows_in_the_2_47_notation() -> None:
    lines = dump_sframe(_s390x_section(2), style="2.47").splitlines()
    rows = [line.split() for line in lines if line.startswith("    00")]
    assert rows == [
        ["0000000000001000", "sp+160", "u", "u"],
        ["0000000000001004", "sp+320", "c-72", "U"],
        ["0000000000001008", "fp+320", "c-56", "c-48"],
        ["000000000000100c", "sp+160", "r11", "r14"],
    ]
    v3_rows = [
        line.split() for line in dump_sframe(_s390x_section(3)).splitlines() if "  sp+" in line
    ]
    assert v3_rows[1] == ["0000000000001004", "sp+320", "c-72", "U"]
