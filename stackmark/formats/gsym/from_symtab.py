"""What an ELF file gives a GSYM besides DWARF: header values and symbol-table functions.

As llvm-gsymutil's object-file step does it:

- UUID: the payload of the first GNU build-ID note in each section named
  `.note.gnu.build-id` (the last such section wins);
- base address: `p_vaddr` of the first PT_LOAD (None without program
  headers: the writer then uses the first function's address);
- text ranges: every section with SHF_EXECINSTR and a non-zero size; DWARF
  ranges and symbols that start outside them are dropped;
- functions: `.symtab` (never `.dynsym`) STT_FUNC symbols that start in a
  text range, with their raw names and `st_size` (0 allowed); an undefined
  symbol counts as address 0, so a canonical PLT entry is not a function;
  a symbol without a name (its st_name past the string table) is skipped.
"""

from __future__ import annotations

from stackmark.elf import (
    EM_ARM,
    NT_GNU_BUILD_ID,
    PT_LOAD,
    SHF_EXECINSTR,
    SHN_ABS,
    SHN_UNDEF,
    SHT_SYMTAB,
    STT_FUNC,
    ElfFile,
    iter_notes,
)
from stackmark.errors import FormatError
from stackmark.formats.gsym.creator import GsymCreator
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.ranges import Range

EM_MIPS = 8


def build_id_uuid(elf: ElfFile) -> bytes:
    uuid = b""
    for section in elf.sections:
        if section.name != ".note.gnu.build-id":
            continue
        notes = iter_notes(elf.section_data(section), elf.endian == "<", elf.name)
        try:
            first = next(notes, None)  # llvm-gsymutil reads the section's first note only
        except FormatError:
            continue  # cut short: no build ID from this section
        if first is not None:
            name, note_type, desc, _ = first
            if name.rstrip(b"\0") == b"GNU" and note_type == NT_GNU_BUILD_ID and desc:
                uuid = desc
    return uuid


def image_base_address(elf: ElfFile) -> int | None:
    for segment in elf.segments:
        if segment.type == PT_LOAD:
            return segment.vaddr
    return None


def text_ranges(elf: ElfFile) -> list[Range]:
    return [
        (s.addr, s.addr + s.size) for s in elf.sections if s.flags & SHF_EXECINSTR and s.size > 0
    ]


def add_symbol_table(creator: GsymCreator, elf: ElfFile) -> int:
    """Add a FunctionInfo per eligible `.symtab` function; returns how many."""
    section = elf.section(".symtab")
    if section is None or section.type != SHT_SYMTAB:
        return 0
    clear_thumb_bit = elf.machine in (EM_ARM, EM_MIPS)
    added = 0
    for sym in elf.symbols(".symtab"):
        if sym.type != STT_FUNC or not sym.name:
            continue  # no name (llvm: an st_name past the string table is skipped)
        # LLVM reads an undefined symbol's value as 0 (not a text address), even
        # when st_value holds a canonical PLT address.
        value = 0 if sym.shndx == SHN_UNDEF else sym.value
        if clear_thumb_bit and sym.shndx != SHN_ABS:
            value &= ~1
        if not creator.is_valid_text_address(value):
            continue
        creator.add_function(FunctionInfo(value, sym.size, creator.insert_string(sym.name)))
        added += 1
    return added
