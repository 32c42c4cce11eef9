"""The .dwp unit index (stackmark.dwarf.dwp), on hand-built sections."""

from __future__ import annotations

import struct

import pytest

from stackmark.dwarf.dwp import UnitIndex
from stackmark.errors import FormatError

SIGNATURE = 0x1122334455667701


def _index(slots: int = 2, rows: tuple[int, ...] = (0, 1), units: int = 1) -> bytes:
    """A version 5 index: 2 columns (DW_SECT_INFO = 1, DW_SECT_ABBREV = 3).

    SIGNATURE & (slots - 1) = 1 with 2 slots, so it sits in slot 1."""
    header = struct.pack("<HHIII", 5, 0, 2, units, slots)
    hashes = struct.pack("<2Q", 0, SIGNATURE)
    index = struct.pack("<2I", *rows)
    ids = struct.pack("<2I", 1, 3)
    offsets = struct.pack("<2I", 0x10, 0x20)
    sizes = struct.pack("<2I", 0x30, 0x40)
    return header + hashes + index + ids + offsets + sizes


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
