"""The DIE walk llvm-gsymutil does: every subprogram with code, wherever it sits.

llvm-gsymutil's DwarfTransformer visits every DIE of a unit, so a
subprogram with addresses counts wherever it is: at unit or namespace
scope, nested in another function (GNU C), or a member function of a class
local to a function (lambdas, `struct` helpers inside templates), even
when that function is an abstract inline instance without code. The
symbolizer-oriented walk in `stackmark.dwarf.functions` skips some of
those places for speed, so the converter uses this single pass instead.

One pass per unit, using stackmark.dwarf's compiled abbreviation plans:

- subprograms with code become `DieFunction`s, in DIE order (LLVM's order);
- under each, DW_TAG_inlined_subroutine entries with addresses form its
  inline tree, looking through lexical blocks only (as LLVM's
  parseInlineInfo does);
- subtrees that cannot hold code (types other than class/struct/union,
  variables, parameters, call sites, declarations) are jumped over with
  DW_AT_sibling when present;
- the parent of every DIE the walk reaches (not those inside jumped-over
  subtrees) is recorded, for `dwarf_names`.

The pass has a compiled twin (`gsym_walk` in stackmark/_native/_dwarf.c),
which takes the units and forms it handles; this module decides every
form's meaning, and the Python walk below is the reference. So has the
search for a node's names (`DieFunction.names`: `die_names`, which reads
only the name, linkage name, abstract origin and specification of the
DIEs it visits, with per-unit tables made here once).
"""

from __future__ import annotations

import struct

from stackmark._native import load
from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import (
    Abbrev,
    Plan,
    decode_attributes,
    skip_attributes,
)
from stackmark.dwarf.constants import LOCAL_REF_FORMS
from stackmark.dwarf.functions import compiled_walk_entry, compiled_walk_frame, find_recursively
from stackmark.dwarf.unit import Unit
from stackmark.dwarf.unit_parts import UnitView
from stackmark.errors import FormatError
from stackmark.formats.gsym import name_kernel
from stackmark.formats.gsym.dwarf_names import DieParents

DW_AT_declaration = 0x3C
_CLASS_TAGS = frozenset({0x02, 0x13, 0x17})  # class, structure, union
_CONTEXT_TAGS = frozenset({C.DW_TAG_namespace, 0x1E}) | _CLASS_TAGS  # 0x1E: module
_LINKAGE_ATTRS = (C.DW_AT_linkage_name, C.DW_AT_MIPS_linkage_name)

# What the walk does with a DIE, by abbreviation code.
_JUMP = 0  # skip it and its subtree
_SUB_CODE = 1  # subprogram that may have code
_SUB_ABSTRACT = 2  # subprogram without code attributes: look inside (local classes)
_INLINED = 3  # inlined call that may have code
_BLOCK = 4  # lexical block: transparent for inline trees
_CONTEXT = 5  # namespace, module, class, struct, union: look inside
_PC_ATTRS = (C.DW_AT_low_pc, C.DW_AT_ranges)

_native = load("_dwarf")  # compiled twin of `UnitWalk._walk`, or None (stackmark/_native)


