"""`std::sort` as GNU libstdc++ performs it, so that ties break the same way.

llvm-gsymutil sorts its FunctionInfos with `llvm::sort`, which is
`std::sort`: an introsort (median-of-three quicksort, heapsort past a depth
limit, insertion sort for runs of 16 or fewer) that is *not* stable. When two
entries compare equivalent but differ (two symbol-table aliases at one
address, say), which one survives deduplication depends on where this exact
algorithm leaves them. The GSYM writer only calls this when such ties exist;
otherwise any correct sort gives the same order.

Written from the published algorithm (introsort loop, move-median-to-first,
unguarded partition, final insertion sort, binary heap); `less(a, b)` is the
strict comparison.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from typing import TypeVar

T = TypeVar("T")
_THRESHOLD = 16


def stl_sort(items: MutableSequence[T], less: Callable[[T, T], bool]) -> None:
    """Sort `items` in place exactly as libstdc++'s std::sort would."""
    n = len(items)
    if n < 2:
        return
    _introsort_loop(items, 0, n, 2 * (n.bit_length() - 1), less)
    _final_insertion_sort(items, 0, n, less)


def _introsort_loop(
    a: MutableSequence[T], first: int, last: int, depth: int, less: Callable[[T, T], bool]
) -> None:
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, first, last, less)
            return
        depth -= 1
        cut = _partition_pivot(a, first, last, less)
        _introsort_loop(a, cut, last, depth, less)
        last = cut


def _partition_pivot(
    a: MutableSequence[T], first: int, last: int, less: Callable[[T, T], bool]
) -> int:
    mid = first + (last - first) // 2
    _move_median_to_first(a, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(a, first + 1, last, first, less)


def _move_median_to_first(
    a: MutableSequence[T], result: int, x: int, y: int, z: int, less: Callable[[T, T], bool]
) -> None:
    if less(a[x], a[y]):
        if less(a[y], a[z]):
            pick = y
        elif less(a[x], a[z]):
            pick = z
        else:
            pick = x
    elif less(a[x], a[z]):
        pick = x
    elif less(a[y], a[z]):
        pick = z
    else:
        pick = y
    a[result], a[pick] = a[pick], a[result]


def _unguarded_partition(
    a: MutableSequence[T], first: int, last: int, pivot: int, less: Callable[[T, T], bool]
) -> int:
    p = a[pivot]
    while True:
        while less(a[first], p):
            first += 1
        last -= 1
        while less(p, a[last]):
            last -= 1
        if not first < last:
            return first
        a[first], a[last] = a[last], a[first]
        first += 1


def _final_insertion_sort(
    a: MutableSequence[T], first: int, last: int, less: Callable[[T, T], bool]
) -> None:
    if last - first > _THRESHOLD:
        _insertion_sort(a, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, i, less)
    else:
        _insertion_sort(a, first, last, less)


def _insertion_sort(
    a: MutableSequence[T], first: int, last: int, less: Callable[[T, T], bool]
) -> None:
    for i in range(first + 1, last):
        value = a[i]
        if less(value, a[first]):
            a[first + 1 : i + 1] = a[first:i]
            a[first] = value
        else:
            _unguarded_linear_insert(a, i, less)


def _unguarded_linear_insert(
    a: MutableSequence[T], last: int, less: Callable[[T, T], bool]
) -> None:
    value = a[last]
    nxt = last - 1
    while less(value, a[nxt]):
        a[last] = a[nxt]
        last = nxt
        nxt -= 1
    a[last] = value


# -- heap sort (taken only when quicksort degenerates) --------------------------------


def _heap_sort(a: MutableSequence[T], first: int, last: int, less: Callable[[T, T], bool]) -> None:
    _make_heap(a, first, last, less)
    while last - first > 1:
        last -= 1
        value = a[last]
        a[last] = a[first]
        _adjust_heap(a, first, 0, last - first, value, less)


def _make_heap(a: MutableSequence[T], first: int, last: int, less: Callable[[T, T], bool]) -> None:
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(a, first, parent, length, a[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _adjust_heap(
    a: MutableSequence[T],
    first: int,
    hole: int,
    length: int,
    value: T,
    less: Callable[[T, T], bool],
) -> None:
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[first + child], a[first + child - 1]):
            child -= 1
        a[first + hole] = a[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole] = a[first + child - 1]
        hole = child - 1
    # push_heap
    parent = (hole - 1) // 2
    while hole > top and less(a[first + parent], value):
        a[first + hole] = a[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole] = value
