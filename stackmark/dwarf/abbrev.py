"""Abbreviation tables (DWARF 5 section 7.5.3) and their compiled read plans.

An abbreviation says which attributes, in which forms, a DIE carries. The
reader turns each one, once per unit encoding (version, address size,
offset size, byte order), into two plans:

* a *skip plan*: what to step over to reach the next DIE: runs of
  fixed-size forms merged into one byte count, plus codes for the
  variable-size forms (LEB128, strings, blocks). A DIE made only of
  fixed-size forms is skipped with a single addition;
* a *decode plan*: runs of consecutive fixed-size attributes read with one
  precompiled `struct.Struct.unpack_from`, and the variable-size ones one
  by one. Values come out raw (offsets, indexes, unit-relative references);
  `stackmark.dwarf.unit.Unit` interprets them by form.
"""

# No `from __future__ import annotations` here: with it, every field of the
# NamedTuples below is a string that typing turns into a ForwardRef by calling
# compile(), and a process's first compile() builds all of CPython's AST types
# (about 10 million instructions, 4% of a one-frame `stackmark symbolize`).

import struct
from typing import NamedTuple, TypeAlias

from stackmark._native import load
from stackmark.binary import read_sleb, read_uleb, skip_leb
from stackmark.dwarf import constants as C
from stackmark.dwarf.sections import Buffer, Section, byteorder

_native = load("_dwarf")  # compiled twin of `decode_attributes`, or None (stackmark/_native)

# Variable-size form classes (negative so that a skip plan can mix them
# with positive fixed byte counts).
V_ULEB = -1
V_SLEB = -2
V_STRING = -3
V_BLOCK_ULEB = -4
V_BLOCK1 = -5
V_BLOCK2 = -6
V_BLOCK4 = -7
V_U24 = -8
V_INDIRECT = -9


class IndirectValue(NamedTuple):
    """The value of a DW_FORM_indirect attribute, with the form the DIE chose."""

    form: int
    value: object


class Encoding(NamedTuple):
    """What the size of a form depends on."""

    version: int
    addr_size: int
    offset_size: int
    endian: str  # "<" or ">"


_FIXED_BY_FORM = {
    C.DW_FORM_data1: 1,
    C.DW_FORM_ref1: 1,
    C.DW_FORM_flag: 1,
    C.DW_FORM_strx1: 1,
    C.DW_FORM_addrx1: 1,
    C.DW_FORM_data2: 2,
    C.DW_FORM_ref2: 2,
    C.DW_FORM_strx2: 2,
    C.DW_FORM_addrx2: 2,
    C.DW_FORM_data4: 4,
    C.DW_FORM_ref4: 4,
    C.DW_FORM_ref_sup4: 4,
    C.DW_FORM_strx4: 4,
    C.DW_FORM_addrx4: 4,
    C.DW_FORM_data8: 8,
    C.DW_FORM_ref8: 8,
    C.DW_FORM_ref_sig8: 8,
    C.DW_FORM_ref_sup8: 8,
    C.DW_FORM_data16: 16,
    C.DW_FORM_flag_present: 0,
    C.DW_FORM_implicit_const: 0,
}
_OFFSET_SIZED = {
    C.DW_FORM_strp,
    C.DW_FORM_sec_offset,
    C.DW_FORM_line_strp,
    C.DW_FORM_strp_sup,
    C.DW_FORM_GNU_ref_alt,
    C.DW_FORM_GNU_strp_alt,
}
_VARIABLE_BY_FORM = {
    C.DW_FORM_udata: V_ULEB,
    C.DW_FORM_ref_udata: V_ULEB,
    C.DW_FORM_strx: V_ULEB,
    C.DW_FORM_addrx: V_ULEB,
    C.DW_FORM_loclistx: V_ULEB,
    C.DW_FORM_rnglistx: V_ULEB,
    C.DW_FORM_GNU_addr_index: V_ULEB,
    C.DW_FORM_GNU_str_index: V_ULEB,
    C.DW_FORM_sdata: V_SLEB,
    C.DW_FORM_string: V_STRING,
    C.DW_FORM_block: V_BLOCK_ULEB,
    C.DW_FORM_exprloc: V_BLOCK_ULEB,
    C.DW_FORM_block1: V_BLOCK1,
    C.DW_FORM_block2: V_BLOCK2,
    C.DW_FORM_block4: V_BLOCK4,
    C.DW_FORM_strx3: V_U24,
    C.DW_FORM_addrx3: V_U24,
    C.DW_FORM_indirect: V_INDIRECT,
}
_STRUCT_CODE = {1: "B", 2: "H", 4: "I", 8: "Q", 16: "16s"}


