"""DWARF headers read through the section cursor (dwarf/sections.py), from bytes built by hand.

Each header is laid out by DWARF 5 (section 7.5.1.1 unit headers, 6.1.2 address
range sets); the expected offsets are the running sums of its fields' sizes.
A section is a window of a larger buffer, so offsets in errors are
section-relative and reads stop at the window's end, not the buffer's.
"""

from __future__ import annotations

import struct

import pytest

from stackmark.dwarf.aranges import read_aranges
from stackmark.dwarf.sections import Section
from stackmark.dwarf.unit import UnitHeader
from stackmark.errors import FormatError

PAD = b"\xee" * 3  # bytes before the section in the buffer


def section(data: bytes, name: str = ".debug_info", tail: bytes = b"\xff" * 16) -> Section:
    return Section(name, PAD + data + tail, len(PAD), len(PAD) + len(data), "f.o")


def test_a_dwarf_5_skeleton_unit_header_field_by_field() -> None:
    # unit_length 4 | version 2 | unit_type 1 | address_size 1 | debug_abbrev_offset 4
    # | dwo_id 8 = 20 bytes, so the first DIE is at 20; the unit ends at 4 + 16.
    header = struct.pack("<IHBBIQ", 16, 5, 0x04, 8, 0x30, 0x1122334455667788)
    unit = UnitHeader(section(header), 0, "<")
    assert (unit.version, unit.unit_type, unit.addr_size) == (5, 0x04, 8)
    assert (unit.abbrev_offset, unit.dwo_id) == (0x30, 0x1122334455667788)
    assert (unit.die_offset, unit.end, unit.offset_size) == (20, 20, 4)


def test_a_64_bit_big_endian_dwarf_4_unit_header() -> None:
    # 0xffffffff | unit_length 8 | version 2 | debug_abbrev_offset 8 | address_size 1:
    # 23 bytes; the unit ends at 12 + 11.
    header = struct.pack(">IQHQB", 0xFFFFFFFF, 11, 4, 0x40, 4)
    unit = UnitHeader(section(header), 0, ">")
    assert (unit.version, unit.offset_size, unit.abbrev_offset, unit.addr_size) == (4, 8, 0x40, 4)
    assert (unit.die_offset, unit.end) == (23, 23)


def test_a_header_cut_by_the_section_end_names_the_field_and_its_section_offset() -> None:
    # A unit of 1 byte: its version at 4 needs two, and the 5-byte section holds one.
    with pytest.raises(FormatError) as caught:
        UnitHeader(section(struct.pack("<IB", 1, 5)), 0, "<")
    assert caught.value.offset == 4
    assert str(caught.value) == (
        "f.o: offset 0x4: .debug_info: unit version at 0x4 (+2) lies outside the section (5 bytes)"
    )


def test_an_address_range_set_and_its_padding() -> None:
    # unit_length 4 | version 2 | debug_info_offset 4 | address_size 1 | segment_selector_size 1
    # = 12 bytes, padded to 16 (a multiple of 2 * address_size), then (0x1000, 0x20) and the
    # terminating (0, 0): unit_length = 16 + 32 - 4 = 44.
    data = (
        struct.pack("<IHIBB", 44, 2, 0x50, 8, 0) + bytes(4) + struct.pack("<4Q", 0x1000, 0x20, 0, 0)
    )
    ((unit, starts, lengths),) = read_aranges(section(data, ".debug_aranges"), "<")
    assert unit == 0x50
    assert list(zip(starts, lengths, strict=True)) == [(0x1000, 0x20), (0, 0)]


def test_an_address_range_set_cut_in_its_header() -> None:
    # The set claims 2 bytes (its version); its unit offset at 6 lies outside the 6-byte section.
    with pytest.raises(FormatError, match=r"unit offset at 0x6 \(\+4\) lies outside the section"):
        read_aranges(section(struct.pack("<IH", 2, 2), ".debug_aranges"), "<")
