"""The process layout a log describes: modules and their mapped segments.

`MarkupContext` replays `reset`/`module`/`mmap` elements in one pass with
llvm-symbolizer's rules (a duplicate module ID keeps the first definition,
an mmap needs a declared module, overlapping mmaps are refused) and
answers, for any runtime address: which module, which segment, which
module-relative address. All arithmetic is on unsigned 64-bit values, as in
llvm (a zero-size mmap covers nothing; `start + size` wraps).

`ContextTimeline` keeps snapshots per line so that a caller holding a whole
document (the language server) can ask for the context at any line and
redo the replay from a changed line cheaply.
"""

from __future__ import annotations

import bisect
from typing import assert_never

from stackmark.markup.diagnostics import Diagnostic, error_at_field
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    MmapElement,
    ModuleElement,
    PcElement,
)
from stackmark.markup.fields import U64_MASK
from stackmark.model import Module, Segment
from stackmark.plain import FrozenRecord, Record


class Mapping(FrozenRecord):
    """One mmap: a segment of a module at a runtime address range."""

    __slots__ = _fields = ("segment", "module")
    segment: Segment
    module: Module

    def __init__(self, segment: Segment, module: Module) -> None:
        object.__setattr__(self, "segment", segment)
        object.__setattr__(self, "module", module)

    @property
    def start(self) -> int:
        return self.segment.start

    @property
    def last(self) -> int:
        """The last address covered (start + size - 1, wrapping as llvm does)."""
        return (self.segment.start + self.segment.size - 1) & U64_MASK

    def contains(self, address: int) -> bool:
        seg = self.segment
        return seg.start <= address < ((seg.start + seg.size) & U64_MASK)

    def to_module_relative(self, address: int) -> int:
        return (address - self.segment.start + self.segment.module_relative) & U64_MASK


class Placement(Record):
    """Where a runtime address lies: its mapping and module-relative address."""

    __slots__ = _fields = ("address", "mapping", "module_relative")
    address: int  # the runtime address looked up (after any -1 adjustment)
    mapping: Mapping
    module_relative: int

    def __init__(self, address: int, mapping: Mapping, module_relative: int) -> None:
        self.address = address
        self.mapping = mapping
        self.module_relative = module_relative

    @property
    def module(self) -> Module:
        return self.mapping.module

    @property
    def segment(self) -> Segment:
        return self.mapping.segment


def lookup_address(element: PcElement | BtElement | DataElement) -> int:
    """The address to look up for an element: llvm's -1 adjustment table.

    `pc` is taken as precise unless it says `:ra`; `bt` is taken as a
    return address unless it says `:pc`; `data` is never adjusted. The
    adjustment comes before the mmap lookup.
    """
    match element:  # the most frequent first: a log is mostly backtraces
        case BtElement():
            is_return = element.pc_type != "pc"
        case PcElement():
            is_return = element.pc_type == "ra"
        case DataElement():
            return element.address
        case _:
            assert_never(element)
    return (element.address - 1) & U64_MASK if is_return else element.address


