"""Function names as llvm-gsymutil builds them from DWARF.

The name of a subprogram or inlined call is, in this order:

1. its linkage name (DW_AT_linkage_name or DW_AT_MIPS_linkage_name, also
   found through DW_AT_abstract_origin / DW_AT_specification), if not empty;
2. else its DW_AT_name (found the same way), unchanged for languages other
   than C, C++ (98/03/11/14) and Objective-C++, and for GCC's `_Z....isra.N`
   / `.part.N` clones;
3. else that name prefixed with the names of its enclosing declaration
   contexts (namespace, struct, union, class, subprogram; lexical blocks are
   looked through), found first through the specification, then through the
   abstract origin, then through the parent DIE. A context named `<...>`
   (GCC's lambda classes) is written `{...}`.

Finding a DIE's parent needs the tree shape, which DWARF only gives by
walking: `DieParents` walks one level at a time (jumping with
DW_AT_sibling where present) and caches each level, so only the levels
above the DIEs that need it are ever read.

A `NameBuilder` keeps what it learns by DIE offset (parents, parent
contexts, each context's prefix, names shared by abstract origin), one set
per file (`enter_reader`): the .dwo files of a split program each number
their DIEs from 0.

Compiled twins (stackmark/_native/_dwarf.c, through name_kernel):
`qualified_prefix` does `parent_context` and `_prefix` for one name, reading
and filling the same caches; where it hands back, the DIE reads below go
through `die_context_refs` and `die_names`, else `Unit.die`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from functools import partial
from types import ModuleType
from typing import Any

from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev
from stackmark.dwarf.functions import find_recursively
from stackmark.dwarf.unit_parts import UnitView
from stackmark.formats.gsym import name_kernel

DW_LANG_C = 0x0002
DW_LANG_C_plus_plus = 0x0004
DW_LANG_ObjC_plus_plus = 0x0011
DW_LANG_C_plus_plus_03 = 0x0019
DW_LANG_C_plus_plus_11 = 0x001A
DW_LANG_C_plus_plus_14 = 0x0021
QUALIFIED_LANGUAGES = frozenset(
    {
        DW_LANG_C,
        DW_LANG_C_plus_plus,
        DW_LANG_C_plus_plus_03,
        DW_LANG_C_plus_plus_11,
        DW_LANG_C_plus_plus_14,
        DW_LANG_ObjC_plus_plus,
    }
)
DW_TAG_class_type = 0x02
DW_TAG_structure_type = 0x13
DW_TAG_union_type = 0x17
_CONTEXT_TAGS = frozenset(
    {
        C.DW_TAG_namespace,
        DW_TAG_structure_type,
        DW_TAG_union_type,
        DW_TAG_class_type,
        C.DW_TAG_subprogram,
    }
)

Die = tuple[UnitView, int]  # (unit holding it, .debug_info offset)


class DieParents:
    """Parent DIEs: those a walk recorded (`known`), else found by descending
    from the unit DIE (levels cached)."""

    def __init__(self, known: dict[int, int] | None = None) -> None:
        self.known: dict[int, int] = {} if known is None else known
        # What the compiled walk recorded: DIE offsets in increasing order and
        # their parents, two arrays rather than two million dict entries.
        self._walked = array("Q")
        self._walked_parents = array("Q")
        self._children: dict[int, list[int]] = {}
        self._parent: dict[int, int | None] = {}

    def add_walked(self, offsets: bytes, parents: bytes) -> None:
        """Record a walk's DIEs and their parents, as arrays of native uint64 in DIE order."""
        new = array("Q", offsets)
        new_parents = array("Q", parents)
        if not new:
            return
        if self._walked and new[0] <= self._walked[-1]:  # not after what is stored
            self.known.update(zip(new, new_parents, strict=True))
            return
        self._walked.extend(new)
        self._walked_parents.extend(new_parents)

    def recorded(self) -> dict[int, int]:
        """Every parent a walk recorded, by DIE offset."""
        return {**self.known, **dict(zip(self._walked, self._walked_parents, strict=True))}

    def _children_of(self, unit: UnitView, offset: int) -> list[int]:
        kids = self._children.get(offset)
        if kids is not None:
            return kids
        kids = []
        abbrev, _, pos = unit.die(offset)
        if abbrev is not None and abbrev.has_children:
            end = unit.header.end
            while pos < end:
                child_abbrev, values, after = unit.die(pos)
                if child_abbrev is None:
                    break
                kids.append(pos)
                if not child_abbrev.has_children:
                    pos = after
                    continue
                sibling = (
                    unit.ref_attr(child_abbrev, values, C.DW_AT_sibling)
                    if C.DW_AT_sibling in values
                    else None
                )
                pos = sibling if sibling is not None and sibling > pos else _skip(unit, after)
        self._children[offset] = kids
        return kids

    def parent(self, unit: UnitView, offset: int) -> int | None:
        """Offset of the parent of the DIE at `offset` (None for the unit DIE or if lost)."""
        known = self.known.get(offset)
        if known is not None:
            return known
        walked = self._walked
        i = bisect_left(walked, offset)
        if i < len(walked) and walked[i] == offset:
            return self._walked_parents[i]
        if offset in self._parent:
            return self._parent[offset]
        result: int | None = None
        current = unit.header.die_offset
        while current != offset:
            kids = self._children_of(unit, current)
            i = bisect_right(kids, offset) - 1
            if i < 0:
                break
            if kids[i] == offset:
                result = current
                break
            current = kids[i]
        self._parent[offset] = result
        return result


