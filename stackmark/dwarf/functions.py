"""The function tree of a unit: subprograms with code and the calls inlined into them.

Two kinds of walk over a unit's DIEs (DWARF 5 sections 3.3, 3.3.8):

* the *top-level walk* visits the unit DIE's children (and namespaces),
  keeps every DW_TAG_subprogram that has addresses, and jumps over the
  subtree of everything else, subprograms included, with DW_AT_sibling
  when the DIE has one (or DIE by DIE with precomputed skip plans);
* a *subtree walk*, run the first time a subprogram's `children` are
  needed, collects the DW_TAG_inlined_subroutine entries under it (looking
  through lexical blocks) into a tree, and any subprogram nested in it.

So one address costs the top-level walk of its unit plus the subtree of one
subprogram. Types, variables, parameters, call sites, declarations and
abstract instances are never decoded. When the compiled walk runs, the
subtree is kept in arrays (`_Tree`) and only the nodes a lookup reaches
become `Function` objects (the others when a caller walks the tree).

Names are resolved on demand: a `Function` keeps its raw attributes and
follows DW_AT_abstract_origin / DW_AT_specification the way llvm's
`DWARFDie::findRecursively` does when asked for `name`, `linkage_name`,
`decl_file` or `decl_line`.

Which subroutine contains an address follows llvm's algorithm
(DWARFUnit::updateAddressDieMap: ranges inserted parents first, a child's
range splitting its parent's), applied first to the unit's subprograms and
then inside the one found, to its inline tree.
"""

from __future__ import annotations

import contextlib
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import MutableSequence, Sequence
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any

from stackmark._native import load
from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import (
    V_INDIRECT,
    V_SLEB,
    V_U24,
    V_ULEB,
    Abbrev,
    Encoding,
    Plan,
    decode_attributes,
    form_size,
    skip_attributes,
)
from stackmark.dwarf.constants import ADDRX_FORMS, CONSTANT_FORMS
from stackmark.dwarf.sections import Buffer, Section
from stackmark.errors import FormatError, StackmarkError

if TYPE_CHECKING:
    from stackmark.dwarf.unit_parts import AddressRange, UnitView

_native = load("_dwarf")  # compiled twin of `_walk`, or None (stackmark/_native)

# What a walk does with a DIE, by abbreviation.
_SKIP = 0  # jump over the DIE and its children
_DESCEND = 1  # look through it at its children (namespaces, lexical blocks, classes)
_SUBROUTINE = 2  # a subprogram or inlined call that may have addresses
_SCOPE = 3  # a subprogram without code (declaration, abstract instance): its local
#            classes may still hold member functions with code
_LOCAL_TYPE = 4  # a class type: looked into inside functions, skipped elsewhere

_DESCEND_TAGS = frozenset(
    {C.DW_TAG_namespace, C.DW_TAG_lexical_block, 0x1E}  # 0x1E: DW_TAG_module
)
# A class local to a function (a lambda's closure type, a helper struct in a
# template) holds the definitions of its member functions; a class at
# namespace scope only declares them (gcc defines them at namespace scope).
_TYPE_TAGS = frozenset({C.DW_TAG_class_type, C.DW_TAG_structure_type, C.DW_TAG_union_type})
_SUBROUTINE_TAGS = frozenset({C.DW_TAG_subprogram, C.DW_TAG_inlined_subroutine})
_PC_ATTRS = (C.DW_AT_low_pc, C.DW_AT_ranges)
_LINKAGE_ATTRS = (C.DW_AT_linkage_name, C.DW_AT_MIPS_linkage_name)
_FOLLOW_ATTRS = (C.DW_AT_abstract_origin, C.DW_AT_specification, C.DW_AT_signature)


