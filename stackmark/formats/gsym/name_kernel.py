"""The compiled DIE reads behind the converter's names (stackmark/_native/_dwarf.c).

`die_names` finds a DIE's linkage name and name (following
DW_AT_abstract_origin and DW_AT_specification, as `DieFunction.names` does),
`die_context_refs` what `NameBuilder`'s parent-context walk reads of a DIE,
and `qualified_prefix` that whole walk for one name: each reads only the
attributes the names are made of, into C slots, without a dict per DIE. This
module makes their per-unit tables (a unit's "name scope", kept on the unit)
and says where the pure-Python readers must run instead. It imports neither
dwarf_walk nor dwarf_names, which both call it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from stackmark._native import load
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev, Encoding, Plan, form_size
from stackmark.dwarf.constants import LOCAL_REF_FORMS, STRX_FORMS
from stackmark.dwarf.unit import Unit
from stackmark.dwarf.unit_parts import ReaderView, UnitView
from stackmark.errors import FormatError

_native = load("_dwarf")  # die_names, die_context_refs, qualified_prefix; or None


def die_names(unit: UnitView, offset: int) -> tuple[str | None, str | None] | None:
    """(linkage name, name) of the DIE at `offset` as `DieFunction.names` finds them,
    from the compiled `die_names`; None when the reference must read them."""
    if _native is None or not isinstance(unit, Unit):
        return None
    scope = name_scope(unit)
    if scope is None:
        return None
    found: tuple[str | None, str | None] | None = _native.die_names(scope[0], offset, scope[1])
    return found


# Roles and meanings of the attributes the names are made of, as the kernel
# numbers them (stackmark/_native/_dwarf.c, ROLE_* and F_*).
_NAME_ROLES = {
    C.DW_AT_name: 1,
    C.DW_AT_linkage_name: 2,
    C.DW_AT_MIPS_linkage_name: 3,
    C.DW_AT_abstract_origin: 4,
    C.DW_AT_specification: 5,
    C.DW_AT_signature: 6,  # only qualified_prefix reads it (it hands such DIEs back)
}
_F_NONE, _F_HAND_BACK, _F_STRING, _F_STRP, _F_LINE_STRP, _F_STRX = range(6)
_F_REF_UNIT, _F_REF_ADDR = 6, 7
_STRING_MEANINGS = {
    C.DW_FORM_string: _F_STRING,
    C.DW_FORM_strp: _F_STRP,
    C.DW_FORM_line_strp: _F_LINE_STRP,
    C.DW_FORM_GNU_strp_alt: _F_HAND_BACK,  # the supplementary file's
    C.DW_FORM_strp_sup: _F_HAND_BACK,
} | dict.fromkeys(STRX_FORMS, _F_STRX)
_REF_MEANINGS = {
    C.DW_FORM_ref_addr: _F_REF_ADDR,
    C.DW_FORM_ref_sig8: _F_HAND_BACK,  # a type unit's DIE
} | dict.fromkeys(LOCAL_REF_FORMS, _F_REF_UNIT)


def _name_meaning(role: int, form: int) -> int:
    """What a value of `form` is to `Unit.string_attr` (roles 1-3) or `Unit.ref_attr`
    (roles 4-5); _F_NONE where they give None."""
    return (_STRING_MEANINGS if role <= 3 else _REF_MEANINGS).get(form, _F_NONE)


def _name_entry(abbrev: Abbrev, plan: Plan, enc: Encoding) -> object:
    """The kernel's table entry of one abbreviation: a walk-table entry whose specs
    carry name roles; None where only the reference reads such DIEs (the same
    declarations as for the compiled decoder: repeated attributes, DW_FORM_indirect)."""
    key = (plan, abbrev.has_children)
    if key in _NAME_ENTRIES:
        return _NAME_ENTRIES[key]
    entry: object = None
    specs = _name_specs(abbrev, enc) if plan.native is not None else None
    if specs is not None:
        entry = (0, int(abbrev.has_children), 0, plan.fixed_size, plan.skip, None, specs)
    _NAME_ENTRIES[key] = entry
    return entry


_NAME_ENTRIES: dict[tuple[Plan, bool], object] = {}


def _name_specs(abbrev: Abbrev, enc: Encoding) -> tuple[tuple[int, int, int, int], ...] | None:
    """(role, meaning, size, implicit value) of each attribute, in DIE order."""
    specs = []
    for attr, form, implicit in abbrev.specs:
        size = form_size(form, enc)
        role = _NAME_ROLES.get(attr, 0)
        value = 1 if form == C.DW_FORM_flag_present else implicit
        if size is None or not -(1 << 63) <= value < 1 << 63:
            return None
        specs.append((role, _name_meaning(role, form) if role else _F_NONE, size, value))
    return tuple(specs)


def name_scope(unit: Unit) -> tuple[object, Callable[[int], object]] | None:
    """The kernel's scope of `unit` and the scope finder of its file (made once and
    kept on the unit), or None when the reference reads its names."""
    scope = unit._name_scope
    if scope is None:
        made = _new_name_scope(unit)
        scope = False if made is None else (made, partial(_scope_at, unit.reader))
        unit._name_scope = scope
    return scope if isinstance(scope, tuple) else None


def context_refs(
    unit: UnitView, offset: int
) -> tuple[Abbrev | None, int | None, int | None] | None:
    """What `NameBuilder`'s parent-context walk reads of the DIE at `offset`, from
    the compiled `die_context_refs`: its abbreviation (None: a null entry) and the
    offsets its DW_AT_specification and DW_AT_abstract_origin lead to (None:
    absent, or no reference). None when the reference must read the DIE."""
    if _native is None or not isinstance(unit, Unit):
        return None
    scope = name_scope(unit)
    if scope is None:
        return None
    found: tuple[int, int | None, int | None] | None
    found = _native.die_context_refs(scope[0], offset)
    if found is None:
        return None
    code, specification, origin = found
    return (unit.abbrevs[code] if code else None), specification, origin


_CONTEXT_KINDS = {
    C.DW_TAG_namespace: 1,
    0x13: 1,  # DW_TAG_structure_type
    0x17: 1,  # DW_TAG_union_type
    0x02: 1,  # DW_TAG_class_type
    C.DW_TAG_subprogram: 1,
    C.DW_TAG_lexical_block: 2,
    C.DW_TAG_inlined_subroutine: 3,
}
"""What `qualified_prefix` tells apart, by tag (dwarf_names._CONTEXT_TAGS: 1)."""


def context_tables(unit: UnitView) -> tuple[object, bytes] | None:
    """The kernel's scope of `unit` and the kind of each abbreviation code
    (`_CONTEXT_KINDS`), for `qualified_prefix`; None when the reference walks
    (no compiled module, units other than `Unit`, sparse codes)."""
    if _native is None or not isinstance(unit, Unit):
        return None
    scope = name_scope(unit)
    if scope is None:
        return None
    abbrevs = unit.abbrevs
    size = max(abbrevs, default=0) + 1
    if size > 2 * len(abbrevs) + 4096:
        return None
    kinds = bytearray(size)
    for code, abbrev in abbrevs.items():
        kinds[code] = _CONTEXT_KINDS.get(abbrev.tag, 0)
    return scope[0], bytes(kinds)


def own_name(unit: UnitView, abbrev: Abbrev, offset: int) -> tuple[str | None] | None:
    """`find_recursively`'s DW_AT_name string of a DIE that holds one itself (then
    no reference is followed), from the compiled `die_names`, as a 1-tuple; None
    when the DIE holds none or the reference must read it."""
    if _native is None or not isinstance(unit, Unit):
        return None
    if C.DW_AT_name not in abbrev.plan(unit.enc).forms:
        return None
    scope = name_scope(unit)
    if scope is None:
        return None
    found: tuple[str | None, str | None] | None
    found = _native.die_names(scope[0], offset, scope[1])
    return None if found is None else (found[1],)


def _scope_at(reader: ReaderView[Unit], offset: int) -> object:
    """The kernel's scope of the unit of `reader` holding .debug_info `offset`
    (`die_names` asks when a reference leaves a unit): None when no unit holds it,
    False when the reference must follow it."""
    try:
        unit = reader.unit_containing(offset)
    except FormatError:  # the reference raises it
        return False
    if unit is None:
        return None
    scope = name_scope(unit)
    return False if scope is None else scope[0]


def _new_name_scope(unit: Unit) -> object | None:
    assert _native is not None
    try:
        abbrevs = unit.abbrevs
        offsets_base = unit.str_offsets_base
    except FormatError:  # the reference raises it where it reads them
        return None
    size = max(abbrevs, default=0) + 1
    if size > 2 * len(abbrevs) + 4096 or not 0 <= offsets_base < 1 << 64:
        return None
    enc = unit.enc
    entries: list[object] = [None] * size
    for code, abbrev in abbrevs.items():
        try:
            plan = abbrev.plan(enc)
        except ValueError:  # a form no DWARF version has: Unit.die raises
            continue
        entries[code] = _name_entry(abbrev, plan, enc)
    reader = unit.reader
    info, strings, line_strings, offsets = (
        reader.info,
        reader.debug_str,
        reader.line_str,
        reader.str_offsets,
    )
    made: object = _native.make_name_scope(
        _native.make_walk_tables(entries),
        info.buf,
        info.start,
        unit.offset,
        unit.header.die_offset,
        unit.header.end,
        enc.endian == "<",
        strings.buf,
        strings.start,
        strings.end,
        line_strings.buf,
        line_strings.start,
        line_strings.end,
        offsets.buf,
        offsets.start,
        offsets.end,
        offsets_base,
        unit.header.offset_size,
    )
    return made