def form_size(form: int, enc: Encoding) -> int | None:
    """Byte size of `form` under `enc`, a negative V_* class if variable, None if unknown."""
    fixed = _FIXED_BY_FORM.get(form)
    if fixed is not None:
        return fixed
    if form in _OFFSET_SIZED:
        return enc.offset_size
    if form == C.DW_FORM_addr:
        return enc.addr_size
    if form == C.DW_FORM_ref_addr:
        return enc.addr_size if enc.version <= 2 else enc.offset_size
    return _VARIABLE_BY_FORM.get(form)


# A decode step: (kind, struct or None, attribute(s)).
#   kind 0: fixed run, struct reads the values of the attributes tuple
#   kind < 0: one variable-size attribute of that V_* class
Step: TypeAlias = tuple[int, "struct.Struct | None", "tuple[int, ...] | int"]


class Plan:
    """An abbreviation compiled for one encoding (see the module docstring)."""

    __slots__ = (
        "consts",
        "fixed_size",
        "forms",
        "native",
        "sibling",
        "single",
        "skip",
        "steps",
    )

    def __init__(
        self,
        skip: tuple[int, ...],
        steps: tuple[Step, ...],
        consts: dict[int, int],
        forms: dict[int, int],
        sibling: tuple[tuple[int, ...], struct.Struct | None, int] | None,
    ):
        self.skip = skip
        self.fixed_size = skip[0] if len(skip) == 1 and skip[0] >= 0 else (0 if not skip else -1)
        self.steps = steps
        self.consts = consts
        self.forms = forms
        # (skip plan up to DW_AT_sibling, struct for its value or None for
        # ref_udata, its form), when the abbreviation has a sibling.
        self.sibling = sibling
        # The common case, decoded with one unpack and no loop: every value
        # stored is fixed-size (zero-size forms aside) and read by one struct.
        self.single: tuple[struct.Struct, tuple[int, ...]] | None = None
        if len(steps) == 1 and steps[0][0] == 0 and steps[0][1] is not None:
            attrs = steps[0][2]
            assert isinstance(attrs, tuple)
            self.single = (steps[0][1], attrs)
        # The compiled decoder's plan (see `_native_plan`), None when there is none.
        self.native: object = None


class Abbrev:
    """One abbreviation declaration."""

    __slots__ = ("_last", "code", "has_children", "specs", "tag")

    def __init__(
        self, code: int, tag: int, has_children: bool, specs: tuple[tuple[int, int, int], ...]
    ):
        self.code = code
        self.tag = tag
        self.has_children = has_children
        self.specs = specs  # (attribute, form, implicit constant)
        # The plan last asked for, with its encoding: the units of one file share an
        # encoding, and a dict per declaration would cost 230 bytes each (41,776 of
        # them in the benchmark binary). One tuple, so that threads see both or none.
        self._last: tuple[Encoding, Plan] | None = None

    def plan(self, enc: Encoding) -> Plan:
        last = self._last
        if last is not None and last[0] == enc:
            return last[1]
        # Units repeat the same declarations: compile each (specs, encoding) once.
        key = (self.specs, enc)
        found = _PLANS.get(key)
        if found is None:
            found = _PLANS[key] = _compile(self, enc)
        self._last = (enc, found)
        return found


_PLANS: dict[tuple[tuple[tuple[int, int, int], ...], Encoding], Plan] = {}


def _merge_skip(sizes: list[int]) -> tuple[int, ...]:
    out: list[int] = []
    for size in sizes:
        if size >= 0 and out and out[-1] >= 0:
            out[-1] += size
        elif size != 0:
            out.append(size)
    return tuple(out)


def _compile(abbrev: Abbrev, enc: Encoding) -> Plan:
    sizes: list[int] = []
    steps: list[Step] = []
    consts: dict[int, int] = {}
    forms: dict[int, int] = {}
    run_codes: list[str] = []
    run_attrs: list[int] = []
    sibling: tuple[tuple[int, ...], struct.Struct | None, int] | None = None

    def flush() -> None:
        if run_attrs:
            fmt = struct.Struct(enc.endian + "".join(run_codes))
            steps.append((0, fmt, tuple(run_attrs)))
            run_codes.clear()
            run_attrs.clear()

    for attr, form, implicit in abbrev.specs:
        forms[attr] = form
        size = form_size(form, enc)
        if size is None:
            raise ValueError(f"unknown attribute form 0x{form:x}")
        if attr == C.DW_AT_sibling and sibling is None:
            before = _merge_skip(sizes)
            sib_struct = struct.Struct(enc.endian + _STRUCT_CODE[size]) if size > 0 else None
            sibling = (before, sib_struct, form)
        sizes.append(size)
        if form == C.DW_FORM_implicit_const:
            consts[attr] = implicit
        elif form == C.DW_FORM_flag_present:
            consts[attr] = 1
        elif size > 0:
            run_codes.append(_STRUCT_CODE[size])
            run_attrs.append(attr)
        else:
            flush()
            steps.append((size, None, attr))
    flush()
    plan = Plan(_merge_skip(sizes), tuple(steps), consts, forms, sibling)
    if _native is not None:
        plan.native = _native_plan(abbrev.specs, sizes, plan)
    return plan