class Function:
    """A subprogram with code, or one inlined call inside one.

    `ranges` are [low, high) address ranges (possibly several: hot/cold
    parts). `children` are the calls inlined directly into this one, in DIE
    order (parsed on first access for a subprogram); `parent` the
    subroutine this call is inlined into (None for a subprogram).
    `call_file` is an index into the unit's line table file list (see
    `call_file_name`).
    """

    __slots__ = (
        "_abbrev",
        "_children",
        "_children_pos",
        "_index",
        "_item",
        "_linkage_name",
        "_name",
        "_nested",
        "_tree",
        "call_column",
        "call_file",
        "call_line",
        "offset",
        "parent",
        "ranges",
        "tag",
        "unit",
    )

    def __init__(
        self,
        unit: UnitView,
        offset: int,
        abbrev: Abbrev,
        ranges: list[AddressRange],
        parent: Function | None,
        call_file: int,
        call_line: int,
        call_column: int,
    ):
        self.unit = unit
        self.offset = offset
        self.tag = abbrev.tag
        self._abbrev = abbrev
        self.ranges = ranges
        self.parent = parent
        self._children: list[Function] | None = []
        self._children_pos = -1  # buffer position of unparsed children
        self._nested: list[Function] | None = None  # subprograms nested inside, once parsed
        self._index: _AddressMap | None = None
        # The compiled walk's tree this node's children come from (a subprogram's own,
        # once walked), and the node's index in it (_ROOT for the subprogram).
        self._tree: _Tree | None = None
        self._item = _ROOT
        self._name: str | bool | None = False  # False: not resolved yet
        self._linkage_name: str | bool | None = False
        self.call_file = call_file
        self.call_line = call_line
        self.call_column = call_column

    def __repr__(self) -> str:
        kind = "inlined" if self.is_inlined else "subprogram"
        spans = ", ".join(f"0x{lo:x}-0x{hi:x}" for lo, hi in self.ranges)
        return f"<Function {kind} {self.name!r} at DIE 0x{self.offset:x} [{spans}]>"

    @property
    def is_inlined(self) -> bool:
        return self.tag == C.DW_TAG_inlined_subroutine

    @property
    def children(self) -> list[Function]:
        """Calls inlined directly into this function, in DIE order."""
        if self._children is None:
            self._load_children()
        assert self._children is not None
        return self._children

    @property
    def nested_subprograms(self) -> list[Function]:
        """Subprograms with code whose DIEs sit inside this one's (GNU C nested functions)."""
        if self._children is None:
            self._load_children()
        return self._nested or []

    @property
    def _values(self) -> dict[int, object]:
        """The DIE's attributes, decoded again when asked for: keeping every decoded
        DIE would cost hundreds of bytes per inlined call of a large program."""
        return self.unit.die(self.offset)[1]

    def _load_children(self) -> None:
        """Parse the subtree (compiled: into a `_Tree`, whose nodes become Functions as
        they are reached), or make this node's children from its tree."""
        # Built aside and published last, so that another thread never sees half.
        tree = self._own_tree()
        if tree is not None:
            nested = tree.nested_of(self._item)
            children = tree.children_of(self._item)
        else:
            children = []
            nested = []
            if self._children_pos >= 0:
                _walk(self.unit, self._children_pos, self, nested, children)
        self._nested = nested or None
        self._children = children

    def _own_tree(self) -> _Tree | None:
        """The tree this node's children come from; a subprogram's is walked here, by
        the compiled walk (None when the reference walk must run)."""
        tree = self._tree
        if tree is None and self._children_pos >= 0 and _native is not None:
            found = _walk_compiled(self.unit, _tables(self.unit), self._children_pos, lazy=False)
            if found is not None:
                tree = self._tree = _Tree(self, found)
        return tree

    @property
    def low_pc(self) -> int | None:
        """DW_AT_low_pc of this DIE (llvm's StartAddress), None when it has DW_AT_ranges only."""
        return self.unit.address_attr(self._abbrev, self._values, C.DW_AT_low_pc)

    @property
    def name(self) -> str | None:
        """DW_AT_name, found through abstract origins and specifications (once)."""
        if self._name is False:
            self._resolve_names()
        if self._name is False:  # the shared walk met damage: this name's own walk
            found = find_recursively(self.unit, self._abbrev, self._values, (C.DW_AT_name,))
            self._name = _string_of(found)
        return self._name  # type: ignore[return-value]

    @property
    def linkage_name(self) -> str | None:
        """DW_AT_linkage_name (or DW_AT_MIPS_linkage_name), found the same way (once)."""
        if self._linkage_name is False:
            self._resolve_names()
        if self._linkage_name is False:
            found = find_recursively(self.unit, self._abbrev, self._values, _LINKAGE_ATTRS)
            self._linkage_name = _string_of(found)
        return self._linkage_name  # type: ignore[return-value]

    def _resolve_names(self) -> None:
        """Both names from one walk over the DIEs they may come from: a frame asks for
        both, and two walks decoded the same DIEs twice. Where the walk or a string
        meets damage, that name is left to its own walk, which reports it as before."""
        try:
            found_name, found_linkage = find_recursively_each(
                self.unit, self._abbrev, self._values, ((C.DW_AT_name,), _LINKAGE_ATTRS)
            )
        except StackmarkError:
            return
        if self._name is False:
            with contextlib.suppress(StackmarkError):
                self._name = _string_of(found_name)
        if self._linkage_name is False:
            with contextlib.suppress(StackmarkError):
                self._linkage_name = _string_of(found_linkage)

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

    def start_file(self, *, relative: bool = False) -> str | None:
        """`decl_file` as llvm-symbolizer 19 reports it (DILineInfo's StartFileName): None
        when the attribute's form is DW_FORM_implicit_const, whose value llvm 19 keeps
        without its unit and so cannot resolve to a file. `relative`: without the
        compilation directory (llvm's --relativenames)."""
        found = find_recursively(self.unit, self._abbrev, self._values, (C.DW_AT_decl_file,))
        if not found:
            return None
        unit, abbrev, values, attr = found
        if any(a == attr and form == C.DW_FORM_implicit_const for a, form, _ in abbrev.specs):
            return None
        return unit.file_name(_int(values.get(attr)), relative=relative)

    @property
    def call_discriminator(self) -> int:
        """DW_AT_GNU_discriminator of an inlined call (gcc writes it when one line holds
        several calls): the discriminator of the frame that made the call; 0 without."""
        return _int(self._values.get(C.DW_AT_GNU_discriminator)) if self.is_inlined else 0

    @property
    def call_file_name(self) -> str | None:
        """`call_file` resolved in the unit's line table (inlined calls only)."""
        return self.unit.file_name(self.call_file) if self.is_inlined else None

    def contains(self, address: int) -> bool:
        return any(low <= address < high for low, high in self.ranges)

    def walk(self) -> list[Function]:
        """This function and every call inlined into it, depth first (DIE order)."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out

    def innermost_at(self, address: int) -> Function | None:
        """The deepest subroutine of this tree containing `address` (llvm's map rules)."""
        index = self._index
        if index is None:
            tree = self._own_tree() if self._children is None else None
            if tree is not None and self._item == _ROOT:
                # Over the tree's node numbers: only the node found becomes a Function.
                index = _AddressMap.built(*tree.insertion_order(), tree)
            else:
                index = _AddressMap.built(*self._tree_ranges())
            self._index = index
        return index.find(address)

    def _tree_ranges(self) -> tuple[list[AddressRange], list[Function]]:
        """The (range, node) pairs of the tree, in the order llvm inserts them: a node,
        the subtrees of its inlined calls, then those of its nested subprograms."""
        tree = self._own_tree() if self._children is None else None
        if tree is not None and self._item == _ROOT:
            ranges_in_order, items = tree.insertion_order()
            return ranges_in_order, [tree.node(item) for item in items]
        ranges: list[AddressRange] = []
        nodes: list[Function] = []
        pending = [self]
        while pending:
            node = pending.pop()
            for low, high in node.ranges:
                if low != high:
                    ranges.append((low, high))
                    nodes.append(node)
            children = node.children  # parsed here if needed, which sets _nested
            if node._nested:
                pending.extend(reversed(node._nested))
            if children:
                pending.extend(reversed(children))
        return ranges, nodes


def _int(value: object) -> int:
    if isinstance(value, int):
        return value
    inner = getattr(value, "value", None)
    return inner if isinstance(inner, int) else 0


_Found = tuple["UnitView", Abbrev, dict[int, object], int]


def _string_of(found: _Found | None) -> str | None:
    return found[0].string_attr(found[1], found[2], found[3]) if found else None


def find_recursively(
    unit: UnitView, abbrev: Abbrev, values: dict[int, object], attrs: tuple[int, ...]
) -> _Found | None:
    """The first of `attrs` on this DIE or, failing that, on the DIEs it refers to through
    DW_AT_abstract_origin / DW_AT_specification / DW_AT_signature (llvm's worklist
    order), with the unit
    holding it. None when no DIE along the way has one."""
    return find_recursively_each(unit, abbrev, values, (attrs,))[0]


def find_recursively_each(
    unit: UnitView, abbrev: Abbrev, values: dict[int, object], groups: tuple[tuple[int, ...], ...]
) -> list[_Found | None]:
    """`find_recursively` for each group of attributes, in one walk: the walk's order
    does not depend on what it finds, so each group's answer is the one its own walk
    gives (this one goes on until every group has one, or the DIEs run out)."""
    answers: list[_Found | None] = [None] * len(groups)
    missing = len(groups)
    work: list[tuple[UnitView, Abbrev, dict[int, object]]] = [(unit, abbrev, values)]
    seen: set[tuple[int, int]] = set()
    while work:
        u, ab, vals = work.pop()
        for index, attrs in enumerate(groups):
            if answers[index] is not None:
                continue
            for attr in attrs:
                if attr in vals:
                    answers[index] = (u, ab, vals, attr)
                    missing -= 1
                    break
        if not missing:
            return answers
        for ref_attr in _FOLLOW_ATTRS:
            if ref_attr not in vals:
                continue
            found = u.ref_target(ab, vals, ref_attr)
            if found is None:
                continue
            reader, target = found
            key = (id(reader), target)
            if key in seen:
                continue
            seen.add(key)
            target_unit = reader.unit_containing(target)
            if target_unit is None:
                continue
            target_abbrev, target_values, _ = target_unit.die(target)
            if target_abbrev is not None:
                work.append((target_unit, target_abbrev, target_values))
    return answers


class _AddressMap:
    """llvm's DWARFUnit::updateAddressDieMap: start -> (end, node), a range inside an
    existing one splitting it into up to three pieces."""

    __slots__ = ("ends", "nodes", "starts", "tree")

    def __init__(self, tree: _Tree | None = None) -> None:
        self.starts: MutableSequence[int] = []
        self.ends: MutableSequence[int] = []
        self.nodes: MutableSequence[Any] = []  # Functions, or item numbers of `tree`
        self.tree = tree

    @classmethod
    def built(
        cls,
        ranges: list[AddressRange],
        nodes: Sequence[Function] | Sequence[int],
        tree: _Tree | None = None,
    ) -> _AddressMap:
        """The map after inserting ranges[i] for nodes[i], in order; with `tree`,
        `nodes` are its item numbers, kept in arrays, and `find` makes the Function."""
        made = cls(tree)
        found = _native.address_map(ranges) if _native is not None else None
        if found is not None:
            starts, ends, indexes = found
            if tree is None:
                made.starts, made.ends = starts, ends
                made.nodes = [nodes[i] for i in indexes]
            else:
                made.starts, made.ends = array("Q", starts), array("Q", ends)
                made.nodes = array("q", [nodes[i] for i in indexes])
            return made
        for (low, high), node in zip(ranges, nodes, strict=True):
            made.insert(low, high, node)
        return made

    def _set(self, key: int, end: int, node: Any) -> None:
        i = bisect_left(self.starts, key)
        if i < len(self.starts) and self.starts[i] == key:
            self.ends[i] = end
            self.nodes[i] = node
        else:
            self.starts.insert(i, key)
            self.ends.insert(i, end)
            self.nodes.insert(i, node)

    def insert(self, low: int, high: int, node: Any) -> None:
        i = bisect_right(self.starts, low)
        if i > 0 and low < self.ends[i - 1]:
            b = i - 1
            b_start, b_end, b_node = self.starts[b], self.ends[b], self.nodes[b]
            if high < b_end:
                self._set(high, b_end, b_node)
            if low > b_start:
                self.ends[b] = low
        self._set(low, high, node)

    def find(self, address: int) -> Function | None:
        i = bisect_right(self.starts, address) - 1
        if i < 0 or address >= self.ends[i]:
            return None
        node = self.nodes[i]
        tree = self.tree
        return tree.node(node) if tree is not None else node


class FunctionIndex:
    """The functions of one unit and the address -> subroutine lookup over them."""

    def __init__(self, unit: UnitView):
        self.unit = unit
        self.top = _walk_top(unit)
        ranges: list[AddressRange] = []
        nodes: list[Function] = []
        for function in self.top:
            for low, high in function.ranges:
                if low != high:
                    ranges.append((low, high))
                    nodes.append(function)
        self._map = _AddressMap.built(ranges, nodes)
        self._all: list[Function] | None = None
        self._nested_mapped = False

    @property
    def functions(self) -> list[Function]:
        """Every subprogram with code in the unit, in DIE order, inline trees parsed."""
        if self._all is None:
            found: list[Function] = []

            for function in self.top:
                found.append(function)
                found.extend(function.nested_subprograms)
            found.sort(key=lambda f: f.offset)
            self._all = found
        return self._all

    def chain_at(self, address: int) -> list[Function]:
        """Inlined calls innermost first, then the subprogram (llvm's getInlinedChainForAddress)."""
        top = self._map.find(address)
        if top is None and not self._nested_mapped:
            # Subprograms nested in others' DIEs (members of a local class, GNU C
            # nested functions) can lie outside their parent's ranges; llvm's map
            # holds them too. Parse every inline tree of the unit once to add them.
            self._map_nested()
            top = self._map.find(address)
        if top is None:
            return []
        node = top.innermost_at(address)
        chain: list[Function] = []
        while node is not None:
            chain.append(node)
            if node.tag == C.DW_TAG_subprogram:
                break
            node = node.parent
        return chain

    def _map_nested(self) -> None:
        merged = _AddressMap()  # built aside and published whole: other threads read _map
        merged.starts, merged.ends, merged.nodes = (
            list(self._map.starts),
            list(self._map.ends),
            list(self._map.nodes),
        )
        for function in self.top:
            for nested in function.nested_subprograms:
                for low, high in nested.ranges:
                    if low != high:
                        merged.insert(low, high, nested)
        self._map = merged
        self._nested_mapped = True


def build_function_index(unit: UnitView) -> FunctionIndex:
    """The unit's top-level functions, their inline trees parsed on demand."""
    return FunctionIndex(unit)


# -- the walks ----------------------------------------------------------------------


class _CodeTables:
    """Per-abbreviation-code facts the walks need, in flat lists, filled on first use."""

    def __init__(self, unit: UnitView):
        self.abbrevs = unit.abbrevs
        self.enc = unit.enc
        size = max(self.abbrevs, default=0) + 1
        if size > 2 * len(self.abbrevs) + 4096:
            # Producers number abbreviations 1..N; the lists below are indexed by
            # code, so a damaged table with a huge code would ask for gigabytes.
            raise unit.info.error(
                f"abbreviation code {size - 1} in a table of {len(self.abbrevs)} "
                "abbreviations (codes this sparse are not supported)",
                unit.offset,
            )
        self.kind = [-1] * size  # -1: not compiled yet
        self.children = [False] * size
        self.abbrev: list[Abbrev | None] = [None] * size
        self.plan: list[Plan | None] = [None] * size
        self.native: object = None  # the compiled walk's tables, made on first use

    def load(self, code: int) -> int:
        """Compile `code`; its kind, or -1 if the unit has no such abbreviation."""
        abbrev = self.abbrevs.get(code) if code < len(self.kind) else None
        if abbrev is None:
            return -1
        plan = abbrev.plan(self.enc)
        self.abbrev[code] = abbrev
        self.plan[code] = plan
        self.children[code] = abbrev.has_children
        kind = _kind_of(abbrev, plan)
        self.kind[code] = kind
        return kind


def _kind_of(abbrev: Abbrev, plan: Plan) -> int:
    """What the walks do with a DIE of this abbreviation."""
    if abbrev.tag in _SUBROUTINE_TAGS and any(a in plan.forms for a in _PC_ATTRS):
        kind = _SUBROUTINE
    elif abbrev.tag == C.DW_TAG_subprogram and abbrev.has_children:
        kind = _SCOPE
    elif abbrev.tag in _DESCEND_TAGS:
        kind = _DESCEND
    elif abbrev.tag in _TYPE_TAGS and abbrev.has_children:
        kind = _LOCAL_TYPE
    else:
        kind = _SKIP
    return kind


def _tables(unit: UnitView) -> _CodeTables:
    tables = unit._code_tables
    if not isinstance(tables, _CodeTables):  # None until the first walk
        tables = unit._code_tables = _CodeTables(unit)
    return tables


def _walk_top(unit: UnitView) -> list[Function]:
    """Subprograms (and stray inlined calls) with code outside any subprogram, in DIE
    order, their subtrees left for later."""
    top_abbrev, _, after_top = unit.die(unit.header.die_offset)
    if top_abbrev is None or not top_abbrev.has_children:
        return []
    found: list[Function] = []
    _walk(unit, unit.info.start + after_top, None, found)
    return found


def _walk(
    unit: UnitView,
    pos: int,
    root: Function | None,
    nested: list[Function],
    root_children: list[Function] | None = None,
) -> None:
    """Walk DIEs from `pos` to the null entry closing their level.

    Top-level walk (`root` None): subroutines with code go to `nested` with
    their children left unparsed. Subtree walk: inlined calls are attached
    to the enclosing subroutine (`root`'s go to `root_children`), subprograms
    nested inside go to `nested` and their own inlined calls under them.
    (A subtree walk by the compiled kernel makes a `_Tree` instead: `Function._own_tree`.)
    """
    tables = _tables(unit)
    if root is None and _native is not None:
        top = _top_level_compiled(unit, tables, pos)
        if top is not None:
            nested.extend(top)
            return
    info = unit.info
    buf = info.buf
    base = info.start
    enc = unit.enc
    unit_start = base + unit.offset
    end = base + unit.header.end
    kinds = tables.kind
    has_children = tables.children
    plans = tables.plan
    abbrevs = tables.abbrev
    lazy = root is None
    stack: list[tuple[Function | None, bool]] = []
    current: Function | None = root
    in_function = root is not None  # below a subprogram DIE (concrete or not)
    try:
        while pos < end:
            die_pos = pos
            code = buf[pos]
            pos += 1
            if code >= 0x80:
                code, pos = read_uleb(buf, pos - 1)
            if code == 0:
                if not stack:
                    return
                current, in_function = stack.pop()
                continue
            kind = kinds[code] if code < len(kinds) else -1
            if kind < 0:
                kind = tables.load(code)
                if kind < 0:
                    raise info.error(
                        f"DIE at 0x{die_pos - base:x} uses unknown abbreviation {code}",
                        die_pos - base,
                    )
            plan = plans[code]
            assert plan is not None
            if kind == _SKIP or (kind == _LOCAL_TYPE and not in_function):
                if has_children[code]:
                    pos = _past_subtree(buf, pos, plan, tables, enc, unit_start, base)
                elif plan.fixed_size >= 0:
                    pos += plan.fixed_size
                else:
                    pos = skip_attributes(buf, pos, plan.skip, enc)
                continue
            if kind != _SUBROUTINE:  # _DESCEND, _SCOPE, _LOCAL_TYPE in a function
                if plan.fixed_size >= 0:
                    pos += plan.fixed_size
                else:
                    pos = skip_attributes(buf, pos, plan.skip, enc)
                if has_children[code]:
                    stack.append((current, in_function))
                    if kind == _SCOPE:
                        current = None  # what lies inside belongs to no code of ours
                        in_function = True
                continue
            # A subroutine that may have code.
            abbrev = abbrevs[code]
            assert abbrev is not None
            attrs_pos = pos
            values, pos = decode_attributes(buf, pos, plan, enc)
            ranges = unit.die_ranges(abbrev, values)
            if not ranges:
                if has_children[code]:
                    if abbrev.tag == C.DW_TAG_subprogram:
                        stack.append((current, in_function))  # look inside, as for _SCOPE
                        current = None
                        in_function = True
                    else:
                        pos = _past_subtree(buf, attrs_pos, plan, tables, enc, unit_start, base)
                continue
            is_subprogram = abbrev.tag == C.DW_TAG_subprogram
            parent = None if is_subprogram or lazy else current
            function = Function(
                unit,
                die_pos - base,
                abbrev,
                ranges,
                parent,
                _int(values.get(C.DW_AT_call_file)),
                _int(values.get(C.DW_AT_call_line)),
                _int(values.get(C.DW_AT_call_column)),
            )
            if parent is None:
                nested.append(function)
            elif parent is root and root_children is not None:
                root_children.append(function)
            else:
                assert parent._children is not None
                parent._children.append(function)
            if has_children[code]:
                if lazy:
                    function._children = None
                    function._children_pos = pos
                    pos = _past_subtree(buf, attrs_pos, plan, tables, enc, unit_start, base)
                else:
                    stack.append((current, in_function))
                    current = function
                    in_function = True
    except (IndexError, struct.error, ValueError, RecursionError) as exc:
        # RecursionError: DW_AT_sibling values pointing backwards, nested thousands deep
        raise info.error(
            f"malformed DIE data in unit at 0x{unit.offset:x} ({exc})", pos - base
        ) from None
    raise info.error(f"DIEs of the unit at 0x{unit.offset:x} run past its end", unit.offset)


def _past_subtree(
    buf: Buffer,
    pos: int,
    plan: Plan,
    tables: _CodeTables,
    enc: Encoding,
    unit_start: int,
    base: int,
) -> int:
    """The position after a DIE with children whose attributes start at `pos`:
    its DW_AT_sibling when it has a usable one, else found by skipping the children."""
    sibling = plan.sibling
    if sibling is not None:
        before, fmt, form = sibling
        at = skip_attributes(buf, pos, before, enc) if before else pos
        value = fmt.unpack_from(buf, at)[0] if fmt is not None else read_uleb(buf, at)[0]
        target = (base if form == C.DW_FORM_ref_addr else unit_start) + int(value)
        if target > pos:
            return target
    pos = skip_attributes(buf, pos, plan.skip, enc)
    return _skip_children(buf, pos, tables, enc, unit_start, base)


def _skip_children(
    buf: Buffer, pos: int, tables: _CodeTables, enc: Encoding, unit_start: int, base: int
) -> int:
    """Skip DIEs from `pos` up to and including the null entry closing this level."""
    depth = 1
    plans = tables.plan
    has_children = tables.children
    kinds = tables.kind
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
        if (code >= len(kinds) or kinds[code] < 0) and tables.load(code) < 0:
            raise ValueError(f"unknown abbreviation {code}")
        plan = plans[code]
        assert plan is not None
        if has_children[code]:
            sibling = plan.sibling
            if sibling is not None:
                target = _past_subtree(buf, pos, plan, tables, enc, unit_start, base)
                pos = target
                continue
            pos = skip_attributes(buf, pos, plan.skip, enc)
            depth += 1
        elif plan.fixed_size >= 0:
            pos += plan.fixed_size
        else:
            pos = skip_attributes(buf, pos, plan.skip, enc)


# -- the compiled walk --------------------------------------------------------------
#
# `_walk` by the C kernel (stackmark/_native/_dwarf.c `walk`), for the units and
# forms it handles; anything else (split units, indexed addresses and range
# lists, DW_FORM_indirect, damaged data) runs the reference above. The forms'
# meanings are decided here, so that the kernel only moves over bytes.

_ROLES = {
    C.DW_AT_low_pc: 1,
    C.DW_AT_high_pc: 2,
    C.DW_AT_ranges: 3,
    C.DW_AT_call_file: 4,
    C.DW_AT_call_line: 5,
    C.DW_AT_call_column: 6,
}
_M_VALUE, _M_CONSTANT, _M_ZERO = 0, 1, 2
_INT_SIZES = frozenset({0, 1, 2, 4, 8, V_ULEB, V_SLEB, V_U24})  # forms whose raw value is an int

_Item = tuple[int, int, int, int, list["AddressRange"], int, int, int]
"""One subroutine the compiled walk found (see `_walk_compiled`)."""

_CodeEntry = tuple[
    int,
    int,
    int,
    int,
    tuple[int, ...],
    "tuple[tuple[int, ...], int, int] | None",
    "tuple[tuple[int, int, int, int], ...] | None",
]


def _meaning(role: int, form: int, size: int) -> int | None:
    """How the compiled walk reads attribute `role` in `form`; None: it cannot."""
    is_int = size in _INT_SIZES
    if role >= 4:  # call_file, call_line, call_column: Function takes any int, else 0
        return _M_VALUE if is_int else _M_ZERO
    if not is_int or form in ADDRX_FORMS or form == C.DW_FORM_rnglistx:
        return None
    if role == 2 and form in CONSTANT_FORMS:
        return _M_CONSTANT
    return _M_VALUE


def _code_entry(tables: _CodeTables, code: int) -> _CodeEntry | None:
    abbrev = tables.abbrevs.get(code)
    if abbrev is None:
        return None
    try:
        plan = abbrev.plan(tables.enc)
    except ValueError:  # an unknown form: the reference reports it if the walk meets it
        return None
    # Units repeat declarations: one entry per (plan, tag, children), which is all
    # an entry depends on (the plan is per specs and encoding).
    key = (plan, abbrev.tag, abbrev.has_children)
    if key not in _ENTRIES:
        _ENTRIES[key] = compiled_walk_entry(abbrev, plan, tables.enc)
    return _ENTRIES[key]


_ENTRIES: dict[tuple[Plan, int, bool], _CodeEntry | None] = {}


def compiled_walk_entry(abbrev: Abbrev, plan: Plan, enc: Encoding) -> _CodeEntry | None:
    """What the compiled subtree walk needs of one abbreviation (its kind, children,
    fixed size, skips, sibling and attribute steps), or None when only the reference
    walks DIEs of it. The GSYM converter's walk builds its entries from this too."""
    kind = _kind_of(abbrev, plan)
    if V_INDIRECT in plan.skip:
        return None
    sibling = None
    if plan.sibling is not None:
        before, fmt, form = plan.sibling
        if V_INDIRECT in before or (fmt is not None and fmt.size > 8):
            return None
        sibling = (before, fmt.size if fmt is not None else -1, int(form == C.DW_FORM_ref_addr))
    specs = None
    if kind == _SUBROUTINE:
        seen: set[int] = set()
        steps = []
        for attr, form, implicit in abbrev.specs:
            size = form_size(form, enc)
            role = _ROLES.get(attr, 0)
            if size is None or size == V_INDIRECT or (role and role in seen):
                return None
            meaning = _M_VALUE
            if role:
                seen.add(role)
                found = _meaning(role, form, size)
                if found is None:
                    return None
                meaning = found
            value = 1 if form == C.DW_FORM_flag_present else implicit
            steps.append((role, meaning, size, value))
        specs = tuple(steps)
    is_subprogram = int(abbrev.tag == C.DW_TAG_subprogram)
    fixed = plan.fixed_size
    return (kind, int(abbrev.has_children), is_subprogram, fixed, plan.skip, sibling, specs)


def compiled_walk_frame(unit: UnitView) -> tuple[int, Section] | None:
    """What a compiled walk (this module's and the GSYM converter's) takes of a unit
    beside its DIEs: its base address and its range-list section (.debug_rnglists from
    DWARF 5 on, .debug_ranges before). None where only the reference walks the unit:
    a split unit, a base address that cannot be read (the reference raises that error
    where it needs the base) or one past 64 bits."""
    if unit.skeleton is not None or unit.reader.is_dwo:
        return None
    try:
        base_address = unit.base_address
    except FormatError:
        return None
    if not 0 <= base_address < 1 << 64:
        return None
    return base_address, unit.reader.rnglists if unit.version >= 5 else unit.reader.ranges


def _walk_compiled(unit: UnitView, tables: _CodeTables, pos: int, lazy: bool) -> list[_Item] | None:
    """The compiled kernel's walk from `pos` (`lazy`: the top-level walk, subtrees
    left unparsed), as (DIE offset, code, parent, children position, ranges,
    call_file, call_line, call_column) items in DIE order, a parent being the
    index of an earlier item, -2 for the walk's root, -1 for none (a subprogram);
    None when the reference must run."""
    assert _native is not None
    frame = compiled_walk_frame(unit)
    if frame is None:
        return None
    base_address, ranges = frame
    if tables.native is None:
        tables.native = _native.make_walk_tables(
            [_code_entry(tables, code) for code in range(len(tables.kind))]
        )
    info = unit.info
    found: list[_Item] | None = _native.walk(
        tables.native,
        info.buf,
        pos,
        info.start + unit.header.end,
        info.start + unit.offset,
        info.start,
        unit.enc.endian == "<",
        lazy,
        ranges.buf,
        ranges.start,
        ranges.end,
        unit.version,
        unit.header.addr_size,
        base_address,
    )
    return found


def _top_level_compiled(unit: UnitView, tables: _CodeTables, pos: int) -> list[Function] | None:
    """The top-level walk by the compiled kernel (see `_walk`), or None."""
    found = _walk_compiled(unit, tables, pos, lazy=True)
    if found is None:
        return None
    abbrevs = tables.abbrevs
    functions: list[Function] = []
    for offset, code, _parent, children_pos, ranges_found, call_file, line, column in found:
        function = Function(
            unit, offset, abbrevs[code], ranges_found, None, call_file, line, column
        )
        functions.append(function)
        if children_pos >= 0:
            function._children = None
            function._children_pos = children_pos
    return functions


_ROOT = -2
"""A `_Tree` item's parent when it is the walk's root (the subprogram walked)."""
_NO_PARENT = -1
"""A `_Tree` item's parent when it is a subprogram nested in the root's DIEs."""


class _Tree:
    """A subprogram's subtree as the compiled walk found it, kept in arrays; the
    `Function` of a node is made only when a lookup or a caller reaches it.

    Why: a lookup needs the chain of calls at one address, while an inline tree
    of the benchmark binary has 21 nodes on average (150,000 in the 7,085 trees
    a 100,000-line log reaches), and a Function with its ranges costs about
    400 bytes; a node here costs about 60 (docs/benchmarks.md)."""

    __slots__ = (
        "_children",
        "_made",
        "abbrevs",
        "call_columns",
        "call_files",
        "call_lines",
        "codes",
        "offsets",
        "parents",
        "range_bounds",
        "range_starts",
        "root",
    )

    def __init__(self, root: Function, found: list[_Item]):
        self.root = root
        self.abbrevs = _tables(root.unit).abbrevs
        self._made: dict[int, Function] = {}
        self._children: dict[int, list[int]] | None = None
        if not found:
            empty: array[int] = array("q")
            self.offsets = self.codes = self.parents = empty
            self.call_files: Sequence[int] = empty
            self.call_lines: Sequence[int] = empty
            self.call_columns: Sequence[int] = empty
            self.range_bounds = empty
            self.range_starts = array("q", [0])
            return
        offsets, codes, parents, _, ranges, files, lines, columns = zip(*found, strict=True)
        self.offsets = array("Q", offsets)
        self.codes = array("Q", codes)
        self.parents = array("q", parents)
        self.call_files = _int_column(files)
        self.call_lines = _int_column(lines)
        self.call_columns = _int_column(columns)
        self.range_starts = array("Q", accumulate(map(len, ranges), initial=0))
        self.range_bounds = array("Q", chain.from_iterable(chain.from_iterable(ranges)))

    def ranges_of(self, item: int) -> list[AddressRange]:
        if item == _ROOT:
            return self.root.ranges
        bounds = self.range_bounds
        return [
            (bounds[2 * k], bounds[2 * k + 1])
            for k in range(self.range_starts[item], self.range_starts[item + 1])
        ]

    def node(self, item: int) -> Function:
        """The Function of node `item` (the same object each time), made with those of
        its enclosing calls that are not made yet (outermost first, without recursion:
        hostile input nests inlined calls thousands deep)."""
        if item == _ROOT:
            return self.root
        made = self._made
        found = made.get(item)
        if found is not None:
            return found
        missing = [item]
        parent_item = self.parents[item]
        while parent_item >= 0 and parent_item not in made:
            missing.append(parent_item)
            parent_item = self.parents[parent_item]
        for at in reversed(missing):
            parent_item = self.parents[at]
            parent = (
                None
                if parent_item == _NO_PARENT
                else self.root
                if parent_item == _ROOT
                else made[parent_item]
            )
            function = Function(
                self.root.unit,
                self.offsets[at],
                self.abbrevs[self.codes[at]],
                self.ranges_of(at),
                parent,
                self.call_files[at],
                self.call_lines[at],
                self.call_columns[at],
            )
            function._children = None
            function._tree = self
            function._item = at
            made.setdefault(at, function)  # one object, whichever thread wins
        return made[item]

    def _children_by_parent(self) -> dict[int, list[int]]:
        children = self._children
        if children is None:
            children = {}
            for item, parent in enumerate(self.parents):
                children.setdefault(parent, []).append(item)
            self._children = children
        return children

    def children_of(self, item: int) -> list[Function]:
        """The calls inlined directly into node `item`, in DIE order."""
        return [self.node(child) for child in self._children_by_parent().get(item, ())]

    def nested_of(self, item: int) -> list[Function]:
        """The subprograms nested in the root's DIEs (the root's only)."""
        if item != _ROOT:
            return []
        return [self.node(child) for child in self._children_by_parent().get(_NO_PARENT, ())]

    def insertion_order(self) -> tuple[list[AddressRange], list[int]]:
        """The tree's (range, item) pairs in the order `Function._tree_ranges` gives
        them: the items are in DIE order, so a node's inlined calls follow it; a
        nested subprogram starts a group of its own, and the groups come after the
        root's, in DIE order."""
        groups: list[int] = []  # per item: 0 for root's own tree, else 1 + its subprogram's
        for item, parent in enumerate(self.parents):
            if parent >= 0:
                groups.append(groups[parent])
            else:
                groups.append(0 if parent == _ROOT else item + 1)
        ranges_in_order: list[AddressRange] = []
        items: list[int] = []
        by_group = sorted(range(len(groups)), key=groups.__getitem__)  # stable: DIE order kept
        for item in (_ROOT, *by_group):
            for low, high in self.ranges_of(item):
                if low != high:
                    ranges_in_order.append((low, high))
                    items.append(item)
        return ranges_in_order, items


def _int_column(values: tuple[int, ...]) -> Sequence[int]:
    """`values` in an array when they fit one (they are DW_AT_call_* values)."""
    for typecode in ("q", "Q"):
        try:
            return array(typecode, values)
        except OverflowError:
            continue
    return values
