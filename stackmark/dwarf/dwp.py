"""DWARF package files (.dwp): where each split unit's contributions lie.

A .dwp (made by `dwp` or `llvm-dwp` from a program's .dwo files) holds every
split unit's sections concatenated: one .debug_info.dwo, one
.debug_abbrev.dwo, ... The unit index `.debug_cu_index` says, per DWO id,
which slice of each section belongs to that unit (DWARF 5 section 7.3.5;
version 2 is the GNU extension for DWARF 4, same layout):

    header (16 bytes, DWARF 5 section 7.3.5.3's names: `HEADER_LAYOUT`)
      0  u16 version        5 (GNU version 2: a u32 over version and padding)
      2  u16 padding
      4  u32 section_count  N: columns of the offset and size tables
      8  u32 unit_count     U: rows
     12  u32 slot_count     S: hash table slots (a power of 2)
    hash table:      u64 signature per slot (0: empty)
    index table:     u32 row per slot (1-based; 0: empty)
    section ids:     u32 per column (DW_SECT_*)
    section offsets: u32 per row and column
    section sizes:   u32 per row and column

A signature is found by open addressing: start at `signature & mask`, step
by `((signature >> 32) & mask) | 1`. The index is read once, at open, through
`binary.Cursor` (tests/unit/test_dwarf_dwp.py pins the header's layout).
"""

from __future__ import annotations

import struct

from stackmark.binary import Cursor, RecordLayout
from stackmark.errors import FormatError

HEADER_LAYOUT = RecordLayout(
    "unit index header",
    ("version", "H"),
    ("padding", "H"),
    ("section_count", "I"),
    ("unit_count", "I"),
    ("slot_count", "I"),
)
HEADER_SIZE = HEADER_LAYOUT.size  # 16
_GNU_VERSION = 2  # the GNU extension for DWARF 4: `version` is a u32

# DW_SECT_* of DWARF 5 (version 5 indexes) and of the GNU version 2 indexes,
# mapped to the .dwo section each names.
_V5_SECTIONS = {
    1: ".debug_info.dwo",
    3: ".debug_abbrev.dwo",
    4: ".debug_line.dwo",
    5: ".debug_loclists.dwo",
    6: ".debug_str_offsets.dwo",
    7: ".debug_macro.dwo",
    8: ".debug_rnglists.dwo",
}
_V2_SECTIONS = {
    1: ".debug_info.dwo",
    2: ".debug_types.dwo",
    3: ".debug_abbrev.dwo",
    4: ".debug_line.dwo",
    5: ".debug_loc.dwo",
    6: ".debug_str_offsets.dwo",
    7: ".debug_macinfo.dwo",
    8: ".debug_macro.dwo",
}

Contributions = dict[str, tuple[int, int]]
"""Section name -> (offset, size) of one unit's part of that section."""


class _IndexCursor(Cursor):
    """Reads `.debug_cu_index`, naming the section in its errors."""

    __slots__ = ()

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        return FormatError(
            f".debug_cu_index: {what} at 0x{at:x} needs {size} bytes, the section has {self.end}",
            offset=at,
            source=self.source,
        )


class UnitIndex:
    """A parsed `.debug_cu_index`: DWO id -> the unit's section contributions."""

    def __init__(self, data: bytes, endian: str, source: str):
        self._source = source

        def fail(message: str, offset: int) -> FormatError:
            return FormatError(f".debug_cu_index: {message}", offset=offset, source=source)

        cursor = _IndexCursor(data, little=endian == "<", source=source)
        header = cursor.record(HEADER_LAYOUT, "header")
        version, padding = header["version"], header["padding"]
        gnu_version = (padding << 16 | version) if endian == "<" else (version << 16 | padding)
        if gnu_version == _GNU_VERSION:
            version = _GNU_VERSION
        elif version != 5:
            also = f" (as GNU's u32: {gnu_version})" if gnu_version != version else ""
            raise fail(f"unknown version {version}{also}", 0)
        columns = header["section_count"]
        units = header["unit_count"]
        slots = header["slot_count"]
        need = HEADER_SIZE + slots * 12 + columns * 4 + 2 * units * columns * 4
        if need > len(data):
            raise fail(
                f"{units} units, {slots} slots and {columns} columns need {need} bytes, "
                f"the section has {len(data)}",
                HEADER_LAYOUT.offsets["section_count"],
            )
        if slots & (slots - 1):
            raise fail(
                f"slot count {slots} is not a power of two", HEADER_LAYOUT.offsets["slot_count"]
            )

        def table(code: str, count: int, what: str) -> tuple[int, ...]:
            return cursor.unpack(struct.Struct(f"{endian}{count}{code}"), what)

        self._signatures = table("Q", slots, "hash table")
        self._rows = table("I", slots, "index table")
        names = _V5_SECTIONS if version == 5 else _V2_SECTIONS
        self._columns = [names.get(i) for i in table("I", columns, "section ids")]
        self._offsets = table("I", units * columns, "section offsets")
        self._sizes = table("I", units * columns, "section sizes")
        self._units = units
        self.version = version

    def contributions(self, signature: int) -> Contributions | None:
        """The sections of the unit whose DWO id is `signature`, or None."""
        slots = len(self._signatures)
        if slots == 0:
            return None
        mask = slots - 1
        slot = signature & mask
        step = ((signature >> 32) & mask) | 1
        for _ in range(slots):
            row = self._rows[slot]
            if row == 0:
                return None
            if self._signatures[slot] == signature:
                if row > self._units:
                    raise FormatError(
                        f".debug_cu_index: slot {slot} names row {row} of {self._units}",
                        source=self._source,
                    )
                columns = len(self._columns)
                base = (row - 1) * columns
                return {
                    name: (self._offsets[base + i], self._sizes[base + i])
                    for i, name in enumerate(self._columns)
                    if name is not None
                }
            slot = (slot + step) & mask
        return None