def _native_plan(
    specs: tuple[tuple[int, int, int], ...], sizes: list[int], plan: Plan
) -> object | None:
    """The compiled decoder's form of `plan`: values read in DIE order, put in the dict
    in the order `decode_attributes` puts them (None: the reference decodes it)."""
    attrs = [attr for attr, _, _ in specs]
    if len(set(attrs)) != len(attrs) or V_INDIRECT in sizes:
        return None  # a repeated attribute: which value wins depends on the path
    assert _native is not None
    values = tuple(
        (attr, size, 1 if form == C.DW_FORM_flag_present else implicit)
        for (attr, form, implicit), size in zip(specs, sizes, strict=True)
    )
    implicit = [i for i, (_, form, _) in enumerate(specs) if form in _IMPLICIT_FORMS]
    stored = [i for i in range(len(specs)) if i not in implicit]
    order = stored + implicit if plan.single is not None else implicit + stored
    made: object = _native.make_decode_plan(values, tuple(order))
    return made


_IMPLICIT_FORMS = frozenset({C.DW_FORM_flag_present, C.DW_FORM_implicit_const})


_Declaration = tuple[int, int, bool, tuple[tuple[int, int, int], ...]]
_DECLARATIONS: dict[_Declaration, Abbrev] = {}


def _declared(
    code: int, tag: int, has_children: bool, specs: tuple[tuple[int, int, int], ...]
) -> Abbrev:
    """The one `Abbrev` of this declaration: each unit of a program has a table of
    its own, and they repeat the same declarations under the same codes (36,660
    declarations in the 201 tables of the benchmark binary, 1,978 distinct ones),
    so the tables share them (an Abbrev is never changed, but for its plan cache,
    which is per encoding)."""
    key = (code, tag, bool(has_children), specs)
    found = _DECLARATIONS.get(key)
    if found is None:
        found = _DECLARATIONS.setdefault(key, Abbrev(code, tag, bool(has_children), specs))
    return found


def parse_abbrev_table(section: Section, offset: int) -> dict[int, Abbrev]:
    """The abbreviation table at section `offset`, by code."""
    buf = section.buf
    pos = section.check(offset, 1, "abbreviation table")
    end = section.end
    if _native is not None:
        entries: list[tuple[int, int, bool, tuple[tuple[int, int, int], ...]]] | None
        entries = _native.parse_abbrevs(buf, pos, end)
        if entries is not None:
            return {code: _declared(code, tag, kids, specs) for code, tag, kids, specs in entries}
    table: dict[int, Abbrev] = {}
    try:
        while pos < end:
            code, pos = read_uleb(buf, pos)
            if code == 0:
                return table
            if pos >= end:
                break
            tag, pos = read_uleb(buf, pos)
            has_children = buf[pos] != 0
            pos += 1
            specs: list[tuple[int, int, int]] = []
            while True:
                attr = buf[pos]  # one-byte LEB128 is the common case
                if attr < 0x80:
                    pos += 1
                else:
                    attr, pos = read_uleb(buf, pos)
                form = buf[pos]
                if form < 0x80:
                    pos += 1
                else:
                    form, pos = read_uleb(buf, pos)
                if attr == 0 and form == 0:
                    break
                implicit = 0
                if form == C.DW_FORM_implicit_const:
                    implicit, pos = read_sleb(buf, pos)
                specs.append((attr, form, implicit))
            table[code] = _declared(code, tag, has_children, tuple(specs))
    except IndexError:
        pass
    raise section.error(
        f"abbreviation table at 0x{offset:x} runs past the end of the section", offset
    )


def skip_attributes(buf: Buffer, pos: int, skip: tuple[int, ...], enc: Encoding) -> int:
    """The position after a DIE's attributes, following a skip plan."""
    for size in skip:
        if size > 0:
            pos += size
        elif size in (V_ULEB, V_SLEB):
            pos = skip_leb(buf, pos)
        elif size == V_STRING:
            pos = _find_nul(buf, pos) + 1
        elif size == V_BLOCK_ULEB:
            length, pos = read_uleb(buf, pos)
            pos += length
        elif size == V_BLOCK1:
            pos += 1 + buf[pos]
        elif size == V_BLOCK2:
            pos += 2 + int.from_bytes(buf[pos : pos + 2], byteorder(enc.endian))
        elif size == V_BLOCK4:
            pos += 4 + int.from_bytes(buf[pos : pos + 4], byteorder(enc.endian))
        elif size == V_U24:
            pos += 3
        else:  # V_INDIRECT
            form, pos = read_uleb(buf, pos)
            pos = skip_form(buf, pos, form, enc)
    return pos


