"""`DwarfReader`: the entry point to the DWARF of one ELF file.

    reader = DwarfReader.open("prog")          # or DwarfReader(ElfFile.open(...))
    unit = reader.unit_for_address(0x1234)     # via .debug_aranges, nothing else parsed
    chain = unit.inline_chain(0x1234)          # [innermost inlined call, ..., subprogram]
    row = unit.line_table().lookup(0x1234)     # LineRow: file index, line, column, ...
    path = unit.file_name(row.file)            # as llvm-symbolizer prints it

    for unit in reader.units():                # every compile unit (GSYM conversion)
        for function in unit.functions():      # subprograms with code, DIE order
            function.name, function.linkage_name, function.ranges
            for call in function.walk():       # it and its inline tree, depth first
                call.call_file_name, call.call_line, call.call_column, call.children
        table = unit.line_table()
        table.rows                             # tuples (address, file, line, column,
                                               #   is_stmt, end_sequence, discriminator)
        table.rows_in(low, high)               # LineRows of a function's range
    for die in unit.dies(): ...                # every DIE, decoded (Die: string(),
                                               #   address(), reference(), ranges())

What is parsed when: unit headers when units are listed; a unit DIE when
its attributes are asked for; a unit's top-level functions on its first
lookup, each one's inline tree on first use; a line program on first use.
Everything parsed is kept. Objects may be shared between threads: lazy
parts are published only once complete.

The reader searches no file system: files it needs besides the one it
reads are asked of callables its caller gives (model: addr2line's
`SplitDwarfLoad`), and without one it looks for nothing. Split DWARF: a
skeleton unit's `functions()` come from its split unit, in the package
or the .dwo file `load_split` gives (stackmark.dwarf.split_files; the
symbol store, `stackmark gsym` and llvm-symbolizer-stackmark give a
`SplitDwarfFinder`, which looks where llvm looks), read with the
skeleton's address table and line table; without `load_split`, or when
no file is given, a skeleton unit answers from itself alone (its line
table), as llvm does when the .dwo file is missing. dwz: names and
abstract instances moved to a supplementary file (.gnu_debugaltlink) are
read from it, when the caller gives a `load_supplementary` to ask for it
(the symbol store's looks in the user's debug-file directories,
stackmark.dwarf.supplementary); without one such references stay
unresolved, as when the file is not found. Relocatable objects (.o,
.ko): each debug section is read with its relocations applied
(`stackmark.elf_relocations`).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev, parse_abbrev_table
from stackmark.dwarf.aranges import AddressRanges, read_aranges
from stackmark.dwarf.dwp import Contributions, UnitIndex
from stackmark.dwarf.sections import Section, SectionSource
from stackmark.dwarf.split_files import SplitDwarfLoad
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.dwarf.unit import Unit, UnitHeader
from stackmark.elf import ET_REL, ElfFile
from stackmark.elf_relocations import (
    relocated_places,
    relocated_section_data,
    relocation_sections,
)
from stackmark.errors import FormatError


class DwarfReader:
    """Lazy access to the DWARF sections of one ELF file (or one .dwo file, or one
    Mach-O image: `elf` is any `SectionSource`)."""

    def __init__(
        self,
        elf: SectionSource[Any],
        *,
        is_dwo: bool = False,
        windows: Contributions | None = None,
        load_supplementary: SupplementaryLoad | None = None,
        load_split: SplitDwarfLoad | None = None,
    ):
        """`windows` narrows sections to one unit's part of a .dwp (stackmark.dwarf.dwp).
        `load_supplementary` is asked for the dwz file .gnu_debugaltlink names
        (None: no file is looked for, and references into it stay unresolved),
        `load_split` for the .dwp and .dwo files of split units (None: none is
        looked for, and a skeleton unit answers from itself alone)."""
        self.elf = elf
        self.name = elf.name
        self.endian = elf.endian
        self.is_dwo = is_dwo
        self._windows = windows or {}
        suffix = ".dwo" if is_dwo else ""
        self.info = self._section(".debug_info" + suffix)
        self.abbrev = self._section(".debug_abbrev" + suffix)
        self.debug_str = self._section(".debug_str" + suffix)
        self.str_offsets = self._section(".debug_str_offsets" + suffix)
        self.line = self._section(".debug_line" + suffix)
        self.line_str = self._section(".debug_line_str")
        self.rnglists = self._section(".debug_rnglists" + suffix)
        self.ranges = self._section(".debug_ranges")
        self.loclists = self._section(".debug_loclists" + suffix)
        self.loc = self._section(".debug_loc")
        self.debug_addr = self._section(".debug_addr")
        self.aranges = self._section(".debug_aranges")
        self._abbrev_tables: dict[int, dict[int, Abbrev]] = {}
        self._unit_offsets: list[int] | None = None
        self._units: dict[int, Unit] = {}
        self._address_ranges: AddressRanges | None = None
        self._load_split = load_split
        self._dwo_readers: dict[str, DwarfReader | None] = {}
        self._dwp: tuple[ElfFile, UnitIndex] | None = None
        self._places: dict[str, dict[int, int]] = {}
        self._dwp_loaded = False
        self._type_units: dict[int, int] | None = None
        self._supplementary: DwarfReader | None = None
        self._supplementary_loaded = False
        self._find_supplementary = load_supplementary

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        load_supplementary: SupplementaryLoad | None = None,
        load_split: SplitDwarfLoad | None = None,
    ) -> DwarfReader:
        return cls(ElfFile.open(path), load_supplementary=load_supplementary, load_split=load_split)

    def _section(self, name: str) -> Section:
        section = self.elf.section(name)
        if section is None:
            return Section.empty(name, self.name)
        elf = self.elf
        if isinstance(elf, ElfFile) and elf.e_type == ET_REL and relocation_sections(elf, section):
            # A relocatable object's addresses and cross-section offsets are
            # completed by its relocations (.rela.debug_info, ...), as llvm does.
            data = relocated_section_data(elf, section)
            return Section(name, data, 0, len(data), self.name)
        buf, start, end = self.elf.section_buffer(section)
        window = self._windows.get(name)
        if window is not None:
            offset, size = window
            if offset + size > end - start:
                raise FormatError(
                    f".debug_cu_index gives {name} 0x{offset:x} (+{size}), past its end "
                    f"({end - start} bytes)",
                    source=self.name,
                )
            start, end = start + offset, start + offset + size
        return Section(name, buf, start, end, self.name)

    def relocated_places(self, name: str) -> dict[int, int]:
        """In a relocatable object: offset of each relocated place of section `name`
        -> the index of the section its symbol is in (empty for other files)."""
        places = self._places.get(name)
        if places is None:
            elf = self.elf
            places = {}
            if isinstance(elf, ElfFile) and elf.e_type == ET_REL:
                section = elf.section(name)
                if section is not None:
                    places = relocated_places(elf, section)
            self._places[name] = places
        return places

    @property
    def has_info(self) -> bool:
        return bool(self.info)

    # -- units ----------------------------------------------------------------

    def abbrev_table(self, offset: int) -> dict[int, Abbrev]:
        table = self._abbrev_tables.get(offset)
        if table is None:
            table = self._abbrev_tables[offset] = parse_abbrev_table(self.abbrev, offset)
        return table

    def unit_offsets(self) -> list[int]:
        """Offsets of every unit in .debug_info: only each unit's length is read here,
        the rest of its header when the unit is asked for (`unit_at`)."""
        if self._unit_offsets is None:
            offsets = []
            section = self.info
            size = section.size
            cursor = section.cursor(0, self.endian)
            base = cursor.base  # positions are the buffer's: offsets are pos - base
            while cursor.pos - base < size:
                offset = cursor.pos - base
                length = cursor.u32("unit length")
                if length == 0xFFFFFFFF:
                    length = cursor.u64("64-bit unit length")
                elif length >= 0xFFFFFFF0:
                    raise section.error(f"reserved unit length 0x{length:x}", offset)
                end = cursor.pos - base + length
                if end > size:
                    raise section.error(
                        f"unit at 0x{offset:x} claims {length} bytes, past the end of the section",
                        offset,
                    )
                offsets.append(offset)
                cursor.pos = base + end
            self._unit_offsets = offsets
        return self._unit_offsets

    def unit_at(self, offset: int) -> Unit:
        """The unit whose header starts at .debug_info `offset`."""
        unit = self._units.get(offset)
        if unit is None:
            unit = self._units[offset] = Unit(self, UnitHeader(self.info, offset, self.endian))
        return unit

    def all_units(self) -> Iterator[Unit]:
        """Every unit in .debug_info, in order (compile, partial, skeleton, type units)."""
        for offset in self.unit_offsets():
            yield self.unit_at(offset)

    def units(self) -> Iterator[Unit]:
        """The compile units (including skeletons; not type or partial units), in order."""
        for unit in self.all_units():
            if unit.unit_type in (C.DW_UT_compile, C.DW_UT_skeleton, C.DW_UT_split_compile):
                yield unit

    def type_unit_die(self, signature: int) -> int | None:
        """The .debug_info offset of the type DIE of the type unit with `signature`."""
        if self._type_units is None:
            self._type_units = {}
            for unit in self.all_units():
                header = unit.header
                if header.type_signature is not None and header.type_offset is not None:
                    self._type_units[header.type_signature] = unit.offset + header.type_offset
        return self._type_units.get(signature)

    def unit_containing(self, offset: int) -> Unit | None:
        """The unit whose DIEs span .debug_info `offset`."""
        offsets = self.unit_offsets()
        i = bisect_right(offsets, offset) - 1
        if i < 0:
            return None
        unit = self.unit_at(offsets[i])
        return unit if offset < unit.header.end else None

    # -- address lookup ---------------------------------------------------------

    def address_ranges(self) -> AddressRanges:
        """llvm's merged address -> unit map (.debug_aranges plus unit ranges)."""
        if self._address_ranges is None:
            sets = read_aranges(self.aranges, self.endian) if self.aranges else []
            covered = {unit for unit, _, _ in sets}
            for offset in self.unit_offsets():
                if offset in covered:
                    continue  # no need to read the header of a unit .debug_aranges covers
                unit = self.unit_at(offset)
                if unit.unit_type in (C.DW_UT_compile, C.DW_UT_skeleton):
                    ranges = unit.ranges
                    sets.append((offset, [lo for lo, _ in ranges], [hi - lo for lo, hi in ranges]))
            self._address_ranges = AddressRanges(sets)
        return self._address_ranges

    def unit_for_address(self, address: int) -> Unit | None:
        """The compile unit covering `address`, as llvm chooses it; None when none does."""
        offset = self.address_ranges().find(address)
        if offset is None:
            return None
        try:
            unit = self.unit_at(offset)
        except FormatError:
            return None
        if unit.unit_type not in (C.DW_UT_compile, C.DW_UT_skeleton):
            return None
        return unit

    # -- supplementary files (dwz) -------------------------------------------------

    @property
    def supplementary(self) -> DwarfReader | None:
        """The supplementary object file named by `.gnu_debugaltlink` (dwz), if found.

        DW_FORM_GNU_strp_alt / DW_FORM_GNU_ref_alt (and DWARF 5's _sup forms) point
        into it. llvm-symbolizer 19 does not read it, and prints no name for functions
        whose abstract instance dwz moved there; stackmark does."""
        if not self._supplementary_loaded:
            self._supplementary = self._load_supplementary()
            self._supplementary_loaded = True
        return self._supplementary

    def _load_supplementary(self) -> DwarfReader | None:
        if self._find_supplementary is None:
            return None  # the caller gave no way to find it
        link = self.elf.section_data(".gnu_debugaltlink")
        nul = link.find(b"\0")
        if nul <= 0:
            return None
        name = link[:nul].decode("utf-8", "surrogateescape")
        elf = self._find_supplementary(name, link[nul + 1 :].hex(), self.name)
        return DwarfReader(elf) if elf is not None else None

    # -- split DWARF --------------------------------------------------------------

    def load_split_unit(self, skeleton: Unit) -> Unit | None:
        """The split unit matching `skeleton` (by DWO id), or None.

        As llvm looks: in the package of this file when `load_split` gives one
        (and then only there), else in the .dwo file the skeleton names. No
        `load_split`: None, as when no file is found."""
        load = self._load_split
        if load is None:
            return None  # the caller gave no way to find them
        dwp = self._dwp_file(load)
        if dwp is not None:
            elf, index = dwp
            contributions = (
                None if skeleton.dwo_id is None else index.contributions(skeleton.dwo_id)
            )
            if contributions is None:
                return None
            return _matching_split_unit(
                DwarfReader(elf, is_dwo=True, windows=contributions), skeleton
            )
        name = skeleton.dwo_name
        if not name:
            return None
        for elf in load.dwo_files(name, skeleton.comp_dir, self.name):
            reader = self._dwo_reader(elf)
            if reader is None:
                continue
            unit = _matching_split_unit(reader, skeleton)
            if unit is not None:
                return unit
        return None

    def _dwp_file(self, load: SplitDwarfLoad) -> tuple[ElfFile, UnitIndex] | None:
        """The package of this file (asked of `load` once) and its unit index, when
        there is one and it can be read."""
        if not self._dwp_loaded:
            elf = load.package(self.name)
            if elf is not None:
                try:
                    index = UnitIndex(elf.section_data(".debug_cu_index"), elf.endian, elf.name)
                    self._dwp = (elf, index)
                except FormatError:
                    self._dwp = None
            self._dwp_loaded = True
        return self._dwp

    def _dwo_reader(self, elf: ElfFile) -> DwarfReader | None:
        """The reader of a .dwo file `load_split` gave (one per file)."""
        if elf.name not in self._dwo_readers:
            reader: DwarfReader | None = None
            try:
                reader = DwarfReader(elf, is_dwo=True)
            except FormatError:
                reader = None
            self._dwo_readers[elf.name] = reader
        return self._dwo_readers[elf.name]


def _matching_split_unit(reader: DwarfReader, skeleton: Unit) -> Unit | None:
    """The split unit of `reader` with the skeleton's DWO id (any, when it has none),
    set to read through the skeleton's bases."""
    for unit in reader.all_units():
        if unit.unit_type in (C.DW_UT_split_compile, C.DW_UT_compile) and (
            skeleton.dwo_id is None or unit.dwo_id == skeleton.dwo_id
        ):
            unit.adopt_skeleton(skeleton)
            return unit
    return None
