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
from bisect import bisect_right
from collections.abc import Iterable
from heapq import heappop, heappush

from stackmark.dwarf.sections import Section


def read_aranges(section: Section, endian: str) -> tuple[list[tuple[int, int, int]], set[int]]:
    """(low, high, unit offset) triples of every set, and the unit offsets that have a set."""
    triples: list[tuple[int, int, int]] = []
    covered: set[int] = set()
    u16 = struct.Struct(endian + "H")
    u32 = struct.Struct(endian + "I")
    u64 = struct.Struct(endian + "Q")
    buf = section.buf
    base = section.start
    offset = 0
    size = section.size
    while offset < size:
        (length,) = section.unpack(u32, offset, "address range set length")
        pos = offset + 4
        offset_size = 4
        if length == 0xFFFFFFFF:
            (length,) = section.unpack(u64, pos, "address range set length")
            pos += 8
            offset_size = 8
        set_end = pos + length
        if set_end > size:
            raise section.error(
                f"address range set at 0x{offset:x} runs past the end of the section", offset
            )
        (version,) = section.unpack(u16, pos, "address range set version")
        if version != 2:
            raise section.error(
                f"address range set at 0x{offset:x} has unsupported version {version}", offset
            )
        unit_offset = section.uint(pos + 2, offset_size, endian, "unit offset")
        pos += 2 + offset_size
        addr_size, seg_size = section.unpack(struct.Struct("BB"), pos, "address size")
        pos += 2
        if addr_size not in (2, 4, 8) or seg_size != 0:
            raise section.error(
                f"address range set at 0x{offset:x} has address size {addr_size} and "
                f"segment selector size {seg_size}; only flat 2/4/8-byte addresses are supported",
                offset,
            )
        tuple_size = 2 * addr_size
        first = offset + ((pos - offset + tuple_size - 1) // tuple_size) * tuple_size
        count = max(0, (set_end - first) // tuple_size)
        covered.add(unit_offset)
        if count:
            code = {2: "H", 4: "I", 8: "Q"}[addr_size]
            pairs = struct.iter_unpack(
                endian + code * 2, buf[base + first : base + first + count * tuple_size]
            )
            # A (0, 0) pair ends the set; zero-length ranges describe nothing.
            triples.extend((low, low + n, unit_offset) for low, n in pairs if n)
        offset = set_end
    return triples, covered


class AddressRanges:
    """Disjoint [low, high) ranges, each naming the unit (by offset) that covers it.

    Merging sorts every endpoint, which costs more than a first lookup should;
    the first few lookups instead look for the ranges containing the address,
    and when only one unit has any, that unit is the merged answer too.
    """

    _SCANS_BEFORE_MERGE = 4

    def __init__(self, triples: list[tuple[int, int, int]]):
        self._triples = triples
        self._scans = 0
        self._merged = False
        self.lows: list[int] = []
        self.highs: list[int] = []
        self.units: list[int] = []

    def _merge(self, triples: Iterable[tuple[int, int, int]]) -> None:
        endpoints: list[tuple[int, int, int]] = []  # (address, start?=1/end=0, unit)
        for low, high, unit in triples:
            if low < high:
                endpoints.append((low, 1, unit))
                endpoints.append((high, 0, unit))
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
        self.lows = lows
        self.highs = highs
        self.units = units

    def find(self, address: int) -> int | None:
        """The offset of the unit covering `address`, or None."""
        if not self._merged:
            if self._scans < self._SCANS_BEFORE_MERGE:
                self._scans += 1
                units = {t[2] for t in self._triples if t[0] <= address < t[1]}
                if len(units) <= 1:
                    return units.pop() if units else None
            self._merge(self._triples)
            self._merged = True
        i = bisect_right(self.lows, address) - 1
        if i >= 0 and address < self.highs[i]:
            return self.units[i]
        return None
