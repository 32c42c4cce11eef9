"""The function tree of a unit: subprograms with code and the calls inlined into them.

One pass over a unit's DIEs (DWARF 5 sections 3.3, 3.3.8) collects every
DW_TAG_subprogram that has addresses and, nested under it, every
DW_TAG_inlined_subroutine (lexical blocks are looked through). Subtrees
that cannot hold code (types, variables, parameters, call sites,
declarations and abstract instances) are jumped over with DW_AT_sibling
when the DIE has one, or skipped DIE by DIE with precomputed skip plans.

Names are resolved on demand: a `Function` keeps its raw attributes and
follows DW_AT_abstract_origin / DW_AT_specification the way llvm's
`DWARFDie::findRecursively` does when asked for `name`, `linkage_name`,
`decl_file` or `decl_line`.

`FunctionIndex.chain_at` answers "which subroutines contain this address"
with llvm's own algorithm (DWARFUnit::updateAddressDieMap): ranges are
inserted parents first, a child's range splits its parent's, and the
innermost subroutine found is then walked up to its subprogram.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev, Encoding, Plan, decode_attributes, skip_attributes
from stackmark.dwarf.sections import Buffer, read_uleb

if TYPE_CHECKING:
    from stackmark.dwarf.unit import AddressRange, Unit

# What the walk does with a DIE, by abbreviation.
_SKIP = 0  # jump over the DIE and its children
_DESCEND = 1  # look through it at its children (namespaces, lexical blocks)
_SUBROUTINE = 2  # a subprogram or inlined call that may have addresses
_LOCAL_TYPE = 3  # class/struct/union: looked through only inside a function, where
# local classes (lambdas) hold their member functions' code (llvm sees those too)
_LOCAL_TYPE_TAGS = frozenset({0x02, 0x13, 0x17})  # class, structure, union types

_DESCEND_TAGS = frozenset(
    {C.DW_TAG_namespace, C.DW_TAG_lexical_block, 0x1E}  # 0x1E: DW_TAG_module
)
_SUBROUTINE_TAGS = frozenset({C.DW_TAG_subprogram, C.DW_TAG_inlined_subroutine})
_PC_ATTRS = (C.DW_AT_low_pc, C.DW_AT_ranges)
_LINKAGE_ATTRS = (C.DW_AT_linkage_name, C.DW_AT_MIPS_linkage_name)
_FOLLOW_ATTRS = (C.DW_AT_abstract_origin, C.DW_AT_specification)


class Function:
    """A subprogram with code, or one inlined call inside one.

    `ranges` are [low, high) address ranges (possibly several: hot/cold
    parts). `children` are the calls inlined directly into this one, in DIE
    order; `parent` the subroutine this call is inlined into (None for a
    subprogram). `call_file` is an index into the unit's line table file
    list (resolve it with `Unit.file_name`).
    """

    __slots__ = (
        "_abbrev",
        "_values",
        "call_column",
        "call_file",
        "call_line",
        "children",
        "offset",
        "parent",
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
        ranges: list[AddressRange],
        parent: Function | None,
    ):
        self.unit = unit
        self.offset = offset
        self.tag = abbrev.tag
        self._abbrev = abbrev
        self._values = values
        self.ranges = ranges
        self.parent = parent
        self.children: list[Function] = []
        self.call_file = _int(values.get(C.DW_AT_call_file))
        self.call_line = _int(values.get(C.DW_AT_call_line))
        self.call_column = _int(values.get(C.DW_AT_call_column))

    def __repr__(self) -> str:
        kind = "inlined" if self.is_inlined else "subprogram"
        spans = ", ".join(f"0x{lo:x}-0x{hi:x}" for lo, hi in self.ranges)
        return f"<Function {kind} {self.name!r} at DIE 0x{self.offset:x} [{spans}]>"

    @property
    def is_inlined(self) -> bool:
        return self.tag == C.DW_TAG_inlined_subroutine

    @property
    def low_pc(self) -> int | None:
        """DW_AT_low_pc of this DIE (llvm's StartAddress), None when it has DW_AT_ranges only."""
        return self.unit.address_attr(self._abbrev, self._values, C.DW_AT_low_pc)

    @property
    def name(self) -> str | None:
        """DW_AT_name, found through abstract origins and specifications."""
        found = find_recursively(self.unit, self._abbrev, self._values, (C.DW_AT_name,))
        return found[0].string_attr(found[1], found[2], found[3]) if found else None

    @property
    def linkage_name(self) -> str | None:
        """DW_AT_linkage_name (or DW_AT_MIPS_linkage_name), found the same way."""
        found = find_recursively(self.unit, self._abbrev, self._values, _LINKAGE_ATTRS)
        return found[0].string_attr(found[1], found[2], found[3]) if found else None

    @property
    def decl_line(self) -> int:
        found = find_recursively(self.unit, self._abbrev, self._values, (C.DW_AT_decl_line,))
        return _int(found[2].get(found[3])) if found else 0

    @property
    def decl_file(self) -> str | None:
        """The declaration's file, resolved in the line table of the unit that holds it."""
        found = find_recursively(self.unit, self._abbrev, self._values, (C.DW_AT_decl_file,))
        if not found:
            return None
        unit, _, values, attr = found
        return unit.file_name(_int(values.get(attr)))

    @property
    def call_file_name(self) -> str | None:
        """`call_file` resolved in this unit's line table (inlined calls only)."""
        return self.unit.file_name(self.call_file) if self.is_inlined else None

    def contains(self, address: int) -> bool:
        return any(low <= address < high for low, high in self.ranges)

    def walk(self) -> list[Function]:
        """This function and every call inlined into it, depth first."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out


def _int(value: object) -> int:
    if isinstance(value, int):
        return value
    inner = getattr(value, "value", None)
    return inner if isinstance(inner, int) else 0


def find_recursively(
    unit: Unit, abbrev: Abbrev, values: dict[int, object], attrs: tuple[int, ...]
) -> tuple[Unit, Abbrev, dict[int, object], int] | None:
    """The first of `attrs` on this DIE or, failing that, on the DIEs it refers to through
    DW_AT_abstract_origin / DW_AT_specification (llvm's worklist order), with the unit
    holding it. None when no DIE along the way has one."""
    work: list[tuple[Unit, Abbrev, dict[int, object]]] = [(unit, abbrev, values)]
    seen = {-1}
    while work:
        u, ab, vals = work.pop()
        for attr in attrs:
            if attr in vals:
                return u, ab, vals, attr
        for ref_attr in _FOLLOW_ATTRS:
            if ref_attr not in vals:
                continue
            target = u.ref_attr(ab, vals, ref_attr)
            if target is None or target in seen:
                continue
            seen.add(target)
            target_unit = u.reader.unit_containing(target)
            if target_unit is None:
                continue
            target_abbrev, target_values, _ = target_unit.die(target)
            if target_abbrev is not None:
                work.append((target_unit, target_abbrev, target_values))
    return None


class FunctionIndex:
    """The functions of one unit and llvm's address -> innermost subroutine map."""

    def __init__(self, functions: list[Function], unit: Unit):
        self.functions = functions
        self.unit = unit
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._nodes: list[Function] = []
        for function in functions:
            self._insert_tree(function)

    def _insert_tree(self, function: Function) -> None:
        for low, high in function.ranges:
            if low != high:
                self._insert(low, high, function)
        for child in function.children:
            self._insert_tree(child)

    def _set(self, key: int, end: int, node: Function) -> None:
        i = bisect_left(self._starts, key)
        if i < len(self._starts) and self._starts[i] == key:
            self._ends[i] = end
            self._nodes[i] = node
        else:
            self._starts.insert(i, key)
            self._ends.insert(i, end)
            self._nodes.insert(i, node)

    def _insert(self, low: int, high: int, node: Function) -> None:
        # llvm's DWARFUnit::updateAddressDieMap: a range inside an existing one
        # splits it into up to three pieces.
        i = bisect_right(self._starts, low)
        if i > 0 and low < self._ends[i - 1]:
            b = i - 1
            b_start, b_end, b_node = self._starts[b], self._ends[b], self._nodes[b]
            if high < b_end:
                self._set(high, b_end, b_node)
            if low > b_start:
                self._ends[b] = low
        self._set(low, high, node)

    def innermost_at(self, address: int) -> Function | None:
        i = bisect_right(self._starts, address) - 1
        if i < 0 or address >= self._ends[i]:
            return None
        return self._nodes[i]

    def chain_at(self, address: int) -> list[Function]:
        """Inlined calls innermost first, then the subprogram (llvm's getInlinedChainForAddress)."""
        node = self.innermost_at(address)
        chain: list[Function] = []
        while node is not None:
            chain.append(node)
            if node.tag == C.DW_TAG_subprogram:
                break
            node = node.parent
        return chain


def build_function_index(unit: Unit, line_unit: Unit) -> FunctionIndex:
    """Walk `unit`'s DIEs once and index its functions (see the module docstring).

    `line_unit` is the unit whose line table the file indexes refer to (the
    skeleton, for a split unit); it is kept on the index for callers.
    """
    del line_unit  # file indexes are resolved through `Unit.file_name`
    return FunctionIndex(_collect(unit), unit)


class _CodeTables:
    """Per-abbreviation-code facts the walk needs, in flat lists for speed."""

    def __init__(self, unit: Unit):
        abbrevs = unit.abbrevs
        size = max(abbrevs, default=0) + 1
        self.kind = [_SKIP] * size
        self.children = [False] * size
        self.abbrev: list[Abbrev | None] = [None] * size
        self.plan: list[Plan | None] = [None] * size
        for code, abbrev in abbrevs.items():
            plan = abbrev.plan(unit.enc)
            self.abbrev[code] = abbrev
            self.plan[code] = plan
            self.children[code] = abbrev.has_children
            if abbrev.tag in _SUBROUTINE_TAGS and any(a in plan.forms for a in _PC_ATTRS):
                self.kind[code] = _SUBROUTINE
            elif abbrev.tag in _DESCEND_TAGS:
                self.kind[code] = _DESCEND
            elif abbrev.tag in _LOCAL_TYPE_TAGS and abbrev.has_children:
                self.kind[code] = _LOCAL_TYPE


def _collect(unit: Unit) -> list[Function]:
    """The walk itself: top-level functions in DIE order, inline trees attached."""
    info = unit.info
    buf = info.buf
    base = info.start
    enc = unit.enc
    unit_start = base + unit.offset
    end = base + unit.header.end
    top_abbrev, _, after_top = unit.die(unit.header.die_offset)
    if top_abbrev is None or not top_abbrev.has_children:
        return []
    tables = _CodeTables(unit)
    kinds = tables.kind
    has_children = tables.children
    plans = tables.plan
    abbrevs = tables.abbrev
    ncodes = len(kinds)

    functions: list[Function] = []
    stack: list[Function | None] = []
    current: Function | None = None
    pos = base + after_top
    try:
        while pos < end:
            die_pos = pos
            code = buf[pos]
            pos += 1
            if code >= 0x80:
                code, pos = read_uleb(buf, pos - 1)
            if code == 0:
                if not stack:
                    break
                current = stack.pop()
                continue
            if code >= ncodes or plans[code] is None:
                raise info.error(
                    f"DIE at 0x{die_pos - base:x} uses unknown abbreviation {code}",
                    die_pos - base,
                )
            kind = kinds[code]
            plan = plans[code]
            assert plan is not None
            if kind == _LOCAL_TYPE:
                kind = _SKIP if current is None else _DESCEND
            if kind == _SKIP:
                if has_children[code]:
                    sibling = plan.sibling
                    if sibling is not None and not sibling[0] and sibling[2] != C.DW_FORM_ref_addr:
                        # DW_AT_sibling first (or after zero-size forms): read it directly.
                        fmt = sibling[1]
                        target = (
                            unit_start + fmt.unpack_from(buf, pos)[0]
                            if fmt is not None
                            else unit_start + read_uleb(buf, pos)[0]
                        )
                    elif sibling is not None:
                        target = _sibling_target(buf, pos, plan, enc, unit_start, base)
                    else:
                        target = -1
                    if target > die_pos:
                        pos = target
                    else:
                        pos = _skip_subtree(buf, pos, plan, tables, enc, unit_start, base)
                elif plan.fixed_size >= 0:
                    pos += plan.fixed_size
                else:
                    pos = skip_attributes(buf, pos, plan.skip, enc)
                continue
            if kind == _DESCEND:
                if plan.fixed_size >= 0:
                    pos += plan.fixed_size
                else:
                    pos = skip_attributes(buf, pos, plan.skip, enc)
                if has_children[code]:
                    stack.append(current)
                continue
            # A subroutine that may have code.
            abbrev = abbrevs[code]
            assert abbrev is not None
            values, pos = decode_attributes(buf, pos, plan, enc)
            ranges = unit.die_ranges(abbrev, values)
            if not ranges:
                if has_children[code]:
                    pos = _skip_children(buf, pos, tables, enc, unit_start, base)
                continue
            is_subprogram = abbrev.tag == C.DW_TAG_subprogram
            function = Function(
                unit, die_pos - base, abbrev, values, ranges, None if is_subprogram else current
            )
            if is_subprogram or current is None:
                functions.append(function)
            else:
                current.children.append(function)
            if has_children[code]:
                stack.append(current)
                current = function
    except (IndexError, struct.error, ValueError) as exc:
        raise info.error(
            f"malformed DIE data in unit at 0x{unit.offset:x} ({exc})", pos - base
        ) from None
    if pos > end:
        raise info.error(f"DIEs of the unit at 0x{unit.offset:x} run past its end", unit.offset)
    return functions


def _sibling_target(
    buf: Buffer, pos: int, plan: Plan, enc: Encoding, unit_start: int, base: int
) -> int:
    """The buffer position DW_AT_sibling points at, reading up to it."""
    assert plan.sibling is not None
    before, fmt, form = plan.sibling
    pos = skip_attributes(buf, pos, before, enc)
    if fmt is not None:
        value = fmt.unpack_from(buf, pos)[0]
    else:
        value, _ = read_uleb(buf, pos)
    if form == C.DW_FORM_ref_addr:
        return base + int(value)
    return unit_start + int(value)


def _skip_subtree(
    buf: Buffer, pos: int, plan: Plan, tables: _CodeTables, enc: Encoding, unit_start: int,
    base: int,
) -> int:
    """Skip a DIE's attributes (at `pos`) and all its children."""
    pos = skip_attributes(buf, pos, plan.skip, enc)
    return _skip_children(buf, pos, tables, enc, unit_start, base)


def _skip_children(
    buf: Buffer, pos: int, tables: _CodeTables, enc: Encoding, unit_start: int, base: int
) -> int:
    """Skip DIEs from `pos` up to and including the null entry closing this level."""
    depth = 1
    plans = tables.plan
    has_children = tables.children
    while True:
        code = buf[pos]
        pos += 1
        if code >= 0x80:
            code, pos = read_uleb(buf, pos - 1)
        if code == 0:
            depth -= 1
            if depth == 0:
                return pos
            continue
        plan = plans[code] if code < len(plans) else None
        if plan is None:
            raise ValueError(f"unknown abbreviation {code}")
        if has_children[code]:
            if plan.sibling is not None:
                target = _sibling_target(buf, pos, plan, enc, unit_start, base)
                if target > pos:
                    pos = target
                    continue
            pos = skip_attributes(buf, pos, plan.skip, enc)
            depth += 1
        elif plan.fixed_size >= 0:
            pos += plan.fixed_size
        else:
            pos = skip_attributes(buf, pos, plan.skip, enc)
