"""The .dwp unit index (stackmark.dwarf.dwp), on hand-built sections."""

from __future__ import annotations

import struct

import pytest

from stackmark.dwarf.dwp import HEADER_LAYOUT, UnitIndex
from stackmark.errors import FormatError

SIGNATURE = 0x1122334455667701


def _index(
    slots: int = 2,
    rows: tuple[int, ...] = (0, 1),
    units: int = 1,
    endian: str = "<",
    version: bytes = b"",
) -> bytes:
    """A version 5 index: 2 columns (DW_SECT_INFO = 1, DW_SECT_ABBREV = 3);
    `version` replaces its first 4 bytes (version and padding).

    SIGNATURE & (slots - 1) = 1 with 2 slots, so it sits in slot 1."""
    header = version or struct.pack(endian + "HH", 5, 0)
    header += struct.pack(endian + "III", 2, units, slots)
    hashes = struct.pack(endian + "2Q", 0, SIGNATURE)
    index = struct.pack(endian + "2I", *rows)
    ids = struct.pack(endian + "2I", 1, 3)
    offsets = struct.pack(endian + "2I", 0x10, 0x20)
    sizes = struct.pack(endian + "2I", 0x30, 0x40)
    return header + hashes + index + ids + offsets + sizes


def test_the_header_layout_is_the_dwarf_5_specs() -> None:
    # DWARF 5 section 7.3.5.3: version (uhalf), padding (uhalf), then three uwords.
    assert [(name, HEADER_LAYOUT.offsets[name]) for name in HEADER_LAYOUT.names] == [
        ("version", 0),
        ("padding", 2),  # 0 + 2
        ("section_count", 4),  # 2 + 2
        ("unit_count", 8),  # 4 + 4
        ("slot_count", 12),  # 8 + 4
    ]
    assert HEADER_LAYOUT.size == 16  # 12 + 4


def test_a_signature_gives_its_units_slices_of_each_section() -> None:
    index = UnitIndex(_index(), "<", "p.dwp")
    assert index.contributions(SIGNATURE) == {
        ".debug_info.dwo": (0x10, 0x30),
        ".debug_abbrev.dwo": (0x20, 0x40),
    }


def test_an_unknown_signature_ends_at_an_empty_slot() -> None:
    # 0x...00 starts at slot 0, whose row is 0: empty.
    assert UnitIndex(_index(), "<", "p.dwp").contributions(SIGNATURE - 1) is None


def test_a_truncated_index_is_a_format_error_naming_the_file() -> None:
    # 16 (header) + 2 slots * 12 + 2 columns * 4 + 2 tables * 1 unit * 2 columns * 4 = 64
    with pytest.raises(FormatError, match=r"p\.dwp.*need 64 bytes, the section has 60"):
        UnitIndex(_index()[:60], "<", "p.dwp")


def test_a_row_past_the_unit_count_is_a_format_error() -> None:
    index = UnitIndex(_index(rows=(0, 2)), "<", "p.dwp")
    with pytest.raises(FormatError, match="slot 1 names row 2 of 1"):
        index.contributions(SIGNATURE)


def test_a_big_endian_index_reads_its_u16_version() -> None:
    # Big-endian, version 5 and padding 0 are the bytes 00 05 00 00 (a u32 of 0x50000).
    index = UnitIndex(_index(endian=">"), ">", "p.dwp")
    assert index.version == 5
    assert index.contributions(SIGNATURE) == {
        ".debug_info.dwo": (0x10, 0x30),
        ".debug_abbrev.dwo": (0x20, 0x40),
    }


@pytest.mark.parametrize("endian", ["<", ">"])
def test_a_gnu_version_2_index_has_a_u32_version(endian: str) -> None:
    index = UnitIndex(_index(endian=endian, version=struct.pack(endian + "I", 2)), endian, "p.dwp")
    assert index.version == 2
    # Version 2's DW_SECT 3 is also .debug_abbrev.dwo.
    assert index.contributions(SIGNATURE) == {
        ".debug_info.dwo": (0x10, 0x30),
        ".debug_abbrev.dwo": (0x20, 0x40),
    }


def test_an_unknown_version_is_a_format_error() -> None:
    with pytest.raises(FormatError, match=r"p\.dwp.*unknown version 4$"):
        UnitIndex(_index(version=struct.pack("<HH", 4, 0)), "<", "p.dwp")
    with pytest.raises(FormatError, match=r"unknown version 0 \(as GNU's u32: 3\)"):
        UnitIndex(_index(endian=">", version=struct.pack(">I", 3)), ">", "p.dwp")


def test_a_header_cut_short_is_a_format_error_naming_its_size() -> None:
    with pytest.raises(
        FormatError, match=r"p\.dwp.*header at 0x0 needs 16 bytes, the section has 10"
    ):
        UnitIndex(_index()[:10], "<", "p.dwp")


def test_a_slot_count_not_a_power_of_two_is_a_format_error() -> None:
    # 3 slots need 16 + 36 + 8 + 16 = 76 bytes; pad so only the power of two fails.
    data = _index(slots=3) + bytes(12)
    with pytest.raises(FormatError, match="slot count 3 is not a power of two"):
        UnitIndex(data, "<", "p.dwp")
