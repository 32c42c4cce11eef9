"""Inline trees (FunctionInfo InfoType 2).

One tree, written depth first. Each node:

    ULEB128 count, then count x (ULEB128 start - base, ULEB128 size)
    u8      has_children
    u32     name (string-table offset)
    ULEB128 call_file (file-table index of the call site, in the parent)
    ULEB128 call_line
    if has_children: the children, then one ULEB128 0 (a node with no
                     ranges ends the sibling list)

The root's ranges are relative to the function start; every child's are
relative to the start of its parent's *first* range. Ranges are merged on
write and on read (see ranges.py), so a node whose ranges all decode empty
ends its sibling list, as in LLVM.

Lookup follows, at each level, the first child whose ranges contain the
address; the resulting chain turns one source location into several (see
`apply_inline_chain`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Literal

from stackmark.binary import uleb_rest
from stackmark.formats.gsym.codec import RecordCursor, RecordError, Writer
from stackmark.formats.gsym.ranges import Range, contains_address, contains_range, insert_range
from stackmark.plain import FrozenRecord, Record


class InlineInfo(Record):
    """One node: the root is the concrete function, children are inlined calls.

    The GSYM records are plain records, not dataclasses: the cache's warm
    lookups import the reader, and with it these modules (see stackmark.plain)."""

    __slots__ = _fields = __match_args__ = ("name", "ranges", "call_file", "call_line", "children")
    name: int
    ranges: list[Range]
    call_file: int
    call_line: int
    children: list[InlineInfo]

    def __init__(
        self,
        name: int,
        ranges: list[Range],
        call_file: int = 0,
        call_line: int = 0,
        children: list[InlineInfo] | None = None,
    ) -> None:
        self.name = name
        self.ranges = ranges
        self.call_file = call_file
        self.call_line = call_line
        self.children = [] if children is None else children

    def total_children(self) -> int:
        """All descendants: LLVM orders FunctionInfos by this (more is better)."""
        return sum(1 + child.total_children() for child in self.children)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InlineInfo):
            return NotImplemented
        return (
            self.name == other.name
            and self.call_file == other.call_file
            and self.call_line == other.call_line
            and self.ranges == other.ranges
            and self.children == other.children
        )

    __hash__ = None  # type: ignore[assignment]


class InlineFrame(FrozenRecord):
    """A node on the lookup path: what lookups need from it."""

    __slots__ = _fields = __match_args__ = (
        "name",
        "call_file",
        "call_line",
        "first_start",
        "index",
    )
    name: int
    call_file: int
    call_line: int
    first_start: int
    index: int  # depth-first position in the tree (the root is 0)

    def __init__(
        self, name: int, call_file: int, call_line: int, first_start: int, index: int = 0
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "call_file", call_file)
        setattr_(self, "call_line", call_line)
        setattr_(self, "first_start", first_start)
        setattr_(self, "index", index)


MAX_INLINE_DEPTH = 500
"""Deeper inline trees are rejected as corrupt. The walks below recurse once
per level, and Python stops at 1000 frames (callers such as GDB or the
language server already use some): past that, a RecursionError would escape
instead of a RecordError."""


def _too_deep(cur: RecordCursor) -> RecordError:
    return RecordError(
        f"inline tree nests more than {MAX_INLINE_DEPTH} levels deep",
        offset=cur.pos,
        source=cur.source,
    )


def _decode_ranges(cur: RecordCursor, base: int) -> list[Range]:
    count = cur.uleb("missing InlineInfo address ranges data")
    ranges: list[Range] = []
    for _ in range(count):
        start = base + cur.uleb("missing InlineInfo address range start")
        size = cur.uleb("missing InlineInfo address range size")
        insert_range(ranges, start, start + size)
    return ranges


def _decode_node(cur: RecordCursor, base: int, depth: int) -> InlineInfo | None:
    """A node, or None for the empty-ranges node that ends a sibling list."""
    if depth > MAX_INLINE_DEPTH:
        raise _too_deep(cur)
    if cur.at_end():
        raise cur.fail("missing InlineInfo address ranges data")
    ranges = _decode_ranges(cur, base)
    if not ranges:
        return None
    has_children = cur.u8("missing InlineInfo uint8_t indicating children") != 0
    name = cur.u32("missing InlineInfo uint32_t for name")
    call_file = cur.uleb("missing ULEB128 for InlineInfo call file") & 0xFFFFFFFF
    call_line = cur.uleb("missing ULEB128 for InlineInfo call line") & 0xFFFFFFFF
    node = InlineInfo(name, ranges, call_file, call_line)
    if has_children:
        child_base = ranges[0][0]
        while True:
            child = _decode_node(cur, child_base, depth + 1)
            if child is None:
                break
            node.children.append(child)
    return node


def decode_inline_info(cur: RecordCursor, base_addr: int) -> InlineInfo | None:
    """The tree of the payload at `cur` (None if its root has no ranges)."""
    return _decode_node(cur, base_addr, 0)


def _skip_node(cur: RecordCursor, depth: int = 0) -> int:
    """Skip one node and its subtree; the number of nodes (0: the list terminator)."""
    if depth > MAX_INLINE_DEPTH:
        raise _too_deep(cur)
    count = cur.uleb("missing InlineInfo address ranges data")
    if count == 0:
        return 0
    for _ in range(count):
        cur.uleb("missing InlineInfo address range start")
        cur.uleb("missing InlineInfo address range size")
    has_children = cur.u8("missing InlineInfo uint8_t indicating children") != 0
    cur.u32("missing InlineInfo uint32_t for name")
    cur.uleb("missing ULEB128 for InlineInfo call file")
    cur.uleb("missing ULEB128 for InlineInfo call line")
    nodes = 1
    if has_children:
        while True:
            skipped = _skip_node(cur, depth + 1)
            if not skipped:
                break
            nodes += skipped
    return nodes


def _lookup_node(
    cur: RecordCursor, base: int, addr: int, path: list[InlineFrame], depth: int, counter: list[int]
) -> bool:
    """Walk one node like LLVM's lookup; True ends the sibling scan."""
    if depth > MAX_INLINE_DEPTH:
        raise _too_deep(cur)
    ranges = _decode_ranges(cur, base)
    if not ranges:
        return True
    index = counter[0]
    counter[0] += 1
    if not contains_address(ranges, addr):
        # Skip the rest of this node and its children.
        has_children = cur.u8("missing InlineInfo uint8_t indicating children") != 0
        cur.u32("missing InlineInfo uint32_t for name")
        cur.uleb("missing ULEB128 for InlineInfo call file")
        cur.uleb("missing ULEB128 for InlineInfo call line")
        if has_children:
            while True:
                skipped = _skip_node(cur, depth + 1)
                if not skipped:
                    break
                counter[0] += skipped
        return False
    has_children = cur.u8("missing InlineInfo uint8_t indicating children") != 0
    name = cur.u32("missing InlineInfo uint32_t for name")
    call_file = cur.uleb("missing ULEB128 for InlineInfo call file") & 0xFFFFFFFF
    call_line = cur.uleb("missing ULEB128 for InlineInfo call line") & 0xFFFFFFFF
    path.append(InlineFrame(name, call_file, call_line, ranges[0][0], index))
    if has_children:
        child_base = ranges[0][0]
        while not _lookup_node(cur, child_base, addr, path, depth + 1, counter):
            pass
    return True


