"""The local variables of the function at an address, as llvm-symbolizer's FRAME lists them.

HWASan asks its symbolizer `FRAME "module" 0xOFFSET` to describe the stack
frame a bad access hit: for every variable and parameter of the innermost
subroutine (a subprogram, or an inlined call) at the address, and of the
blocks and calls nested in it, the function it belongs to, its name, where
it is declared, its offset from the frame base, its size and its memory
tag offset. llvm (DWARFContext::getLocalsForAddress) reads them so:

* the subroutine is the innermost one whose ranges hold the address; its
  whole subtree is walked, every child whatever its address;
* a DW_TAG_variable or DW_TAG_formal_parameter is a local (its own
  children are not walked); an inlined call's children belong to the
  function its DW_AT_abstract_origin names, others to the enclosing one;
* the function name is the short name (DW_AT_name, through
  specification/origin links) of the subroutine they belong to;
* the frame offset is the SLEB128 of the first location expression
  (DW_AT_location: an expression, or each entry of a location list, in
  order) that is `DW_OP_fbreg N`, or `DW_OP_bregR N` when the
  subroutine's DW_AT_frame_base is `DW_OP_regR`, optionally followed by
  `DW_OP_deref`;
* DW_AT_LLVM_tag_offset is read from the DIE itself; the name, type,
  declaration file and line from its DW_AT_abstract_origin when it has
  one (one step, no further);
* the size is that of the type: DW_AT_byte_size, a pointer's size for
  pointers and references, the base type's through typedefs and
  qualifiers, and for arrays the element size times each subrange's
  DW_AT_count or upper - lower + 1 (bounds read as signed constants of
  their form's width, as llvm reads them).

Each `Local` keeps None where llvm prints `??`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from stackmark.binary import read_sleb_lenient, read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev, IndirectValue
from stackmark.dwarf.constants import CONSTANT_FORMS
from stackmark.dwarf.functions import find_recursively
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.sections import byteorder
from stackmark.dwarf.unit import Unit
from stackmark.errors import FormatError
from stackmark.plain import Record

DW_AT_LLVM_tag_offset = 0x3E03
DW_OP_deref = 0x06
DW_OP_reg0, DW_OP_reg31 = 0x50, 0x6F
DW_OP_breg0 = 0x70
DW_OP_fbreg = 0x91
DW_TAG_restrict_type = 0x37
DW_TAG_immutable_type = 0x4B
DW_TAG_template_alias = 0x4303

_MASK64 = (1 << 64) - 1
_MAX_TYPE_DEPTH = 64  # a longer chain of typedefs and arrays is a cycle
_SIGNED_WIDTH = {C.DW_FORM_data1: 8, C.DW_FORM_data2: 16, C.DW_FORM_data4: 32, C.DW_FORM_data8: 64}
_QUALIFIERS = frozenset(
    {
        C.DW_TAG_const_type,
        C.DW_TAG_volatile_type,
        DW_TAG_restrict_type,
        C.DW_TAG_typedef,
        DW_TAG_immutable_type,
        DW_TAG_template_alias,
    }
)
_POINTERS = frozenset(
    {C.DW_TAG_pointer_type, C.DW_TAG_reference_type, C.DW_TAG_rvalue_reference_type}
)

_Entry = tuple[Unit, Abbrev, dict[int, object], int]
"""A DIE: its unit, abbreviation, attribute values and .debug_info offset."""


class Local(Record):
    """One variable or parameter of a frame (None: unknown, printed `??`)."""

    __slots__ = _fields = (
        "function",
        "name",
        "decl_file",
        "decl_line",
        "frame_offset",
        "size",
        "tag_offset",
    )
    function: str | None
    name: str | None
    decl_file: str | None
    decl_line: int
    frame_offset: int | None
    size: int | None
    tag_offset: int | None

    def __init__(
        self,
        function: str | None,
        name: str | None,
        decl_file: str | None,
        decl_line: int,
        frame_offset: int | None,
        size: int | None,
        tag_offset: int | None,
    ) -> None:
        self.function = function
        self.name = name
        self.decl_file = decl_file
        self.decl_line = decl_line
        self.frame_offset = frame_offset
        self.size = size
        self.tag_offset = tag_offset


def frame_locals(reader: DwarfReader, address: int) -> list[Local]:
    """The locals of the innermost subroutine at `address` (empty when none covers it)."""
    unit = reader.unit_for_address(address)
    if unit is None:
        return []
    code = unit.code_unit
    chain = code.inline_chain(address)
    if not chain:
        return []
    root = chain[0].offset
    abbrev, values, _ = code.die(root)
    if abbrev is None:
        return []
    found: list[Local] = []
    # The subroutine the children at each depth belong to (llvm passes it down).
    owners: list[_Entry] = [(code, abbrev, values, root)]
    for depth, die_abbrev, die_values, _offset in _subtree(code, root):
        del owners[depth + 1 :]
        owner = owners[depth]
        if depth > 0 and die_abbrev.tag in (C.DW_TAG_variable, C.DW_TAG_formal_parameter):
            found.append(_local(code, owner, die_abbrev, die_values))
            owners.append(owner)  # its children are not walked (see _subtree)
            continue
        inlined = die_abbrev.tag == C.DW_TAG_inlined_subroutine
        child_owner = _origin(code, die_abbrev, die_values) if inlined else None
        owners.append(child_owner or owner)
    return found


def _subtree(unit: Unit, root: int) -> Iterator[tuple[int, Abbrev, dict[int, object], int]]:
    """(depth below `root`, abbreviation, values, offset) for `root` and its descendants,
    in order, leaving out the subtrees of variables and parameters (llvm does not walk
    them)."""
    offset = root
    depth = 0
    skip_below: int | None = None  # inside a variable's subtree: deeper than this
    while offset < unit.header.end:
        here = offset
        abbrev, values, offset = unit.die(offset)
        if abbrev is None:
            depth -= 1
            if depth <= 0:
                return
            continue
        if skip_below is not None and depth <= skip_below:
            skip_below = None
        if skip_below is None:
            yield depth, abbrev, values, here
            variable = abbrev.tag in (C.DW_TAG_variable, C.DW_TAG_formal_parameter)
            if variable and abbrev.has_children:
                skip_below = depth
        if abbrev.has_children:
            depth += 1
        elif depth == 0:
            return


def _origin(unit: Unit, abbrev: Abbrev, values: dict[int, object]) -> _Entry | None:
    """The DIE DW_AT_abstract_origin names (in whichever unit holds it), or None."""
    return _referenced(unit, abbrev, values, C.DW_AT_abstract_origin)


def _referenced(unit: Unit, abbrev: Abbrev, values: dict[int, object], at: int) -> _Entry | None:
    """The DIE attribute `at` refers to (in whichever unit holds it), or None."""
    found = unit.ref_target(abbrev, values, at)
    if found is None:
        return None
    reader, target = found
    target_unit = reader.unit_containing(target)
    if target_unit is None:
        return None
    try:
        target_abbrev, target_values, _ = target_unit.die(target)
    except FormatError:
        return None
    if target_abbrev is None:
        return None
    return target_unit, target_abbrev, target_values, target


def _local(code: Unit, owner: _Entry, abbrev: Abbrev, values: dict[int, object]) -> Local:
    owner_unit, owner_abbrev, owner_values, _ = owner
    function = _short_name(owner_unit, owner_abbrev, owner_values)
    frame_base_register: int | None = None
    frame_base = owner_values.get(C.DW_AT_frame_base)
    if (
        isinstance(frame_base, bytes | bytearray)
        and frame_base
        and DW_OP_reg0 <= frame_base[0] <= DW_OP_reg31
    ):
        frame_base_register = frame_base[0] - DW_OP_reg0
    frame_offset = None
    for expression in _location_expressions(code, abbrev, values):
        frame_offset = _frame_offset(expression, frame_base_register)
        if frame_offset is not None:
            break
    tag_offset = code.unsigned_attr(abbrev, values, DW_AT_LLVM_tag_offset)
    unit, die_abbrev, die_values, _ = _origin(code, abbrev, values) or (code, abbrev, values, 0)
    name = unit.string_attr(die_abbrev, die_values, C.DW_AT_name)
    size = None
    type_die = _type_of(unit, die_abbrev, die_values)
    if type_die is not None:
        size = _type_size(type_die, code.header.addr_size, 0)
    decl_file = None
    file_index = unit.unsigned_attr(die_abbrev, die_values, C.DW_AT_decl_file)
    if file_index is not None:
        decl_file = code.file_name(file_index) or None  # the code unit's table, as llvm does
    decl_line = unit.unsigned_attr(die_abbrev, die_values, C.DW_AT_decl_line) or 0
    return Local(function, name, decl_file, decl_line, frame_offset, size, tag_offset)


def _short_name(unit: Unit, abbrev: Abbrev, values: dict[int, object]) -> str | None:
    if abbrev.tag not in (C.DW_TAG_subprogram, C.DW_TAG_inlined_subroutine):
        return None
    found = find_recursively(unit, abbrev, values, (C.DW_AT_name,))
    if found is None:
        return None
    name_unit, name_abbrev, name_values, attr = found
    return name_unit.string_attr(name_abbrev, name_values, attr)


def _frame_offset(expression: bytes, register: int | None) -> int | None:
    """N when `expression` is DW_OP_fbreg N (or DW_OP_breg<frame base register> N),
    alone or followed by DW_OP_deref."""
    if not expression:
        return None
    op = expression[0]
    if op != DW_OP_fbreg and not (register is not None and op == DW_OP_breg0 + register):
        return None
    value, end = read_sleb_lenient(expression, 1, len(expression))
    if end == len(expression) or (end + 1 == len(expression) and expression[end] == DW_OP_deref):
        return value
    return None


# --- location lists -------------------------------------------------------------------


def _location_expressions(unit: Unit, abbrev: Abbrev, values: dict[int, object]) -> list[bytes]:
    """The expressions of DW_AT_location: one, or each entry of its location list."""
    value = values.get(C.DW_AT_location)
    if value is None:
        return []
    form = abbrev.plan(unit.enc).forms[C.DW_AT_location]
    if isinstance(value, IndirectValue):
        form, value = value.form, value.value
    if isinstance(value, bytes | bytearray):
        return [bytes(value)]
    if not isinstance(value, int):
        return []
    try:
        if form == C.DW_FORM_loclistx:
            return _loclist(unit, _loclist_offset(unit, value))
        if form == C.DW_FORM_sec_offset or (
            unit.version < 4 and form in (C.DW_FORM_data4, C.DW_FORM_data8)
        ):
            if unit.version >= 5:
                return _loclist(unit, value)
            return _debug_loc(unit, value)
    except (FormatError, IndexError, struct.error):
        return []  # a damaged list: no frame offset, as llvm gives none
    return []


def _loclist_offset(unit: Unit, index: int) -> int:
    section = unit.reader.loclists
    size = unit.header.offset_size
    base = unit.top.get(C.DW_AT_loclists_base)
    if not isinstance(base, int):
        base = 12 if size == 4 else 20  # past the table header, for a split unit
    relative = section.uint(base + index * size, size, unit.enc.endian, f"location list #{index}")
    return base + relative


def _debug_loc(unit: Unit, offset: int) -> list[bytes]:
    """.debug_loc (DWARF 2-4): (start, end) address pairs, each followed by a 2-byte
    length and an expression; (0, 0) ends the list, (max, X) sets the base."""
    section = unit.reader.loc
    size = unit.header.addr_size
    order = byteorder(unit.enc.endian)
    max_address = (1 << (8 * size)) - 1
    found: list[bytes] = []
    pos = offset
    while True:
        raw = section.bytes_at(pos, 2 * size, "location list entry")
        start = int.from_bytes(raw[:size], order)
        end = int.from_bytes(raw[size:], order)
        pos += 2 * size
        if start == 0 and end == 0:
            return found
        if start == max_address:
            continue
        length = int.from_bytes(section.bytes_at(pos, 2, "location expression length"), order)
        found.append(section.bytes_at(pos + 2, length, "location expression"))
        pos += 2 + length


def _loclist(unit: Unit, offset: int) -> list[bytes]:
    """.debug_loclists (DWARF 5, 7.29): the expressions of the list at `offset`."""
    section = unit.reader.loclists
    buf = section.buf
    pos = section.check(offset, 1, "location list")
    size = unit.header.addr_size
    found: list[bytes] = []

    def expression(at: int) -> tuple[bytes, int]:
        length, at = read_uleb(buf, at)
        if at + length > section.end:
            raise section.error("location expression runs past the section", at - section.start)
        return bytes(buf[at : at + length]), at + length

    while pos < section.end:
        kind = buf[pos]
        pos += 1
        if kind == C.DW_LLE_end_of_list:
            return found
        if kind == C.DW_LLE_base_addressx:
            _, pos = read_uleb(buf, pos)
            continue
        if kind == C.DW_LLE_base_address:
            pos += size
            continue
        if kind in (C.DW_LLE_startx_endx, C.DW_LLE_startx_length, C.DW_LLE_offset_pair):
            _, pos = read_uleb(buf, pos)
            _, pos = read_uleb(buf, pos)
        elif kind == C.DW_LLE_start_end:
            pos += 2 * size
        elif kind == C.DW_LLE_start_length:
            _, pos = read_uleb(buf, pos + size)
        elif kind != C.DW_LLE_default_location:
            at = pos - 1 - section.start
            raise section.error(f"unknown location list entry kind 0x{kind:x}", at)
        value, pos = expression(pos)
        found.append(value)
    raise section.error(f"location list at 0x{offset:x} has no end marker", offset)


# --- type sizes --------------------------------------------------------------------------


def _type_of(unit: Unit, abbrev: Abbrev, values: dict[int, object]) -> _Entry | None:
    """The DIE DW_AT_type names, or None."""
    return _referenced(unit, abbrev, values, C.DW_AT_type)


def _type_size(entry: _Entry, pointer_size: int, depth: int) -> int | None:
    """The size in bytes of a type DIE, by llvm's rules (see the module docstring)."""
    if depth > _MAX_TYPE_DEPTH:
        return None
    unit, abbrev, values, offset = entry
    byte_size = _unsigned_constant(unit, abbrev, values, C.DW_AT_byte_size)
    if byte_size is not None:
        return byte_size
    tag = abbrev.tag
    if tag in _POINTERS:
        return pointer_size
    if tag == C.DW_TAG_ptr_to_member_type:
        base = _type_of(unit, abbrev, values)
        if base is not None and base[1].tag == C.DW_TAG_subroutine_type:
            return 2 * pointer_size
        return pointer_size
    if tag in _QUALIFIERS:
        base = _type_of(unit, abbrev, values)
        return _type_size(base, pointer_size, depth + 1) if base is not None else None
    if tag == C.DW_TAG_array_type:
        base = _type_of(unit, abbrev, values)
        if base is None:
            return None
        size = _type_size(base, pointer_size, depth + 1)
        if size is None:
            return None
        for depth_below, child_abbrev, child_values, _ in _subtree(unit, offset):
            if depth_below != 1 or child_abbrev.tag != C.DW_TAG_subrange_type:
                continue
            count = _unsigned_constant(unit, child_abbrev, child_values, C.DW_AT_count)
            if count is not None:
                size = (size * count) & _MASK64
            upper = _signed_constant(unit, child_abbrev, child_values, C.DW_AT_upper_bound)
            if upper is not None:
                lower = _signed_constant(unit, child_abbrev, child_values, C.DW_AT_lower_bound)
                size = (size * (upper - (lower or 0) + 1)) & _MASK64
        return size
    return None


def _unsigned_constant(
    unit: Unit, abbrev: Abbrev, values: dict[int, object], attr: int
) -> int | None:
    value = values.get(attr)
    if value is None:
        return None
    form = abbrev.plan(unit.enc).forms[attr]
    if isinstance(value, IndirectValue):
        form, value = value.form, value.value
    if not isinstance(value, int) or form not in CONSTANT_FORMS or form == C.DW_FORM_sdata:
        return None  # llvm reads no unsigned constant from DW_FORM_sdata
    return value & _MASK64


def _signed_constant(
    unit: Unit, abbrev: Abbrev, values: dict[int, object], attr: int
) -> int | None:
    value = values.get(attr)
    if value is None:
        return None
    form = abbrev.plan(unit.enc).forms[attr]
    if isinstance(value, IndirectValue):
        form, value = value.form, value.value
    if not isinstance(value, int) or form not in CONSTANT_FORMS:
        return None
    width = _SIGNED_WIDTH.get(form)
    if width is not None and value >= 1 << (width - 1):
        return value - (1 << width)
    if form == C.DW_FORM_udata and value >= 1 << 63:
        return None
    return value