class DieFunction:
    """A subprogram with code, or an inlined call inside one (with its own calls).

    The walk keeps, besides the DIE's place, only what converting it reads
    of every node (its ranges, call file, line and column, origin); its
    whole attribute dict, `values`, is decoded when first asked for (names
    that miss the origin cache, declarations), which few nodes need. The
    compiled walk makes these without calling __init__ (it sets the same
    slots: stackmark/_native/_dwarf.c `make_node`)."""

    __slots__ = (
        "_values",
        "abbrev",
        "call_column",
        "call_file_here",
        "call_line",
        "children",
        "offset",
        "origin",
        "ranges",
        "tag",
        "unit",
    )

    def __init__(
        self,
        unit: Unit,
        offset: int,
        abbrev: Abbrev,
        values: dict[int, object],
        ranges: list[tuple[int, int]],
    ):
        self.unit = unit
        self.offset = offset
        self.abbrev = abbrev
        self.values = values  # sets the call fields too
        self.ranges = ranges
        self.tag = abbrev.tag
        self.children: list[DieFunction] = []
        # For an inlined call named by its abstract origin alone, the origin's
        # offset as the walk read it (`names_of` shares names by it); None: not
        # read (other forms), the caller works it out.
        self.origin: int | None = None

    # The call fields: DW_AT_call_file as this DIE holds it (an int; None when
    # it holds none, or no int: `call_file` then looks through its origin),
    # DW_AT_call_line and DW_AT_call_column (0 when absent or not ints).
    _values: dict[int, object] | None
    call_file_here: int | None
    call_line: int
    call_column: int

    @property
    def values(self) -> dict[int, object]:
        """The DIE's raw attribute values (stackmark.dwarf.abbrev.decode_attributes),
        decoded again from the unit on first use when the walk did not keep them."""
        values: dict[int, object] | None = self._values
        if values is None:
            unit = self.unit
            buf = unit.info.buf
            _, pos = read_uleb(buf, unit.info.start + self.offset)
            values, _ = decode_attributes(buf, pos, self.abbrev.plan(unit.enc), unit.enc)
            self._values = values
        return values

    @values.setter
    def values(self, values: dict[int, object]) -> None:
        self._values = values
        file = values.get(C.DW_AT_call_file)
        self.call_file_here = file if isinstance(file, int) else None
        self.call_line = _int_or_zero(values.get(C.DW_AT_call_line))
        self.call_column = _int_or_zero(values.get(C.DW_AT_call_column))

    @property
    def is_inlined(self) -> bool:
        return self.tag == C.DW_TAG_inlined_subroutine

    def _find(
        self, attrs: tuple[int, ...]
    ) -> tuple[UnitView, Abbrev, dict[int, object], int] | None:
        return find_recursively(self.unit, self.abbrev, self.values, attrs)

    def _string(self, attrs: tuple[int, ...]) -> str | None:
        found = self._find(attrs)
        return found[0].string_attr(found[1], found[2], found[3]) if found else None

    @property
    def name(self) -> str | None:
        return self._string((C.DW_AT_name,))

    def names(self) -> tuple[str | None, str | None]:
        """(linkage name, short name), each found as `find_recursively` finds it,
        in one walk over the DIE and the DIEs it refers to (compiled twin:
        `die_names`, for references within the unit)."""
        found = name_kernel.die_names(self.unit, self.offset)
        if found is not None:
            return found
        return self._names()

    def _names(self) -> tuple[str | None, str | None]:
        """`names`, the reference."""
        linkage: str | None = None
        short: str | None = None
        need_linkage = need_short = True
        work = [(self.unit, self.abbrev, self.values)]
        seen = {-1}
        while work and (need_linkage or need_short):
            unit, abbrev, values = work.pop()
            if need_linkage:
                for attr in _LINKAGE_ATTRS:
                    if attr in values:
                        linkage = unit.string_attr(abbrev, values, attr)
                        need_linkage = False
                        break
            if need_short and C.DW_AT_name in values:
                short = unit.string_attr(abbrev, values, C.DW_AT_name)
                need_short = False
            for ref_attr in (C.DW_AT_abstract_origin, C.DW_AT_specification):
                if ref_attr not in values:
                    continue
                target = unit.ref_attr(abbrev, values, ref_attr)
                if target is None or target in seen:
                    continue
                seen.add(target)
                target_unit = unit.reader.unit_containing(target)
                if target_unit is None:
                    continue
                target_abbrev, target_values, _ = target_unit.die(target)
                if target_abbrev is not None:
                    work.append((target_unit, target_abbrev, target_values))
        return linkage, short

    @property
    def linkage_name(self) -> str | None:
        return self._string(_LINKAGE_ATTRS)

    def _int(self, attrs: tuple[int, ...]) -> int | None:
        found = self._find(attrs)
        if found is None:
            return None
        value = found[2].get(found[3])
        inner = getattr(value, "value", value)
        return inner if isinstance(inner, int) else None

    @property
    def call_file(self) -> int | None:
        """DW_AT_call_file (found recursively, as LLVM does); None when absent."""
        value = self.call_file_here
        if value is not None:
            return value
        return self._int((C.DW_AT_call_file,))

    @property
    def decl_line(self) -> int | None:
        return self._int((C.DW_AT_decl_line,))

    @property
    def decl_file_index(self) -> int | None:
        """DW_AT_decl_file's number (found recursively), None when absent."""
        return self._int((C.DW_AT_decl_file,))

    @property
    def decl_file(self) -> str | None:
        """The declaration's file, resolved in the line table of the unit holding it."""
        found = self._find((C.DW_AT_decl_file,))
        if found is None:
            return None
        if any(a == found[3] and f == C.DW_FORM_implicit_const for a, f, _ in found[1].specs):
            # llvm 19 (DWARFFormValue::getAsFile) resolves no file for an implicit
            # constant: such a value is made without its unit, and so without a table.
            return None
        value = found[2].get(found[3])
        inner = getattr(value, "value", value)
        if not isinstance(inner, int):
            return None
        return found[0].file_name(inner)


