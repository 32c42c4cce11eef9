"""DWARF package files (.dwp): where each split unit's contributions lie.

A .dwp (made by `dwp` or `llvm-dwp` from a program's .dwo files) holds every
split unit's sections concatenated: one .debug_info.dwo, one
.debug_abbrev.dwo, ... The unit index `.debug_cu_index` says, per DWO id,
which slice of each section belongs to that unit (DWARF 5 section 7.3.5;
version 2 is the GNU extension for DWARF 4, same layout):

    header: u16 version + u16 padding (v5), or u32 version (v2)
            u32 column count, u32 unit count, u32 slot count (a power of 2)
    hash table:   u64 signature per slot (0: empty)
    index table:  u32 row per slot (1-based; 0: empty)
    section ids:  u32 per column (DW_SECT_*)
    offsets:      u32 per row and column
    sizes:        u32 per row and column

A signature is found by open addressing: start at `signature & mask`, step
by `((signature >> 32) & mask) | 1`.
"""

from __future__ import annotations

import struct

from stackmark.errors import FormatError

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


class UnitIndex:
    """A parsed `.debug_cu_index`: DWO id -> the unit's section contributions."""

    def __init__(self, data: bytes, endian: str, source: str):
        self._source = source

        def fail(message: str, offset: int) -> FormatError:
            return FormatError(f".debug_cu_index: {message}", offset=offset, source=source)

        if len(data) < 16:
            raise fail(f"{len(data)} bytes are too few for its header", 0)
        (version,) = struct.unpack_from(f"{endian}I", data, 0)
        if version not in (2, 5) and (version & 0xFFFF) != 5:
            raise fail(f"unknown version {version}", 0)
        version = 5 if (version & 0xFFFF) == 5 else 2
        columns, units, slots = struct.unpack_from(f"{endian}III", data, 4)
        need = 16 + slots * 12 + columns * 4 + 2 * units * columns * 4
        if need > len(data):
            raise fail(
                f"{units} units, {slots} slots and {columns} columns need {need} bytes, "
                f"the section has {len(data)}",
                4,
            )
        if slots & (slots - 1):
            raise fail(f"slot count {slots} is not a power of two", 12)
        self._signatures = struct.unpack_from(f"{endian}{slots}Q", data, 16)
        self._rows = struct.unpack_from(f"{endian}{slots}I", data, 16 + slots * 8)
        at = 16 + slots * 12
        ids = struct.unpack_from(f"{endian}{columns}I", data, at)
        names = _V5_SECTIONS if version == 5 else _V2_SECTIONS
        self._columns = [names.get(i) for i in ids]
        at += columns * 4
        self._offsets = struct.unpack_from(f"{endian}{units * columns}I", data, at)
        at += units * columns * 4
        self._sizes = struct.unpack_from(f"{endian}{units * columns}I", data, at)
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