class MarkupContext:
    """Modules and mappings declared since the last reset."""

    def __init__(self) -> None:
        self.modules: dict[int, Module] = {}
        self._starts: list[int] = []
        self._mappings: list[Mapping] = []
        self.generation = 0  # bumped by every reset (lets callers forget per-process state)

    @property
    def empty(self) -> bool:
        return not self.modules and not self._mappings

    @property
    def mappings(self) -> list[Mapping]:
        """All mappings, by start address."""
        return list(self._mappings)

    def reset(self) -> None:
        self.modules = {}
        self._starts = []
        self._mappings = []
        self.generation += 1

    def copy(self) -> MarkupContext:
        """An independent copy (modules copied too, since mmaps extend them)."""
        other = MarkupContext()
        other.generation = self.generation
        clones = {
            key: Module(m.id, m.name, m.build_id, list(m.segments), m.path)
            for key, m in self.modules.items()
        }
        by_identity = {id(m): clones[key] for key, m in self.modules.items()}
        other.modules = clones
        other._starts = list(self._starts)
        other._mappings = [
            Mapping(mp.segment, by_identity.get(id(mp.module), mp.module)) for mp in self._mappings
        ]
        return other

    # --- replaying contextual elements ------------------------------------

    def declare_module(self, element: ModuleElement) -> Module | Diagnostic:
        """Add a module; a duplicate ID is refused (the first definition stays)."""
        if element.module_id in self.modules:
            return error_at_field("duplicate module ID", element.element.fields[0], "duplicate-id")
        return self.add_module(element.module_id, element.name, element.build_id)

    def add_module(self, module_id: int, name: str, build_id: str) -> Module:
        """Add a module whose ID is not taken (`declare_module` checks that)."""
        module = Module(module_id, name, build_id)
        self.modules[module_id] = module
        return module

    def check_mmap(self, element: MmapElement) -> Diagnostic | None:
        """The checks llvm makes before an mmap is used, in its order."""
        if element.module_id not in self.modules:
            return error_at_field("unknown module ID", element.module_id_field, "unknown-module")
        if element.module_relative_error is not None:
            return element.module_relative_error
        overlap = self.overlapping(element.start, element.size)
        if overlap is not None:
            return error_at_field(
                f"overlapping mmap: #0x{overlap.module.id:x} "
                f"[0x{overlap.start:x}-0x{overlap.last:x}]",
                element.element.fields[0],
                "overlapping-mmap",
            )
        return None

    def map_segment(self, element: MmapElement) -> Mapping | Diagnostic:
        """Add a mapping (after `check_mmap`'s checks)."""
        problem = self.check_mmap(element)
        if problem is not None:
            return problem
        return self.add_mapping(
            element.start, element.size, element.mode, element.module_id, element.module_relative
        )

    def add_mapping(
        self, start: int, size: int, mode: str, module_id: int, module_relative: int
    ) -> Mapping:
        """Add a mapping that passed `check_mmap`'s checks."""
        index = bisect.bisect_left(self._starts, start)
        if index < len(self._starts) and self._starts[index] == start:
            # Only a zero-size mapping can share a start without overlapping;
            # llvm keeps the first one and hands it back.
            return self._mappings[index]
        module = self.modules[module_id]
        segment = Segment(start, size, mode, module_relative)
        mapping = Mapping(segment, module)
        self._starts.insert(index, start)
        self._mappings.insert(index, mapping)
        module.segments.append(segment)
        return mapping

    def overlapping(self, start: int, size: int) -> Mapping | None:
        """An existing mapping that overlaps [start, start+size), as llvm finds it."""
        end = (start + size) & U64_MASK
        index = bisect.bisect_right(self._starts, start)
        if index < len(self._mappings):
            after = self._mappings[index]
            if start <= after.start < end:
                return after
        if index > 0:
            before = self._mappings[index - 1]
            if before.contains(start):
                return before
        return None

    # --- questions -----------------------------------------------------------

    def find(self, address: int) -> Mapping | None:
        """The mapping that covers runtime `address`, if any: the one that starts
        last at or before it (mappings never overlap, and a zero-size one never
        lies inside another)."""
        index = bisect.bisect_right(self._starts, address) - 1
        if index < 0:
            return None
        mapping = self._mappings[index]
        segment = mapping.segment
        if address < (segment.start + segment.size) & U64_MASK:
            return mapping
        return None

    def place(self, address: int) -> Placement | None:
        """Module, segment and module-relative address of runtime `address`."""
        mapping = self.find(address)
        if mapping is None:
            return None
        return Placement(address, mapping, mapping.to_module_relative(address))


class ContextTimeline:
    """Snapshots of the context, line by line, for documents held whole.

    `record(line, context)` is called after a line that changed the
    context; `at(line)` returns the context in force at the start of
    `line` (do not mutate it); `truncate(line)` forgets snapshots from
    `line` on, so a caller can replay from there after an edit.
    """

    def __init__(self) -> None:
        self._lines: list[int] = []
        self._snapshots: list[MarkupContext] = []

    def record(self, line: int, context: MarkupContext) -> None:
        self.truncate(line)
        self._lines.append(line)
        self._snapshots.append(context.copy())

    def at(self, line: int) -> MarkupContext:
        """The context before `line` (empty if nothing was recorded earlier)."""
        index = bisect.bisect_left(self._lines, line)
        return self._snapshots[index - 1] if index else MarkupContext()

    def resume(self, line: int) -> MarkupContext:
        """A mutable context to continue replaying from `line` (after `truncate`)."""
        return self.at(line).copy()

    def truncate(self, line: int) -> None:
        index = bisect.bisect_left(self._lines, line)
        del self._lines[index:]
        del self._snapshots[index:]

    @property
    def changed_lines(self) -> list[int]:
        return list(self._lines)