def inline_path(cur: RecordCursor, base_addr: int, addr: int) -> list[InlineFrame]:
    """The nodes containing `addr`, outermost (the root) first, with their
    depth-first indexes.

    `_fast_inline_path` walks a copy of the payload with no bounds
    bookkeeping (a lookup skips the subtrees of every sibling before the one
    that holds the address: thousands of values in a large function); a
    payload it cannot walk, truncated or nested too deep, is walked again by
    `_lookup_node`, which raises the error naming the offset.
    """
    start = cur.pos
    with contextlib.suppress(StopIteration):
        return _fast_inline_path(
            bytes(cur.data[start : cur.end]), base_addr, addr, "little" if cur.little else "big"
        )
    path: list[InlineFrame] = []
    _lookup_node(cur, base_addr, addr, path, 0, [0])
    return path


def _fast_inline_path(
    payload: bytes, base: int, addr: int, order: Literal["little", "big"]
) -> list[InlineFrame]:
    """`inline_path` over `payload`, as `_lookup_node` and `_skip_node` walk it; raises
    StopIteration where they would raise (data ends, or the tree is too deep).

    `order` is the byte order of the u32 names.
    A node's ranges hold `addr` when one of them does (merging them, as the
    checked walk does, changes neither that nor the lowest start), and a node
    whose ranges are all empty ends its sibling list.
    """
    it = iter(payload)
    path: list[InlineFrame] = []
    index = depth = 0
    while True:  # one node at `depth`, its ranges relative to `base`
        if depth > MAX_INLINE_DEPTH:
            raise StopIteration
        byte = next(it)
        count = byte if byte < 0x80 else uleb_rest(it, byte)
        lowest = -1
        holds = False
        for _ in range(count):
            byte = next(it)
            start = base + (byte if byte < 0x80 else uleb_rest(it, byte))
            byte = next(it)
            size = byte if byte < 0x80 else uleb_rest(it, byte)
            if size:
                if lowest < 0 or start < lowest:
                    lowest = start
                if start <= addr < start + size:
                    holds = True
        if lowest < 0:
            return path  # the end of a sibling list (or a root without ranges)
        here = index
        index += 1
        has_children = next(it)
        name_bytes = (next(it), next(it), next(it), next(it))
        byte = next(it)
        call_file = (byte if byte < 0x80 else uleb_rest(it, byte)) & 0xFFFFFFFF
        byte = next(it)
        call_line = (byte if byte < 0x80 else uleb_rest(it, byte)) & 0xFFFFFFFF
        if holds:
            name = int.from_bytes(name_bytes, order)
            path.append(InlineFrame(name, call_file, call_line, lowest, here))
            if not has_children:
                return path
            depth += 1
            base = lowest
            continue
        if has_children:
            index += _skip_children(it, depth + 1)
        if depth == 0:
            return path  # the root does not hold it: no sibling list to scan


