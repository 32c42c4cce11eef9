"""One process of a log: the modules and mappings from a reset to the next.

An `Epoch` records the contextual elements of its stretch of log as the
index reads them: which module IDs were declared (and where), which
segments were mapped (and where). The records are plain tuples, because a
crash log declares a context per crash and the index reads them all when
the log opens; the core `MarkupContext` (the one every answer comes from)
is replayed from them on demand (`Epoch.context`).

The acceptance rules below are the core's (`MarkupContext.declare_module`,
`check_mmap`, `map_segment`, `find`), restated over the plain records so
that opening a log does not build a core object per mmap. When a rule
refuses an element, the caller asks the core itself for the error, so the
wording and position always come from the core; tests/lsp/test_index.py
checks the records against the core on generated logs.
"""

from __future__ import annotations

import bisect
from typing import Protocol

from stackmark.markup.context import Mapping, MarkupContext
from stackmark.markup.elements import MmapElement, ModuleElement
from stackmark.markup.syntax import Element, Field
from stackmark.model import Module

MASK64 = 0xFFFFFFFFFFFFFFFF


class _ChunkStart(Protocol):
    @property
    def start(self) -> int: ...


class LinePlace(Protocol):
    """A line as the index keeps it (document.py's `LineInfo`): its chunk and its line
    within the chunk, both kept up to date when chunks are cut or merged, and its
    flags. Only this much is needed here, so that epochs sit below the document and
    the index."""

    @property
    def chunk(self) -> _ChunkStart: ...

    @property
    def local(self) -> int: ...

    @property
    def line(self) -> int: ...

    @property
    def flags(self) -> int: ...  # the line's entry flags (index.py)


Position = tuple[LinePlace, int]  # (line, column of the element's `{{{`)


def position_key(position: Position) -> tuple[int, int]:
    """(document line, column) of a position."""
    info, column = position
    return info.chunk.start + info.local, column


# What replayed elements stand on: the core context reads an element's fields
# only to word an error, and replayed elements were all accepted once already.
_REPLAYED = Element("", tuple(Field("", 0, 0) for _ in range(6)), "", 0, 0, 0, 0)


