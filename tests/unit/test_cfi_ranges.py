"""`stackmark.dwarf.cfi_ranges` against readelf's dump of the same FDEs, and
against `read_cfi`'s FDEs (the two read one walk, `dwarf/cfi_entries.py`).

Oracle: `readelf --debug-dump=frames`, which prints every FDE of `.eh_frame`
and `.debug_frame` as `pc=START..END`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stackmark.dwarf.cfi import read_cfi
from stackmark.dwarf.cfi_ranges import CFI_SECTIONS, CfiRanges
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from tests.conftest import require_tool
from tests.support.build import compile_program, run

_FDE = re.compile(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")
LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")


def readelf_ranges(path: Path) -> CfiRanges:
    # no-follow-links: only the file itself (readelf fails on libc following its link).
    out = run([require_tool("readelf"), "--debug-dump=no-follow-links,frames", path])
    return CfiRanges([(int(a, 16), int(b, 16)) for a, b in _FDE.findall(out)])


@pytest.mark.parametrize(
    "flags",
    [
        ("-g", "-O2"),  # .eh_frame (pcrel sdata4 pointers)
        ("-g", "-O2", "-fno-asynchronous-unwind-tables"),  # .debug_frame, .eh_frame for crt
        ("-O2", "-fno-asynchronous-unwind-tables", "-Wl,--strip-debug"),  # crt and PLT only
    ],
    ids=["eh_frame", "debug_frame", "crt_only"],
)
def test_ranges_are_the_fdes_readelf_lists(flags: tuple[str, ...]) -> None:
    exe = compile_program("cfi_ranges", ["dbg_inline_start.c"], flags=flags)
    with ElfFile.open(exe) as elf:
        ranges = CfiRanges.from_elf(elf)
    assert ranges.ranges == readelf_ranges(exe).ranges
    assert ranges.ranges


def test_a_large_eh_frame_with_personality_routines() -> None:
    with ElfFile.open(LIBC) as elf:
        ranges = CfiRanges.from_elf(elf)
    assert ranges.ranges == readelf_ranges(LIBC).ranges


def test_covers_is_half_open() -> None:
    ranges = CfiRanges([(0x10, 0x20), (0x20, 0x30), (0x40, 0x48)])
    assert ranges.ranges == [(0x10, 0x30), (0x40, 0x48)]  # adjacent FDEs merged
    assert [ranges.covers(a) for a in (0xF, 0x10, 0x2F, 0x30, 0x40, 0x47, 0x48)] == [
        False, True, True, False, True, True, False,
    ]  # fmt: skip


def test_a_truncated_section_is_a_format_error(tmp_path: Path) -> None:
    exe = compile_program("cfi_ranges", ["dbg_inline_start.c"], flags=("-O2",))
    data = bytearray(exe.read_bytes())
    with ElfFile.open(exe) as elf:
        section = elf.section(".eh_frame")
        assert section is not None
        # The first CIE's length, made to run far past the section's end.
        data[section.offset : section.offset + 4] = (0x7FFFFFF0).to_bytes(4, "little")
    damaged = tmp_path / "damaged"
    damaged.write_bytes(bytes(data))
    with ElfFile.open(damaged) as elf, pytest.raises(FormatError, match=r"\.eh_frame: entry"):
        CfiRanges.from_elf(elf)


def _ranges_of_read_cfi(elf: ElfFile) -> CfiRanges:
    """The ranges of the FDEs `read_cfi` gives (instructions and all)."""
    found: list[tuple[int, int]] = []
    for name in CFI_SECTIONS:
        section = elf.section(name)
        if section is None or section.size == 0 or section.type == 8:  # SHT_NOBITS
            continue
        fdes = read_cfi(
            elf.section_data(section),
            name,
            address=section.addr,
            endian=elf.endian,
            address_size=elf.pointer_size,
            source=elf.name,
        )
        found += [(fde.start, fde.start + fde.size) for fde in fdes]
    return CfiRanges(found)


@pytest.mark.parametrize(
    ("compiler", "flags"),
    [
        ("gcc", ("-g", "-O2")),
        ("gcc", ("-g", "-O0", "-fno-asynchronous-unwind-tables")),  # .debug_frame version 1
        ("clang-19", ("-g", "-O2")),
        ("clang-19", ("-g", "-O2", "-fno-asynchronous-unwind-tables")),  # version 4 CIEs
    ],
    ids=["gcc", "gcc-debug_frame", "clang", "clang-debug_frame"],
)
def test_the_ranges_are_those_of_read_cfis_fdes(compiler: str, flags: tuple[str, ...]) -> None:
    exe = compile_program(
        "cfi_ranges_differential", ["dbg_inline_start.c"], compiler=require_tool(compiler),
        flags=flags,
    )  # fmt: skip
    with ElfFile.open(exe) as elf:
        ranges = CfiRanges.from_elf(elf)
        assert ranges.ranges == _ranges_of_read_cfi(elf).ranges
    assert ranges.ranges == readelf_ranges(exe).ranges


def test_libcs_ranges_are_those_of_read_cfis_fdes() -> None:
    with ElfFile.open(LIBC) as elf:
        assert CfiRanges.from_elf(elf).ranges == _ranges_of_read_cfi(elf).ranges


def test_fde_pointers_encoded_as_omitted_are_a_format_error(tmp_path: Path) -> None:
    # CfiRanges once dropped the FDEs of a CIE whose "R" encoding is DW_EH_PE_omit
    # (0xff), which read_cfi refused; both refuse it now. gcc's first CIE is "zR":
    # length 4, id 4, version 1, "zR\0" 3, code align 1, data align 1, RA 1, the
    # augmentation data length 1: its R byte is 16 bytes in.
    exe = compile_program("cfi_ranges", ["dbg_inline_start.c"], flags=("-O2",))
    data = bytearray(exe.read_bytes())
    with ElfFile.open(exe) as elf:
        section = elf.section(".eh_frame")
        assert section is not None
        cie = bytes(elf.section_data(section)[:17])
    assert cie[8:12] == b"\x01zR\x00" and cie[16] == 0x1B  # pcrel | sdata4
    data[section.offset + 16] = 0xFF
    damaged = tmp_path / "damaged"
    damaged.write_bytes(bytes(data))
    with (
        ElfFile.open(damaged) as elf,
        pytest.raises(FormatError, match="FDE initial location: unsupported pointer encoding 0xff"),
    ):
        CfiRanges.from_elf(elf)
    assert not CfiRanges.from_files([str(damaged)])  # the GDB unwinder's call: nothing added