def skip_form(buf: Buffer, pos: int, form: int, enc: Encoding) -> int:
    """The position after one value of `form` (used for DW_FORM_indirect)."""
    size = form_size(form, enc)
    if size is None:
        raise ValueError(f"unknown attribute form 0x{form:x}")
    if size >= 0:
        return pos + size
    return skip_attributes(buf, pos, (size,), enc)


def read_form(buf: Buffer, pos: int, form: int, enc: Encoding) -> tuple[object, int]:
    """(raw value, next position) of one value of `form`.

    Integers for numeric, reference, offset and index forms; `str` for
    DW_FORM_string; `bytes` for blocks, exprloc and data16.
    """
    size = form_size(form, enc)
    if size is None:
        raise ValueError(f"unknown attribute form 0x{form:x}")
    order = byteorder(enc.endian)
    if size >= 0:
        if form == C.DW_FORM_flag_present:
            return 1, pos
        if form == C.DW_FORM_data16:
            return bytes(buf[pos : pos + 16]), pos + 16
        return int.from_bytes(buf[pos : pos + size], order), pos + size
    if size == V_ULEB:
        return read_uleb(buf, pos)
    if size == V_SLEB:
        return read_sleb(buf, pos)
    if size == V_STRING:
        nul = _find_nul(buf, pos)
        return buf[pos:nul].decode("utf-8", "surrogateescape"), nul + 1
    if size == V_U24:
        return int.from_bytes(buf[pos : pos + 3], order), pos + 3
    if size == V_INDIRECT:
        real, pos = read_uleb(buf, pos)
        value, pos = read_form(buf, pos, real, enc)
        return IndirectValue(real, value), pos
    if size == V_BLOCK_ULEB:
        length, pos = read_uleb(buf, pos)
    else:
        width = {V_BLOCK1: 1, V_BLOCK2: 2, V_BLOCK4: 4}[size]
        length = int.from_bytes(buf[pos : pos + width], order)
        pos += width
    return bytes(buf[pos : pos + length]), pos + length


def decode_attributes(
    buf: Buffer, pos: int, plan: Plan, enc: Encoding
) -> tuple[dict[int, object], int]:
    """(attribute -> raw value, next position) for one DIE, following a decode plan."""
    if plan.native is not None and _native is not None:
        found: tuple[dict[int, object], int] | None = _native.decode(
            plan.native, buf, pos, enc.endian == "<"
        )
        if found is not None:
            return found
    single = plan.single
    if single is not None:
        run, names = single
        values: dict[int, object] = dict(zip(names, run.unpack_from(buf, pos), strict=True))
        if plan.consts:
            values.update(plan.consts)
        return values, pos + run.size
    values = dict(plan.consts) if plan.consts else {}
    for kind, fmt, attrs in plan.steps:
        if kind == 0:
            assert fmt is not None and isinstance(attrs, tuple)
            values.update(zip(attrs, fmt.unpack_from(buf, pos), strict=True))
            pos += fmt.size
        else:
            assert isinstance(attrs, int)
            if kind == V_ULEB:
                values[attrs], pos = read_uleb(buf, pos)
            elif kind == V_STRING:
                nul = _find_nul(buf, pos)
                values[attrs] = buf[pos:nul].decode("utf-8", "surrogateescape")
                pos = nul + 1
            elif kind == V_SLEB:
                values[attrs], pos = read_sleb(buf, pos)
            elif kind == V_INDIRECT:
                form, pos = read_uleb(buf, pos)
                value, pos = read_form(buf, pos, form, enc)
                values[attrs] = IndirectValue(form, value)
            else:
                values[attrs], pos = read_form(buf, pos, _FORM_OF_CLASS[kind], enc)
    return values, pos


# A representative form per variable class, for `read_form`.
_FORM_OF_CLASS = {
    V_BLOCK_ULEB: C.DW_FORM_block,
    V_BLOCK1: C.DW_FORM_block1,
    V_BLOCK2: C.DW_FORM_block2,
    V_BLOCK4: C.DW_FORM_block4,
    V_U24: C.DW_FORM_strx3,
}


def _find_nul(buf: Buffer, pos: int) -> int:
    nul = buf.find(b"\0", pos)
    if nul < 0:
        raise IndexError(f"string at buffer position {pos} is not NUL-terminated")
    return nul
