"""Units of .debug_info (DWARF 5 section 7.5.1) and the values of their attributes.

A `Unit` is parsed in steps, each only when asked for: the header (when
the reader lists units), the unit DIE (bases, comp_dir, ranges), the
function tree (`functions()`, `stackmark.dwarf.functions`) and the line
table (`line_table()`, `stackmark.dwarf.lines`).

Attribute values are kept raw by the DIE decoder (see `abbrev`); the
methods here turn them into strings, addresses, DIE offsets and address
ranges by form, including the DWARF 5 indexed forms (strx, addrx,
rnglistx) through the unit's bases.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev, Encoding, IndirectValue, decode_attributes
from stackmark.dwarf.constants import ADDRX_FORMS, CONSTANT_FORMS, LOCAL_REF_FORMS, STRX_FORMS
from stackmark.dwarf.sections import Section
from stackmark.errors import FormatError

if TYPE_CHECKING:
    from stackmark.dwarf.functions import Function, FunctionIndex
    from stackmark.dwarf.lines import LineTable
    from stackmark.dwarf.unit_parts import AddressRange, ReaderView


# DWARF 5 unit headers: unit_type (u8) and address_size (u8), side by side.
_UNIT_TYPE_AND_ADDRESS_SIZE = struct.Struct("BB")



class UnitHeader:
    """The fixed part of a unit (DWARF 5 7.5.1.1-3; DWARF 2-4 7.5.1)."""

    __slots__ = (
        "abbrev_offset",
        "addr_size",
        "die_offset",
        "dwo_id",
        "end",
        "offset",
        "offset_size",
        "type_offset",
        "type_signature",
        "unit_type",
        "version",
    )

    def __init__(self, section: Section, offset: int, endian: str):
        """Parse the header at section `offset` (raises FormatError)."""
        cursor = section.cursor(offset, endian)
        length = cursor.u32("unit length")
        self.offset_size = 4
        if length == 0xFFFFFFFF:
            length = cursor.u64("64-bit unit length")
            self.offset_size = 8
        elif length >= 0xFFFFFFF0:
            raise section.error(f"reserved unit length 0x{length:x}", offset)
        self.offset = offset
        self.end = cursor.offset + length
        if self.end > section.size:
            raise section.error(
                f"unit at 0x{offset:x} claims {length} bytes, past the end of the section",
                offset,
            )
        self.version = cursor.u16("unit version")
        if not 2 <= self.version <= 5:
            raise section.error(
                f"unit at 0x{offset:x} has unsupported version {self.version}", offset
            )
        self.dwo_id: int | None = None
        self.type_signature: int | None = None
        self.type_offset: int | None = None
        if self.version >= 5:
            self.unit_type, self.addr_size = cursor.unpack(
                _UNIT_TYPE_AND_ADDRESS_SIZE, "unit type and address size"
            )
            self.abbrev_offset = cursor.uint(self.offset_size, "abbreviation offset")
            if self.unit_type in (C.DW_UT_skeleton, C.DW_UT_split_compile):
                self.dwo_id = cursor.u64("DWO id")
            elif self.unit_type in (C.DW_UT_type, C.DW_UT_split_type):
                self.type_signature = cursor.u64("type signature")
                self.type_offset = cursor.uint(self.offset_size, "type offset")
        else:
            self.unit_type = C.DW_UT_compile
            self.abbrev_offset = cursor.uint(self.offset_size, "abbreviation offset")
            self.addr_size = cursor.u8("address size")
        pos = cursor.offset
        if self.addr_size not in (2, 4, 8):
            raise section.error(
                f"unit at 0x{offset:x} has unsupported address size {self.addr_size}", offset
            )
        self.die_offset = pos
        if self.die_offset > self.end:
            raise section.error(f"unit at 0x{offset:x} is shorter than its header", offset)


class Die:
    """One debugging information entry, with its raw attribute values (see `Unit.dies`)."""

    __slots__ = ("abbrev", "depth", "offset", "unit", "values")

    def __init__(
        self, unit: Unit, offset: int, depth: int, abbrev: Abbrev, values: dict[int, object]
    ):
        self.unit = unit
        self.offset = offset
        self.depth = depth
        self.abbrev = abbrev
        self.values = values

    def __repr__(self) -> str:
        return f"<Die 0x{self.offset:x} tag 0x{self.tag:x}>"

    @property
    def tag(self) -> int:
        return self.abbrev.tag

    @property
    def has_children(self) -> bool:
        return self.abbrev.has_children

    def __contains__(self, attr: int) -> bool:
        return attr in self.values

    def form(self, attr: int) -> int | None:
        value = self.values.get(attr)
        if isinstance(value, IndirectValue):
            return value.form
        return self.abbrev.plan(self.unit.enc).forms.get(attr)

    def string(self, attr: int) -> str | None:
        return self.unit.string_attr(self.abbrev, self.values, attr)

    def address(self, attr: int) -> int | None:
        return self.unit.address_attr(self.abbrev, self.values, attr)

    def reference(self, attr: int) -> int | None:
        """The .debug_info offset a reference attribute points at."""
        return self.unit.ref_attr(self.abbrev, self.values, attr)

    def unsigned(self, attr: int) -> int | None:
        return self.unit.unsigned_attr(self.abbrev, self.values, attr)

    def ranges(self) -> list[AddressRange]:
        """Address ranges (low/high PC, else DW_AT_ranges), as llvm reads them."""
        return self.unit.die_ranges(self.abbrev, self.values)

    def high_pc(self) -> int | None:
        low = self.address(C.DW_AT_low_pc)
        return self.unit.high_pc(self.abbrev, self.values, low if low is not None else 0)


class Unit:
    """One compile (or skeleton, split, partial) unit and its lazily parsed parts."""

    def __init__(self, reader: ReaderView[Unit], header: UnitHeader):
        self.reader = reader
        self.header = header
        self.offset = header.offset
        self.version = header.version
        self.unit_type = header.unit_type
        self.info: Section = reader.info
        self.enc = Encoding(header.version, header.addr_size, header.offset_size, reader.endian)
        self._abbrevs: dict[int, Abbrev] | None = None
        self._top: dict[int, object] | None = None
        self._top_abbrev: Abbrev | None = None
        self._functions: FunctionIndex | None = None
        self._code_tables: object | None = None  # the DIE walks' per-code tables (functions.py)
        # What the GSYM converter's compiled name search reads of the unit
        # (formats/gsym/dwarf_walk.py); False: the unit is left to the reference.
        self._name_scope: object | None = None
        self._line_table: LineTable | None = None
        self._line_table_loaded = False
        # Bases and sections for indexed forms; a skeleton's split unit
        # overrides them with the skeleton's (see `adopt_skeleton`).
        self.skeleton: Unit | None = None
        self._split: Unit | None = None
        self._split_loaded = False
        self._addr_base: int | None = None
        self._str_offsets_base: int | None = None
        self._rnglists_base: int | None = None
        self._ranges_base = 0
        self._base_address: int | None = None

    def __repr__(self) -> str:
        return f"<Unit 0x{self.offset:x} v{self.version} type {self.unit_type}>"

    # -- the unit DIE ------------------------------------------------------------

    @property
    def abbrevs(self) -> dict[int, Abbrev]:
        if self._abbrevs is None:
            self._abbrevs = self.reader.abbrev_table(self.header.abbrev_offset)
        return self._abbrevs

    def die(self, offset: int) -> tuple[Abbrev | None, dict[int, object], int]:
        """(abbreviation, raw attribute values, offset after the attributes) of the DIE at
        section `offset`; (None, {}, offset+n) for a null entry."""
        if not self.header.die_offset <= offset < self.header.end:
            raise self.info.error(
                f"DIE offset 0x{offset:x} lies outside its unit "
                f"(0x{self.offset:x}-0x{self.header.end:x})",
                offset,
            )
        buf = self.info.buf
        base = self.info.start
        try:
            code, pos = read_uleb(buf, base + offset)
            if code == 0:
                return None, {}, pos - base
            abbrev = self.abbrevs.get(code)
            if abbrev is None:
                raise self.info.error(
                    f"DIE at 0x{offset:x} uses unknown abbreviation {code}", offset
                )
            values, pos = decode_attributes(buf, pos, abbrev.plan(self.enc), self.enc)
        except (IndexError, struct.error, ValueError) as exc:
            raise self.info.error(f"malformed DIE at 0x{offset:x} ({exc})", offset) from None
        if pos - base > self.header.end:
            raise self.info.error(f"DIE at 0x{offset:x} runs past the end of its unit", offset)
        return abbrev, values, pos - base

    def dies(self) -> Iterator[Die]:
        """Every DIE of the unit in order, with its depth (null entries are not yielded).

        A plain sequential walk that decodes everything; the function tree
        (`functions`) uses the faster, selective walks instead."""
        offset = self.header.die_offset
        depth = 0
        while offset < self.header.end:
            abbrev, values, after = self.die(offset)
            if abbrev is None:
                depth -= 1
                if depth <= 0:
                    return
            else:
                yield Die(self, offset, depth, abbrev, values)
                if abbrev.has_children:
                    depth += 1
                elif depth == 0:
                    return
            offset = after

    def _load_top(self) -> None:
        abbrev, values, _ = self.die(self.header.die_offset)
        if abbrev is None:
            raise self.info.error(f"unit at 0x{self.offset:x} has no unit DIE", self.offset)
        self._top = values
        self._top_abbrev = abbrev

    @property
    def top(self) -> dict[int, object]:
        """Raw attributes of the unit DIE."""
        if self._top is None:
            self._load_top()
        assert self._top is not None
        return self._top

    @property
    def top_abbrev(self) -> Abbrev:
        if self._top_abbrev is None:
            self._load_top()
        assert self._top_abbrev is not None
        return self._top_abbrev

    @property
    def tag(self) -> int:
        return self.top_abbrev.tag

    def top_form(self, attr: int) -> int | None:
        return self.top_abbrev.plan(self.enc).forms.get(attr)

    @property
    def name(self) -> str | None:
        return self.string_attr(self.top_abbrev, self.top, C.DW_AT_name)

    @property
    def comp_dir(self) -> str | None:
        """DW_AT_comp_dir (a split unit uses its skeleton's)."""
        if self.skeleton is not None:
            return self.skeleton.comp_dir
        return self.string_attr(self.top_abbrev, self.top, C.DW_AT_comp_dir)

    @property
    def producer(self) -> str | None:
        return self.string_attr(self.top_abbrev, self.top, C.DW_AT_producer)

    @property
    def dwo_name(self) -> str | None:
        """DW_AT_dwo_name (DWARF 5) or DW_AT_GNU_dwo_name of a skeleton unit."""
        for attr in (C.DW_AT_dwo_name, C.DW_AT_GNU_dwo_name):
            if attr in self.top:
                return self.string_attr(self.top_abbrev, self.top, attr)
        return None

    @property
    def dwo_id(self) -> int | None:
        if self.header.dwo_id is not None:
            return self.header.dwo_id
        value = self.top.get(C.DW_AT_GNU_dwo_id)
        return value if isinstance(value, int) else None

    @property
    def is_skeleton(self) -> bool:
        return self.unit_type == C.DW_UT_skeleton or (
            self.version < 5 and self.dwo_name is not None and self.skeleton is None
        )

    # -- bases ---------------------------------------------------------------

    @property
    def addr_base(self) -> int:
        if self._addr_base is None:
            value = self.top.get(C.DW_AT_addr_base, self.top.get(C.DW_AT_GNU_addr_base, 0))
            self._addr_base = value if isinstance(value, int) else 0
        return self._addr_base

    @property
    def str_offsets_base(self) -> int:
        if self._str_offsets_base is None:
            value = self.top.get(C.DW_AT_str_offsets_base)
            if isinstance(value, int):
                self._str_offsets_base = value
            elif self.reader.is_dwo and self.version >= 5:
                # A split unit's contribution starts after the table header.
                self._str_offsets_base = 8 if self.header.offset_size == 4 else 16
            else:
                self._str_offsets_base = 0
        return self._str_offsets_base

    @property
    def rnglists_base(self) -> int:
        if self._rnglists_base is None:
            value = self.top.get(C.DW_AT_rnglists_base)
            if isinstance(value, int):
                self._rnglists_base = value
            elif self.reader.is_dwo and self.version >= 5:
                self._rnglists_base = 12 if self.header.offset_size == 4 else 20
            else:
                self._rnglists_base = 0
        return self._rnglists_base

    @property
    def base_address(self) -> int:
        """The unit's base address for range and location lists (its DW_AT_low_pc)."""
        if self._base_address is None:
            if self.skeleton is not None:
                self._base_address = self.skeleton.base_address
            else:
                low = self.address_attr(self.top_abbrev, self.top, C.DW_AT_low_pc)
                self._base_address = low if low is not None else 0
        return self._base_address

    # -- attribute values -------------------------------------------------------

    def string_attr(self, abbrev: Abbrev, values: dict[int, object], attr: int) -> str | None:
        """The string value of `attr`, whatever its string form; None when absent."""
        value = values.get(attr)
        if value is None:
            return None
        form = abbrev.plan(self.enc).forms[attr]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        return self.string_value(form, value)

    def string_value(self, form: int, value: object) -> str | None:
        if isinstance(value, str):
            return value
        if not isinstance(value, int):
            return None
        if form == C.DW_FORM_strp:
            return self.reader.debug_str.cstring(value)
        if form == C.DW_FORM_line_strp:
            return self.reader.line_str.cstring(value)
        if form in STRX_FORMS:
            return self.reader.debug_str.cstring(self._str_offset(value))
        if form in (C.DW_FORM_GNU_strp_alt, C.DW_FORM_strp_sup):
            alt = self.reader.supplementary
            return alt.debug_str.cstring(value) if alt is not None else None
        return None

    def _str_offset(self, index: int) -> int:
        size = self.header.offset_size
        table = self.reader.str_offsets
        where = self.str_offsets_base + index * size
        return table.uint(where, size, self.enc.endian, f"string offset #{index}")

    def address_attr(self, abbrev: Abbrev, values: dict[int, object], attr: int) -> int | None:
        """The address value of `attr` (DW_FORM_addr or an addrx form)."""
        value = values.get(attr)
        if value is None:
            return None
        form = abbrev.plan(self.enc).forms[attr]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        if not isinstance(value, int):
            return None
        if form in ADDRX_FORMS:
            return self.indexed_address(value)
        return value

    def indexed_address(self, index: int) -> int:
        """Entry `index` of this unit's .debug_addr contribution."""
        size = self.header.addr_size
        section = self.addr_section
        where = self.addr_base + index * size
        return section.uint(where, size, self.enc.endian, f"address #{index}")

    @property
    def addr_section(self) -> Section:
        if self.skeleton is not None:
            return self.skeleton.reader.debug_addr
        return self.reader.debug_addr

    def ref_target(
        self, abbrev: Abbrev, values: dict[int, object], attr: int
    ) -> tuple[ReaderView[Unit], int] | None:
        """(reader, .debug_info offset) a reference attribute points at, following
        references into a supplementary (dwz) file; None when it cannot be followed."""
        value = values.get(attr)
        if value is None:
            return None
        form = abbrev.plan(self.enc).forms[attr]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        if not isinstance(value, int):
            return None
        if form in (C.DW_FORM_GNU_ref_alt, C.DW_FORM_ref_sup4, C.DW_FORM_ref_sup8):
            alt = self.reader.supplementary
            return (alt, value) if alt is not None else None
        target = self.ref_attr(abbrev, values, attr)
        return (self.reader, target) if target is not None else None

    def ref_attr(self, abbrev: Abbrev, values: dict[int, object], attr: int) -> int | None:
        """The .debug_info offset a reference attribute points at (same file), or None.

        A type signature (DW_FORM_ref_sig8) leads to its type unit's type DIE."""
        value = values.get(attr)
        if value is None:
            return None
        form = abbrev.plan(self.enc).forms[attr]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        if not isinstance(value, int):
            return None
        if form in LOCAL_REF_FORMS:
            return self.offset + value
        if form == C.DW_FORM_ref_addr:
            return value
        if form == C.DW_FORM_ref_sig8:
            return self.reader.type_unit_die(value)
        return None

    def unsigned_attr(self, abbrev: Abbrev, values: dict[int, object], attr: int) -> int | None:
        value = values.get(attr)
        if isinstance(value, IndirectValue):
            value = value.value
        return value if isinstance(value, int) else None

    def high_pc(self, abbrev: Abbrev, values: dict[int, object], low: int) -> int | None:
        """DW_AT_high_pc as an address: an offset from `low` when it has a constant form."""
        value = values.get(C.DW_AT_high_pc)
        if value is None:
            return None
        form = abbrev.plan(self.enc).forms[C.DW_AT_high_pc]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        if not isinstance(value, int):
            return None
        if form in CONSTANT_FORMS:
            return low + value
        if form in ADDRX_FORMS:
            return self.indexed_address(value)
        return value

    def die_ranges(self, abbrev: Abbrev, values: dict[int, object]) -> list[AddressRange]:
        """The address ranges of a DIE, as llvm reads them: low/high PC first, else DW_AT_ranges."""
        forms = abbrev.plan(self.enc).forms
        low = values.get(C.DW_AT_low_pc)
        if low is not None:
            form = forms[C.DW_AT_low_pc]
            if form != C.DW_FORM_addr:
                low = self.address_attr(abbrev, values, C.DW_AT_low_pc)
            high = values.get(C.DW_AT_high_pc)
            if isinstance(low, int) and high is not None:
                form = forms[C.DW_AT_high_pc]
                if isinstance(high, int) and form in CONSTANT_FORMS:
                    return [(low, low + high)]
                high = self.high_pc(abbrev, values, low)
                if high is not None:
                    return [(low, high)]
        value = values.get(C.DW_AT_ranges)
        if value is None:
            return []
        form = forms[C.DW_AT_ranges]
        if isinstance(value, IndirectValue):
            form, value = value.form, value.value
        if not isinstance(value, int):
            return []
        from stackmark.dwarf.ranges import read_ranges

        return read_ranges(self, form, value)

    @property
    def ranges(self) -> list[AddressRange]:
        """The address ranges of the whole unit (from its unit DIE)."""
        if self.skeleton is not None:
            return self.skeleton.ranges
        return self.die_ranges(self.top_abbrev, self.top)

    # -- split DWARF ------------------------------------------------------------

    def adopt_skeleton(self, skeleton: Unit) -> None:
        """Make this split unit read addresses and ranges through its skeleton's bases."""
        self.skeleton = skeleton
        self._addr_base = skeleton.addr_base
        gnu_ranges_base = skeleton.top.get(C.DW_AT_GNU_ranges_base)
        if isinstance(gnu_ranges_base, int):
            self._ranges_base = gnu_ranges_base

    @property
    def split_unit(self) -> Unit | None:
        """For a skeleton unit, the full unit in its .dwo file (None when it cannot be found)."""
        if not self._split_loaded:
            split = self.reader.load_split_unit(self) if self.is_skeleton else None
            self._split = split
            self._split_loaded = True  # after the result: another thread may be asking
        return self._split

    @property
    def code_unit(self) -> Unit:
        """The unit whose DIEs describe the code: the split unit of a skeleton, else self."""
        split = self.split_unit if self.is_skeleton else None
        return split if split is not None else self

    # -- parts parsed on demand -------------------------------------------------

    def line_table(self) -> LineTable | None:
        """The unit's line table (a split unit's is its skeleton's), or None if it has none."""
        if self.skeleton is not None:
            return self.skeleton.line_table()
        if not self._line_table_loaded:
            table = None
            value = self.top.get(C.DW_AT_stmt_list)
            if isinstance(value, IndirectValue):
                value = value.value
            if isinstance(value, int):
                from stackmark.dwarf.lines import parse_line_table

                table = parse_line_table(self.reader, value, self.header.addr_size, self.comp_dir)
            self._line_table = table
            self._line_table_loaded = True  # after the table: another thread may be asking
        return self._line_table

    def function_index(self) -> FunctionIndex:
        """The unit's functions with code; inline trees are parsed when first needed."""
        if self._functions is None:
            code_unit = self.code_unit
            if code_unit is not self:
                self._functions = code_unit.function_index()
            else:
                from stackmark.dwarf.functions import build_function_index

                self._functions = build_function_index(self)
        return self._functions

    def functions(self) -> list[Function]:
        """Subprograms with code, in DIE order; inlined calls hang off `Function.children`."""
        return self.function_index().functions

    def inline_chain(self, address: int) -> list[Function]:
        """The subroutines containing `address`, innermost (deepest inlined call) first,
        ending with the subprogram; empty when no subprogram covers it (llvm's rules)."""
        return self.function_index().chain_at(address)

    def file_name(self, index: int, *, relative: bool = False) -> str | None:
        """The path of file `index` of the unit's line table, as llvm-symbolizer prints it
        (`relative`: without the compilation directory, as for `--relativenames`)."""
        table = self.line_table()
        return table.file_name(index, relative=relative) if table is not None else None


def check_unit_end(unit: Unit, pos: int) -> None:
    if pos > unit.header.end:
        raise FormatError(
            f"{unit.info.name}: DIE data runs past the end of the unit at 0x{unit.offset:x}",
            offset=pos,
            source=unit.info.source,
        )