def _int_or_zero(value: object) -> int:
    """A call line or column as LLVM reads it: the int (or a form value's), else 0."""
    inner = getattr(value, "value", value)
    return inner if isinstance(inner, int) else 0


class UnitWalk:
    """The subprograms with code of one unit, in DIE order, and recorded parents."""

    def __init__(self, unit: Unit, parents: DieParents):
        self.unit = unit
        self.functions: list[DieFunction] = []
        self.parents = parents
        self._walk()

    def _kinds(self) -> tuple[list[int], list[Plan | None], list[Abbrev | None]]:
        abbrevs = self.unit.abbrevs
        size = max(abbrevs, default=0) + 1
        if size > 2 * len(abbrevs) + 4096:  # a damaged table: see dwarf/functions.py
            raise self.unit.info.error(
                f"abbreviation code {size - 1} in a table of {len(abbrevs)} "
                "abbreviations (codes this sparse are not supported)",
                self.unit.offset,
            )
        kinds = [_JUMP] * size
        plans: list[Plan | None] = [None] * size
        table: list[Abbrev | None] = [None] * size
        for code, abbrev in abbrevs.items():
            plan = abbrev.plan(self.unit.enc)
            plans[code] = plan
            table[code] = abbrev
            tag = abbrev.tag
            has_pc = any(a in plan.forms for a in _PC_ATTRS)
            if tag == C.DW_TAG_subprogram:
                if has_pc:
                    kinds[code] = _SUB_CODE
                elif DW_AT_declaration not in plan.forms:
                    kinds[code] = _SUB_ABSTRACT
            elif tag == C.DW_TAG_inlined_subroutine:
                kinds[code] = _INLINED if has_pc else _JUMP
            elif tag == C.DW_TAG_lexical_block:
                kinds[code] = _BLOCK
            elif tag in _CONTEXT_TAGS:
                kinds[code] = _CONTEXT
        return kinds, plans, table

    def _walk(self) -> None:
        unit = self.unit
        info = unit.info
        buf = info.buf
        base = info.start
        enc = unit.enc
        end = base + unit.header.end
        unit_start = base + unit.offset
        top_abbrev, _, after_top = unit.die(unit.header.die_offset)
        if top_abbrev is None or not top_abbrev.has_children:
            return
        try:
            kinds, plans, abbrevs = self._kinds()
        except ValueError as exc:  # an abbreviation using a form no DWARF version has
            raise FormatError(
                f"malformed abbreviations of the unit at 0x{unit.offset:x} ({exc})",
                offset=unit.offset,
                source=info.source,
            ) from None
        origins = [_origin_mode(*entry) for entry in zip(abbrevs, plans, kinds, strict=True)]
        if _native is not None and self._walk_compiled(kinds, plans, abbrevs, origins, after_top):
            return
        ncodes = len(kinds)
        parents = self.parents.known
        functions = self.functions
        # Open DIEs: (offset, inline context: where inlined calls attach, or None).
        stack: list[tuple[int, DieFunction | None]] = [(unit.header.die_offset, None)]
        pos = base + after_top
        try:
            while pos < end and stack:
                die_pos = pos
                code = buf[pos]
                pos += 1
                if code >= 0x80:
                    code, pos = read_uleb(buf, pos - 1)
                if code == 0:
                    stack.pop()
                    continue
                if code >= ncodes or plans[code] is None:
                    raise info.error(
                        f"DIE at 0x{die_pos - base:x} uses unknown abbreviation {code}",
                        die_pos - base,
                    )
                plan = plans[code]
                abbrev = abbrevs[code]
                assert plan is not None and abbrev is not None
                kind = kinds[code]
                offset = die_pos - base
                parent_offset, context = stack[-1]
                # Every DIE the walk reaches gets its parent recorded, skipped
                # ones too: member declarations inside classes are what
                # qualified names climb through (dwarf_names), and finding
                # their parents later would mean decoding whole levels again.
                parents[offset] = parent_offset
                if kind == _JUMP:
                    if abbrev.has_children:
                        pos = self._jump(buf, pos, plan, unit_start, base, die_pos, plans)
                    elif plan.fixed_size >= 0:
                        pos += plan.fixed_size
                    else:
                        pos = skip_attributes(buf, pos, plan.skip, enc)
                    continue
                if kind in (_SUB_CODE, _INLINED):
                    values, pos = decode_attributes(buf, pos, plan, enc)
                    if kind == _INLINED and context is None:
                        if abbrev.has_children:
                            pos = self._skip_children(buf, pos, plans)
                        continue
                    ranges = unit.die_ranges(abbrev, values)
                    node: DieFunction | None = None
                    if ranges:
                        node = DieFunction(unit, offset, abbrev, values, ranges)
                        origin = origins[code]
                        if origin:
                            value = values.get(C.DW_AT_abstract_origin)
                            if type(value) is int:
                                node.origin = unit.offset + value if origin == 1 else value
                        if kind == _SUB_CODE:
                            functions.append(node)
                        else:
                            assert context is not None
                            context.children.append(node)
                    elif kind == _INLINED:
                        if abbrev.has_children:
                            pos = self._skip_children(buf, pos, plans)
                        continue
                    if abbrev.has_children:
                        stack.append((offset, node))
                    continue
                if plan.fixed_size >= 0:
                    pos += plan.fixed_size
                else:
                    pos = skip_attributes(buf, pos, plan.skip, enc)
                if abbrev.has_children:
                    stack.append((offset, context if kind == _BLOCK else None))
        except (IndexError, struct.error, ValueError) as exc:
            raise FormatError(
                f"malformed DIE data in unit at 0x{unit.offset:x} ({exc})",
                offset=pos - base,
                source=info.source,
            ) from None

    def _walk_compiled(
        self,
        kinds: list[int],
        plans: list[Plan | None],
        abbrevs: list[Abbrev | None],
        origins: list[int],
        after_top: int,
    ) -> bool:
        """`_walk` by the compiled kernel; False (nothing done) when the reference must run:
        split units, forms the kernel does not read (see dwarf.functions' compiled
        walk, whose tables and range reading it shares), damaged data."""
        assert _native is not None
        unit = self.unit
        frame = compiled_walk_frame(unit)
        if frame is None:
            return False
        base_address, ranges = frame
        entries = [
            _compiled_entry(abbrevs[code], plans[code], kind, unit)
            for code, kind in enumerate(kinds)
        ]
        origin_specs = [
            _origin_spec(abbrev, mode) for abbrev, mode in zip(abbrevs, origins, strict=True)
        ]
        if -2 in origin_specs:
            return False
        info = unit.info
        found = _native.gsym_walk(
            _native.make_walk_tables(entries),
            info.buf,
            info.start + after_top,
            info.start + unit.header.end,
            info.start + unit.offset,
            info.start,
            unit.enc.endian == "<",
            ranges.buf,
            ranges.start,
            ranges.end,
            unit.version,
            unit.header.addr_size,
            base_address,
            unit.header.die_offset,
            DieFunction,
            unit,
            abbrevs,
            origins,
            origin_specs,
            unit.offset,
        )
        if found is None:
            return False
        self.functions, offsets, parents = found
        self.parents.add_walked(offsets, parents)
        return True

    def _jump(
        self,
        buf: bytes | bytearray | memoryview | object,
        pos: int,
        plan: Plan,
        unit_start: int,
        base: int,
        die_pos: int,
        plans: list[Plan | None],
    ) -> int:
        """Skip a DIE's attributes and subtree (with DW_AT_sibling when it has one)."""
        enc = self.unit.enc
        sibling = plan.sibling
        if sibling is not None:
            before, fmt, form = sibling
            at = skip_attributes(buf, pos, before, enc)  # type: ignore[arg-type]
            if fmt is not None:
                value = fmt.unpack_from(buf, at)[0]  # type: ignore[arg-type]
            else:
                value, _ = read_uleb(buf, at)  # type: ignore[arg-type]
            target = base + int(value) if form == C.DW_FORM_ref_addr else unit_start + int(value)
            if target > die_pos:
                return target
        pos = skip_attributes(buf, pos, plan.skip, enc)  # type: ignore[arg-type]
        return self._skip_children(buf, pos, plans)

    def _skip_children(
        self, buf: bytes | bytearray | memoryview | object, pos: int, plans: list[Plan | None]
    ) -> int:
        enc = self.unit.enc
        abbrevs = self.unit.abbrevs
        depth = 1
        while True:
            code = buf[pos]  # type: ignore[index]
            pos += 1
            if code >= 0x80:
                code, pos = read_uleb(buf, pos - 1)  # type: ignore[arg-type]
            if code == 0:
                depth -= 1
                if depth == 0:
                    return pos
                continue
            plan = plans[code] if code < len(plans) else None
            if plan is None:
                raise ValueError(f"unknown abbreviation {code}")
            pos = skip_attributes(buf, pos, plan.skip, enc)  # type: ignore[arg-type]
            if abbrevs[code].has_children:
                depth += 1


