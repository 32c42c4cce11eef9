"""Address ranges as GSYM keeps them: sorted, merged, half-open.

LLVM stores inline-function ranges in an `AddressRanges` set: inserting a
range drops it when empty and merges it with every range it overlaps *or
touches*. That merging happens both when a GSYM is written and when one is
decoded, so it decides bytes (how many ranges a node has) and dump text.
A range is a `(start, end)` tuple; a set of them is a sorted list.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

Range = tuple[int, int]


def insert_range(ranges: list[Range], start: int, end: int) -> None:
    """Add [start, end) to the sorted, merged list `ranges` in place."""
    if start >= end:
        return
    # First range whose start is greater than `start` (ties ordered by end too).
    i = bisect_right(ranges, (start, end))
    j = i
    while j < len(ranges) and ranges[j][0] <= end:
        j += 1
    if i != j:
        end = max(end, ranges[j - 1][1])
        del ranges[i:j]
    if i > 0 and start <= ranges[i - 1][1]:
        prev_start, prev_end = ranges[i - 1]
        ranges[i - 1] = (prev_start, max(prev_end, end))
        return
    ranges.insert(i, (start, end))


def merged(pairs: Iterable[Range]) -> list[Range]:
    """A merged range list built by inserting `pairs` one by one."""
    out: list[Range] = []
    for start, end in pairs:
        insert_range(out, start, end)
    return out


def contains_address(ranges: list[Range], address: int) -> bool:
    """True when some range holds `address`."""
    for start, end in ranges:
        if start <= address < end:
            return True
        if start > address:
            return False
    return False


def contains_range(ranges: list[Range], start: int, end: int) -> bool:
    """True when a single range of `ranges` covers all of [start, end)."""
    if start >= end:
        return False
    i = bisect_right(ranges, (start, 1 << 64))
    if i == 0:
        return False
    return end <= ranges[i - 1][1]