def _skip_children(it: Iterator[int], depth: int) -> int:
    """Skip the child list that starts at `depth` and every subtree in it; the number
    of nodes skipped (as `_skip_node` counts them)."""
    nodes = 0
    level = depth
    while level >= depth:
        if level > MAX_INLINE_DEPTH:
            raise StopIteration
        byte = next(it)
        count = byte if byte < 0x80 else uleb_rest(it, byte)
        if count == 0:
            level -= 1  # the end of a child list
            continue
        for _ in range(2 * count):
            if next(it) >= 0x80:
                uleb_rest(it, 0x80)
        has_children = next(it)
        next(it), next(it), next(it), next(it)
        if next(it) >= 0x80:
            uleb_rest(it, 0x80)
        if next(it) >= 0x80:
            uleb_rest(it, 0x80)
        nodes += 1
        if has_children:
            level += 1
    return nodes


def inline_path_in_tree(root: InlineInfo, addr: int) -> list[InlineFrame]:
    """The same walk over a decoded tree."""
    path: list[InlineFrame] = []
    node: InlineInfo | None = root
    while node is not None and contains_address(node.ranges, addr):
        path.append(InlineFrame(node.name, node.call_file, node.call_line, node.ranges[0][0]))
        node = next((c for c in node.children if contains_address(c.ranges, addr)), None)
    return path


def encode_inline_info(w: Writer, node: InlineInfo, base_addr: int) -> None:
    """Write `node` and its subtree; child ranges must lie inside the parent's.

    Values below 0x80 (one ULEB128 byte: nearly all of them) are appended
    directly, since a large binary has hundreds of thousands of nodes.
    """
    ranges = node.ranges
    if not ranges:
        raise ValueError("attempted to encode an InlineInfo without address ranges")
    buf = w.buf
    append = buf.append
    uleb = w.uleb
    append(len(ranges)) if len(ranges) < 0x80 else uleb(len(ranges))
    for start, end in ranges:
        if start < base_addr:
            raise ValueError(f"inline range 0x{start:x} starts before its base 0x{base_addr:x}")
        offset = start - base_addr
        append(offset) if offset < 0x80 else uleb(offset)
        size = end - start
        append(size) if 0 <= size < 0x80 else uleb(size)
    children = node.children
    append(1 if children else 0)
    w.u32(node.name)
    call_file, call_line = node.call_file, node.call_line
    append(call_file) if 0 <= call_file < 0x80 else uleb(call_file)
    append(call_line) if 0 <= call_line < 0x80 else uleb(call_line)
    if children:
        child_base = ranges[0][0]
        single = ranges[0] if len(ranges) == 1 else None
        for child in children:
            for start, end in child.ranges:
                if single is not None:
                    inside = single[0] <= start < end <= single[1]
                else:
                    inside = contains_range(ranges, start, end)
                if not inside:
                    raise ValueError("child range not contained in parent")
            encode_inline_info(w, child, child_base)
        append(0)