def _compiled_entry(abbrev: Abbrev | None, plan: Plan | None, kind: int, unit: Unit) -> object:
    """The walk-table entry of one abbreviation code for the compiled walk; None
    when the kernel must hand a DIE of this code back to the reference."""
    if abbrev is None or plan is None:
        return None
    key = (plan, abbrev.tag, abbrev.has_children)
    if key not in _ENTRIES:
        _ENTRIES[key] = _new_compiled_entry(abbrev, plan, kind, unit)
    return _ENTRIES[key]


def _new_compiled_entry(abbrev: Abbrev, plan: Plan, kind: int, unit: Unit) -> object:
    entry = compiled_walk_entry(abbrev, plan, unit.enc)
    if entry is None:
        return None
    _, children, is_subprogram, fixed, skip, sibling, specs = entry
    if kind in (_SUB_CODE, _INLINED) and specs is None:  # forms only the reference reads
        return None
    return (kind, children, is_subprogram, fixed, skip, sibling, specs)


# One entry per (plan, tag, children), which is all an entry depends on (units
# repeat their declarations).
_ENTRIES: dict[tuple[Plan, int, bool], object] = {}


def _origin_spec(abbrev: Abbrev | None, mode: int) -> int:
    """Where the compiled walk reads DW_AT_abstract_origin for `DieFunction.origin`:
    its index among the code's specs; -1 when it is not read (mode 0), -2 when
    the attribute is given twice (the reference decides)."""
    if mode == 0 or abbrev is None:
        return -1
    found = [i for i, (attr, _, _) in enumerate(abbrev.specs) if attr == C.DW_AT_abstract_origin]
    return found[0] if len(found) == 1 else -2


_NAME_ATTRS = frozenset({C.DW_AT_name, C.DW_AT_linkage_name, C.DW_AT_MIPS_linkage_name})


def _origin_mode(abbrev: Abbrev | None, plan: Plan | None, kind: int) -> int:
    """How the walks set `DieFunction.origin` for a code: 0 not at all, 1 a
    reference within the unit, 2 DW_FORM_ref_addr (as `Unit.ref_attr` resolves them),
    for inlined calls with an abstract origin and no names of their own."""
    if kind != _INLINED or abbrev is None or plan is None:
        return 0
    forms = plan.forms
    if C.DW_AT_abstract_origin not in forms or any(a in forms for a in _NAME_ATTRS):
        return 0
    form = forms[C.DW_AT_abstract_origin]
    if form in LOCAL_REF_FORMS:
        return 1
    return 2 if form == C.DW_FORM_ref_addr else 0
