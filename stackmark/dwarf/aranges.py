"""Address -> unit lookup: .debug_aranges (DWARF 5 section 6.1.2), merged like llvm.

llvm's DWARFDebugAranges reads every .debug_aranges set, adds the unit-DIE
ranges of units that have no set, and merges everything into disjoint
ranges; where units overlap, the one at the lowest offset wins. This
module does the same, so the unit chosen for an address is llvm's, while
only unit *headers* (and unit DIEs of units missing from .debug_aranges)
are read.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from heapq import heappop, heappush

from stackmark.dwarf.sections import Section

# address_size (u8) and segment_selector_size (u8), side by side in a set's header.
_ADDRESS_AND_SEGMENT_SIZE = struct.Struct("BB")

ArangeSet = tuple[int, Sequence[int], Sequence[int]]
"""(unit offset, range starts, range lengths): one unit's address ranges (arrays as read:
a first lookup looks at few of them, so they are not turned into lists)."""


def read_aranges(section: Section, endian: str) -> list[ArangeSet]:
    """Every set of .debug_aranges, in section order (zero-length ranges included)."""
    sets: list[ArangeSet] = []
    buf = section.buf
    base = section.start
    native = endian == ("<" if sys.byteorder == "little" else ">")
    size = section.size
    cursor = section.cursor(0, endian)  # its positions are the buffer's: pos - base
    while cursor.pos - base < size:
        offset = cursor.pos - base
        length = cursor.u32("address range set length")
        offset_size = 4
        if length == 0xFFFFFFFF:
            length = cursor.u64("address range set length")
            offset_size = 8
        set_end = cursor.pos - base + length
        if set_end > size:
            raise section.error(
                f"address range set at 0x{offset:x} runs past the end of the section", offset
            )
        version = cursor.u16("address range set version")
        if version != 2:
            raise section.error(
                f"address range set at 0x{offset:x} has unsupported version {version}", offset
            )
        unit_offset = cursor.uint(offset_size, "unit offset")
        addr_size, seg_size = cursor.unpack(_ADDRESS_AND_SEGMENT_SIZE, "address size")
        pos = cursor.pos - base
        if addr_size not in (2, 4, 8) or seg_size != 0:
            raise section.error(
                f"address range set at 0x{offset:x} has address size {addr_size} and "
                f"segment selector size {seg_size}; only flat 2/4/8-byte addresses are supported",
                offset,
            )
        tuple_size = 2 * addr_size
        first = offset + ((pos - offset + tuple_size - 1) // tuple_size) * tuple_size
        count = max(0, (set_end - first) // tuple_size)
        blob = buf[base + first : base + first + count * tuple_size]
        code = {2: "H", 4: "I", 8: "Q"}[addr_size]
        words = array(code)
        words.frombytes(blob)
        if not native:
            words.byteswap()
        sets.append((unit_offset, words[0::2], words[1::2]))
        cursor.pos = base + set_end
    return sets


class AddressRanges:
    """Disjoint [low, high) ranges, each naming the unit (by offset) that covers it.

    Merging sorts every endpoint, which costs more than a first lookup should;
    the first few lookups instead look for the ranges containing the address
    (one pass over the ranges as read: cheaper than any per-set summary, which
    would itself visit every range), and when only one unit has any, that unit
    is the merged answer too.
    """

    _SCANS_BEFORE_MERGE = 4

    def __init__(self, sets: list[ArangeSet]):
        self._sets = sets
        self._scans = 0
        self._merged = False
        self.lows: list[int] = []
        self.highs: list[int] = []
        self.units: list[int] = []

    def _scan(self, address: int) -> set[int]:
        found: set[int] = set()
        for unit, lows, lengths in self._sets:
            for low, n in zip(lows, lengths, strict=True):
                if low <= address < low + n:
                    found.add(unit)
                    break
        return found

    def _merge(self) -> None:
        endpoints: list[tuple[int, int, int]] = []  # (address, start?=1/end=0, unit)
        for unit, starts, lengths in self._sets:
            for low, n in zip(starts, lengths, strict=True):
                if n > 0:  # llvm drops empty and inverted ranges
                    endpoints.append((low, 1, unit))
                    endpoints.append((low + n, 0, unit))
        endpoints.sort(key=lambda e: e[0])
        lows: list[int] = []
        highs: list[int] = []
        units: list[int] = []
        active: dict[int, int] = {}
        heap: list[int] = []
        previous = -1
        for address, is_start, unit in endpoints:
            while heap and active.get(heap[0], 0) == 0:
                heappop(heap)
            if previous < address and heap and previous >= 0:
                best = heap[0]
                if highs and highs[-1] == previous and active.get(units[-1], 0) > 0:
                    highs[-1] = address
                else:
                    lows.append(previous)
                    highs.append(address)
                    units.append(best)
            if is_start:
                active[unit] = active.get(unit, 0) + 1
                heappush(heap, unit)
            else:
                active[unit] -= 1
            previous = address
        self.highs = highs
        self.units = units
        self.lows = lows  # last: lookups in other threads test it

    def find(self, address: int) -> int | None:
        """The offset of the unit covering `address`, or None."""
        if not self._merged:
            if self._scans < self._SCANS_BEFORE_MERGE:
                self._scans += 1
                units = self._scan(address)
                if len(units) <= 1:
                    return units.pop() if units else None
            self._merge()
            self._merged = True
        i = bisect_right(self.lows, address) - 1
        if i >= 0 and address < self.highs[i]:
            return self.units[i]
        return None