def _skip(unit: UnitView, pos: int) -> int:
    """Position after the children starting at `pos` and their closing null entry."""
    depth = 1
    end = unit.header.end
    while pos < end:
        abbrev, _, pos = unit.die(pos)
        if abbrev is None:
            depth -= 1
            if depth == 0:
                return pos
        elif abbrev.has_children:
            depth += 1
    return pos


_READS_KEPT = 256


class _Caches:
    """What a NameBuilder keeps by .debug_info offset, for the DIEs of one file."""

    __slots__ = ("context", "origin_names", "parents", "prefixes", "reads", "tables")

    def __init__(self, parents: DieParents) -> None:
        self.parents = parents
        self.origin_names: dict[int, tuple[str | None, str | None, str | None]] = {}
        self.context: dict[int, Die | None] = {}
        self.prefixes: dict[int, str] = {}
        self.reads: dict[int, tuple[Abbrev | None, dict[int, object]]] = {}
        # By unit offset: the unit and its tables for `qualified_prefix` (None: none).
        self.tables: dict[int, tuple[UnitView, tuple[object, bytes] | None]] = {}


class NameBuilder:
    """Computes llvm-gsymutil's name for a DIE (see the module docstring)."""

    def __init__(self, known_parents: dict[int, int] | None = None, compiled: bool = True) -> None:
        # The compiled DIE reads (name_kernel's `context_refs`, `own_name`), or
        # None: Python reads them.
        self._kernel: ModuleType | None = None
        self._native: Any = None  # the compiled module (`qualified_prefix`)
        if compiled and name_kernel._native is not None:
            self._kernel = name_kernel
            self._native = name_kernel._native
        self._reader: object | None = None
        self._by_reader: dict[object, _Caches] = {}
        self._use(_Caches(DieParents(known_parents)))

    def _use(self, caches: _Caches) -> None:
        self._caches = caches
        self.parents = caches.parents
        # (GSYM name, linkage name, short name) by abstract-origin offset, for
        # inlined calls that have no names of their own (see from_dwarf).
        self.origin_names = caches.origin_names
        self._context_cache = caches.context
        self._prefixes = caches.prefixes
        self._reads = caches.reads
        self._tables = caches.tables

    def enter_reader(self, reader: object) -> None:
        """Keep what is learnt from here on for the DIEs of `reader` (a DwarfReader).

        Everything kept is keyed by .debug_info offset, which names one DIE only
        within one file: the .dwo files of a split program, and the units of a
        .dwp package, each number their DIEs from 0. What was kept before the
        first reader was entered is that reader's."""
        if reader is self._reader:
            return
        if self._reader is None:
            self._by_reader[reader] = self._caches
        else:
            caches = self._by_reader.get(reader)
            if caches is None:
                caches = self._by_reader[reader] = _Caches(DieParents())
            self._use(caches)
        self._reader = reader

    def _read(self, die: Die) -> tuple[Abbrev | None, dict[int, object]]:
        """The DIE's abbreviation and values (a qualified name reads the same DIEs
        several times: the last few hundred read are kept)."""
        found = self._reads.get(die[1])
        if found is None:
            abbrev, values, _ = die[0].die(die[1])
            if len(self._reads) >= _READS_KEPT:
                self._reads.clear()
            found = self._reads[die[1]] = (abbrev, values)
        return found

    def _ref(self, die: Die, abbrev: Abbrev, values: dict[int, object], attr: int) -> Die | None:
        unit, _ = die
        if attr not in values:
            return None
        target = unit.ref_attr(abbrev, values, attr)
        if target is None:
            return None
        target_unit = unit.reader.unit_containing(target)
        if target_unit is None:
            return None
        return target_unit, target

    def parent_context(self, die: Die) -> Die | None:
        """LLVM's GetParentDeclContextDIE."""
        key = die[1]
        if key in self._context_cache:
            return self._context_cache[key]
        self._context_cache[key] = None  # guards reference cycles
        result = self._parent_context(die)
        self._context_cache[key] = result
        return result

    def _parent_context(self, die: Die) -> Die | None:
        unit, offset = die
        kernel = self._kernel
        read = kernel.context_refs(unit, offset) if kernel is not None else None
        if read is None:
            return self._parent_context_read(die)
        abbrev, specification, origin = read
        if abbrev is None:
            return None
        for target in (specification, origin):
            if target is not None:
                target_unit = unit.reader.unit_containing(target)
                if target_unit is not None:
                    found = self.parent_context((target_unit, target))
                    if found is not None:
                        return found
        if abbrev.tag == C.DW_TAG_inlined_subroutine:
            return None
        return self._enclosing_context(unit, offset)

    def _parent_context_read(self, die: Die) -> Die | None:
        """`_parent_context` reading the DIE in Python (the reference)."""
        abbrev, values = self._read(die)
        if abbrev is None:
            return None
        for attr in (C.DW_AT_specification, C.DW_AT_abstract_origin):
            target = self._ref(die, abbrev, values, attr)
            if target is not None:
                found = self.parent_context(target)
                if found is not None:
                    return found
        if abbrev.tag == C.DW_TAG_inlined_subroutine:
            return None
        return self._enclosing_context(*die)

    def _enclosing_context(self, unit: UnitView, offset: int) -> Die | None:
        """The rest of GetParentDeclContextDIE once no reference led to a context:
        the DIE's recorded parent when it is a context, looked through when it is a
        lexical block (its abbreviation read by the kernel when there is one)."""
        parent = self.parents.parent(unit, offset)
        if parent is None:
            return None
        kernel = self._kernel
        read = kernel.context_refs(unit, parent) if kernel is not None else None
        parent_abbrev = self._read((unit, parent))[0] if read is None else read[0]
        if parent_abbrev is None:
            return None
        if parent_abbrev.tag in _CONTEXT_TAGS:
            return unit, parent
        if parent_abbrev.tag == C.DW_TAG_lexical_block:
            return self.parent_context((unit, parent))
        return None

    def short_name(self, die: Die) -> str | None:
        kernel = self._kernel
        if kernel is not None:
            read = kernel.context_refs(die[0], die[1])
            if read is not None and read[0] is not None:
                own: tuple[str | None] | None = kernel.own_name(die[0], read[0], die[1])
                if own is not None:
                    return own[0]
        abbrev, values = self._read(die)
        if abbrev is None:
            return None
        found = find_recursively(die[0], abbrev, values, (C.DW_AT_name,))
        if found is None:
            return None
        return found[0].string_attr(found[1], found[2], found[3])

    def name(
        self,
        die: Die,
        language: int,
        linkage_name: str | None,
        short_name: str | None,
    ) -> str | None:
        """The GSYM name of `die`, given its (recursively found) linkage and short names."""
        self.enter_reader(die[0].reader)
        if linkage_name:
            return linkage_name
        if not short_name:
            return None
        if language not in QUALIFIED_LANGUAGES:
            return short_name
        if short_name.startswith("_Z") and (".isra." in short_name or ".part." in short_name):
            return short_name
        prefix = self._compiled_prefix(die) if self._kernel is not None else None
        if prefix is not None:
            return prefix + short_name
        context = self.parent_context(die)
        if context is None:
            return short_name
        return self._prefix(context) + short_name

    def _compiled_prefix(self, die: Die) -> str | None:
        """`_prefix` of the DIE's parent context ("" when none), from the compiled
        `qualified_prefix`, which fills the caches as the reference does; None
        when the reference must work it out (the caches are then untouched)."""
        unit, offset = die
        tables = self._tables.get(unit.offset)
        if tables is None or tables[0] is not unit:
            assert self._kernel is not None
            made = self._kernel.context_tables(unit)
            # the kernel's cached contexts name this unit object: it must be the one
            # the reader gives for the unit's offsets, as the reference's are
            usable = made is not None and unit.reader.unit_containing(unit.offset) is unit
            tables = self._tables[unit.offset] = (unit, made if usable else None)
        if tables[1] is None:
            return None
        parents = self.parents
        found: str | None = self._native.qualified_prefix(
            tables[1][0],
            unit,
            offset,
            tables[1][1],
            self._context_cache,
            self._prefixes,
            parents.known,
            parents._walked,
            parents._walked_parents,
            parents._parent,
            partial(parents.parent, unit),
        )
        return found

    def _prefix(self, context: Die) -> str:
        """What the contexts from `context` outwards put before a name: each one's
        name and "::", outermost first. A context's prefix is its parent context's
        and its own part, so each is worked out once (unless the contexts loop:
        then the walk stops at the first one seen again, and nothing is kept)."""
        keys: list[int] = []
        parts: list[str] = []
        prefix = ""
        looped = False
        current: Die | None = context
        while current is not None:
            key = current[1]
            known = self._prefixes.get(key)
            if known is not None:
                prefix = known
                break
            if key in keys:
                looped = True
                break
            keys.append(key)
            parts.append(self._part(current))
            current = self.parent_context(current)
        for key, part in zip(reversed(keys), reversed(parts), strict=True):
            prefix += part
            if not looped:
                self._prefixes[key] = prefix
        return prefix

    def _part(self, context: Die) -> str:
        """A context's own part of a qualified name: its name and "::" (GCC's
        lambda classes, named `<...>`, written `{...}`), "" when it has none."""
        name = self.short_name(context)
        if not name:
            return ""
        if name.startswith("<") and name.endswith(">"):
            return "{" + name[1:-1] + "}::"
        return name + "::"