class Epoch:
    """The contextual records of one process (see the module docstring).

    `starts[i]`/`spans[i]`: the mappings by start address, each
    (start, size, module ID, mode, module-relative address, position).
    `modules`: module ID -> (position, name, build ID).
    """

    __slots__ = (
        "_bounds",
        "_context",
        "_mappings",
        "column",
        "modules",
        "spans",
        "start",
        "starts",
    )

    def __init__(self, start: LinePlace | None, column: int) -> None:
        self.start = start  # the line of the reset (None: the top of the log)
        self.column = column
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, int, str, int, Position]] = []
        self.modules: dict[int, tuple[Position, str, str]] = {}
        self._context: MarkupContext | None = None
        self._mappings: dict[int, Position] = {}
        self._bounds: list[int] | None = []  # kept up as mappings are added in order

    @property
    def line(self) -> int:
        return self.start.chunk.start + self.start.local if self.start is not None else 0

    def __repr__(self) -> str:
        return f"<Epoch at {self.line}:{self.column}>"

    # -- recording (the core's rules) -------------------------------------------------

    def declare(self, module_id: int, name: str, build_id: str, where: Position) -> bool:
        """A module element; False when the core refuses it (a duplicate ID)."""
        if module_id in self.modules:
            return False
        self.modules[module_id] = (where, name, build_id)
        self._context = None
        return True

    def map(
        self, start: int, size: int, module_id: int, mode: str, relative: int, where: Position
    ) -> bool:
        """An mmap element; False when the core refuses it (unknown module, overlap)."""
        if module_id not in self.modules:
            return False
        starts, spans = self.starts, self.spans
        end = (start + size) & MASK64
        if not starts or start > starts[-1]:  # after every mapping so far (the usual order)
            if starts:
                before = spans[-1]
                if before[0] <= start < (before[0] + before[1]) & MASK64:
                    return False
            starts.append(start)
            spans.append((start, size, module_id, mode, relative, where))
            self._context = None
            bounds = self._bounds
            if bounds is not None and end > start:
                if bounds and bounds[-1] == start:
                    bounds[-1] = end
                elif not bounds or bounds[-1] < start:
                    bounds += (start, end)
                else:
                    self._bounds = None
            return True
        count = len(starts)
        index = bisect.bisect_right(starts, start)
        if index < count and start <= starts[index] < end:
            return False
        if index > 0:
            before = spans[index - 1]
            if before[0] <= start < (before[0] + before[1]) & MASK64:
                return False
        index = bisect.bisect_left(starts, start)
        if index < count and starts[index] == start:
            return True  # a zero-size mapping shares the start: the core keeps the first
        starts.insert(index, start)
        spans.insert(index, (start, size, module_id, mode, relative, where))
        self._context = None
        self._bounds = None
        return True

    def covering(self, address: int) -> int:
        """Index in `spans` of the mapping covering `address`, or -1."""
        starts = self.starts
        index = bisect.bisect_left(starts, address)
        if index < len(starts):
            span = self.spans[index]
            if span[0] <= address < (span[0] + span[1]) & MASK64:
                return index
        if index == 0:
            return -1
        span = self.spans[index - 1]
        return index - 1 if span[0] <= address < (span[0] + span[1]) & MASK64 else -1

    def bounds(self) -> list[int]:
        """The mapped addresses as [low0, high0, low1, high1, ...], increasing (adjacent
        mappings merged): an address is mapped when `bisect_right(bounds, address)` is odd,
        exactly when `covering` finds a mapping for it."""
        if self._bounds is None:
            bounds: list[int] = []
            for span in self.spans:
                start, size = span[0], span[1]
                end = (start + size) & MASK64
                if end <= start:
                    continue  # covers nothing (see `covering`)
                if bounds and bounds[-1] >= start:  # adjacent (mappings never overlap)
                    bounds[-1] = max(bounds[-1], end)
                else:
                    bounds += (start, end)
            self._bounds = bounds
        return self._bounds

    # -- the core context -------------------------------------------------------------

    @property
    def context(self) -> MarkupContext:
        """The core context after every contextual element recorded so far."""
        if self._context is None:
            self._replay()
        assert self._context is not None
        return self._context

    def _replay(self) -> None:
        context = MarkupContext()
        mappings: dict[int, Position] = {}
        events: list[tuple[tuple[int, int], int, int]] = [
            (position_key(where), 0, module_id) for module_id, (where, _, _) in self.modules.items()
        ]
        events.extend((position_key(span[5]), 1, i) for i, span in enumerate(self.spans))
        events.sort()
        for _, kind, key in events:
            if kind == 0:
                _, name, build_id = self.modules[key]
                context.declare_module(ModuleElement(_REPLAYED, [], key, name, build_id))
            else:
                start, size, module_id, mode, relative, where = self.spans[key]
                element = MmapElement(_REPLAYED, [], start, size, module_id, mode, relative)
                mapping = context.map_segment(element)
                assert isinstance(mapping, Mapping), "recorded mappings replay cleanly"
                mappings[id(mapping)] = where
        self._context = context
        self._mappings = mappings

    # -- questions ----------------------------------------------------------------------

    def mapping_at(self, address: int, before: tuple[int, int] | None = None) -> Mapping | None:
        """The mapping covering `address`, counting only mmaps before position `before`."""
        index = self.covering(address)
        if index < 0:
            return None
        if before is not None and position_key(self.spans[index][5]) >= before:
            return None
        return self.context.find(address)

    def declared_at(self, mapping: Mapping) -> Position | None:
        """Where the mmap of `mapping` (from `context`) is."""
        self.context  # noqa: B018 - replays if needed, which fills _mappings
        return self._mappings.get(id(mapping))

    def module(self, module_id: int, before: tuple[int, int] | None = None) -> Module | None:
        """The module with `module_id`, if declared before position `before`."""
        record = self.modules.get(module_id)
        if record is None or (before is not None and position_key(record[0]) >= before):
            return None
        return self.context.modules.get(module_id)

    def module_position(self, module_id: int) -> Position | None:
        record = self.modules.get(module_id)
        return record[0] if record is not None else None
