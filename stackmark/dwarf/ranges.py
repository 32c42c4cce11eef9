"""Address range lists: .debug_ranges (DWARF 2-4, 2.17.3) and .debug_rnglists (DWARF 5, 7.25).

Both yield [low, high) pairs with the unit's base address applied, the way
llvm's DWARFDebugRangeList / DWARFDebugRnglist do, including their
tombstone rules (entries starting at the tombstone address are dropped).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from stackmark._native import load
from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.sections import byteorder
from stackmark.errors import FormatError

if TYPE_CHECKING:
    from stackmark.dwarf.unit_parts import AddressRange, UnitView

_MASK64 = (1 << 64) - 1
_native = load("_dwarf")  # compiled twin of `_read_rnglist`, or None (stackmark/_native)
_ADDRESS_STRUCTS = {
    (endian, size): struct.Struct(endian + code)
    for endian in "<>"
    for size, code in ((2, "H"), (4, "I"), (8, "Q"))
}


def read_ranges(unit: UnitView, form: int, value: int) -> list[AddressRange]:
    """The ranges DW_AT_ranges (in `form`, with raw `value`) designates for `unit`."""
    if unit.version >= 5:
        if form == C.DW_FORM_rnglistx:
            offset = _rnglist_offset(unit, value)
        else:
            offset = value
        return _read_rnglist(unit, offset)
    return _read_debug_ranges(unit, value + unit._ranges_base)


def _rnglist_offset(unit: UnitView, index: int) -> int:
    section = unit.reader.rnglists
    size = unit.header.offset_size
    base = unit.rnglists_base
    relative = section.uint(base + index * size, size, unit.enc.endian, f"range list #{index}")
    return base + relative


def _read_debug_ranges(unit: UnitView, offset: int) -> list[AddressRange]:
    section = unit.skeleton.reader.ranges if unit.skeleton is not None else unit.reader.ranges
    size = unit.header.addr_size
    max_address = (1 << (8 * size)) - 1
    tombstone = max_address - 1
    order = byteorder(unit.enc.endian)
    base: int | None = unit.base_address
    result: list[AddressRange] = []
    pos = offset
    while True:
        raw = section.bytes_at(pos, 2 * size, "range list entry")
        start = int.from_bytes(raw[:size], order)
        end = int.from_bytes(raw[size:], order)
        pos += 2 * size
        if start == 0 and end == 0:
            return result
        if start == max_address:
            base = end
            continue
        if start == tombstone:
            continue
        if base is not None:
            if base == tombstone:
                continue
            start = (start + base) & _MASK64
            end = (end + base) & _MASK64
        result.append((start, end))


def _read_rnglist(unit: UnitView, offset: int) -> list[AddressRange]:
    section = unit.reader.rnglists
    if _native is not None and 0 <= offset < 1 << 64:
        try:
            base_address = unit.base_address
        except FormatError:  # the reference raises it, or what it meets first
            base_address = -1
        if 0 <= base_address < 1 << 64:
            found: list[AddressRange] | None = _native.read_rnglist(
                section.buf,
                section.start,
                section.end,
                offset,
                unit.header.addr_size,
                unit.enc.endian == "<",
                base_address,
            )
            if found is not None:
                return found
    buf = section.buf
    end = section.end
    pos = section.check(offset, 1, "range list")
    size = unit.header.addr_size
    address = _ADDRESS_STRUCTS[unit.enc.endian, size].unpack_from
    tombstone = (1 << (8 * size)) - 1
    base: int | None = unit.base_address
    result: list[AddressRange] = []
    try:
        while pos < end:
            kind = buf[pos]
            pos += 1
            if kind == C.DW_RLE_offset_pair:  # the common case: two small LEB128s
                low = buf[pos]
                if low < 0x80:
                    pos += 1
                else:
                    low, pos = read_uleb(buf, pos)
                high = buf[pos]
                if high < 0x80:
                    pos += 1
                else:
                    high, pos = read_uleb(buf, pos)
                if base is not None:
                    low = (low + base) & _MASK64
                    high = (high + base) & _MASK64
            elif kind == C.DW_RLE_end_of_list:
                return result
            elif kind == C.DW_RLE_base_addressx:
                index, pos = read_uleb(buf, pos)
                base = unit.indexed_address(index)
                continue
            elif kind == C.DW_RLE_base_address:
                (base,) = address(buf, pos)
                pos += size
                continue
            elif kind == C.DW_RLE_start_end:
                (low,) = address(buf, pos)
                (high,) = address(buf, pos + size)
                pos += 2 * size
            elif kind == C.DW_RLE_start_length:
                (low,) = address(buf, pos)
                length, pos = read_uleb(buf, pos + size)
                high = (low + length) & _MASK64
            elif kind == C.DW_RLE_startx_length:
                index, pos = read_uleb(buf, pos)
                length, pos = read_uleb(buf, pos)
                low = unit.indexed_address(index)
                high = (low + length) & _MASK64
            elif kind == C.DW_RLE_startx_endx:
                index, pos = read_uleb(buf, pos)
                index2, pos = read_uleb(buf, pos)
                low = unit.indexed_address(index)
                high = unit.indexed_address(index2)
            else:
                at = pos - 1 - section.start
                raise section.error(f"unknown range list entry kind 0x{kind:x} at 0x{at:x}", at)
            if low != tombstone:
                result.append((low, high))
    except (IndexError, struct.error):
        pass
    raise section.error(f"range list at 0x{offset:x} has no end marker", offset)
