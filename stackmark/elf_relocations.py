"""Relocations of relocatable ELF objects (ET_REL: `.o`, `ld -r` output, `.ko`).

In an ET_REL file the debug sections (and `.eh_frame`, `.sframe`) are not
final: an address such as DW_AT_low_pc, or an offset into `.debug_str`,
is written as 0 (RELA) or as the addend alone (REL), and a relocation entry
in `.rela<name>` / `.rel<name>` (sh_info = the target section) says how to
complete it. `relocated_section_data` returns a section's bytes with those
entries applied, as llvm's DWARFContext (RelocationResolver.cpp) and
objdump (bfd_simple_get_relocated_section_contents) do before decoding.

Entries (System V gABI "Relocation"):

    Elf64_Rela: u64 r_offset, u64 r_info (sym << 32 | type), i64 r_addend
    Elf64_Rel:  u64 r_offset, u64 r_info
    Elf32_Rela: u32 r_offset, u32 r_info (sym << 8 | type),  i32 r_addend
    Elf32_Rel:  u32 r_offset, u32 r_info                (addend = the bytes in place)

A relocation's value, with S the symbol's address (its section's sh_addr,
0 in an object file, plus st_value; 0 when undefined), A the addend and P
the address of the place (target sh_addr + r_offset):

    absolute      S + A         (DWARF addresses and section offsets)
    PC-relative   S + A - P     (.eh_frame's pc_begin, a v3 SFrame FDE's start)

written in the file's byte order over `size` bytes, truncated to that size
as the processor ABIs specify for data relocations. RISC-V also adds to or
subtracts from the value in place V (label differences, kept as pairs). Only the types that
data and debug sections use are known (below, from each psABI); any other
raises `FormatError`, as does an entry whose place lies outside the section.

    data = relocated_section_data(elf, elf.section(".debug_info"))
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum

from stackmark.binary import U32, read_uleb, uleb_bytes
from stackmark.elf import (
    EM_386,
    EM_AARCH64,
    EM_ARM,
    EM_RISCV,
    EM_S390,
    EM_X86_64,
    ET_REL,
    REL,
    RELA,
    SHF_EXECINSTR,
    SHN_ABS,
    SHN_COMMON,
    SHN_UNDEF,
    SHN_XINDEX,
    SHT_NOBITS,
    ElfFile,
    Section,
)
from stackmark.errors import FormatError
from stackmark.plain import FrozenRecord

SHT_RELA, SHT_REL, SHT_SYMTAB_SHNDX = 4, 9, 18
EM_PPC64 = 21


class Kind(Enum):
    """How a relocation's value is computed."""

    NONE = "none"  # nothing to write
    ABSOLUTE = "S + A"
    PC_RELATIVE = "S + A - P"
    ADD = "V + S + A"  # V: the value in place (RISC-V's label differences)
    SUB = "V - (S + A)"
    SUB6 = "V - (S + A), low 6 bits"
    SET6 = "S + A, low 6 bits"
    SET_ULEB128 = "S + A, as the ULEB128 in place"  # same length, padded
    SUB_ULEB128 = "V - (S + A), as the ULEB128 in place"


# (machine, r_type) -> (kind, bytes written, name as the psABI spells it)
_TYPES: dict[tuple[int, int], tuple[Kind, int, str]] = {
    # x86-64 psABI, table "Relocation Types"
    (EM_X86_64, 0): (Kind.NONE, 0, "R_X86_64_NONE"),
    (EM_X86_64, 1): (Kind.ABSOLUTE, 8, "R_X86_64_64"),
    (EM_X86_64, 2): (Kind.PC_RELATIVE, 4, "R_X86_64_PC32"),
    (EM_X86_64, 10): (Kind.ABSOLUTE, 4, "R_X86_64_32"),
    (EM_X86_64, 11): (Kind.ABSOLUTE, 4, "R_X86_64_32S"),
    (EM_X86_64, 17): (Kind.ABSOLUTE, 8, "R_X86_64_DTPOFF64"),  # TLS variables' locations
    (EM_X86_64, 21): (Kind.ABSOLUTE, 4, "R_X86_64_DTPOFF32"),
    (EM_X86_64, 24): (Kind.PC_RELATIVE, 8, "R_X86_64_PC64"),
    # AArch64 ELF ABI, "Static Data relocations"
    (EM_AARCH64, 0): (Kind.NONE, 0, "R_AARCH64_NONE"),
    (EM_AARCH64, 257): (Kind.ABSOLUTE, 8, "R_AARCH64_ABS64"),
    (EM_AARCH64, 258): (Kind.ABSOLUTE, 4, "R_AARCH64_ABS32"),
    (EM_AARCH64, 259): (Kind.ABSOLUTE, 2, "R_AARCH64_ABS16"),
    (EM_AARCH64, 260): (Kind.PC_RELATIVE, 8, "R_AARCH64_PREL64"),
    (EM_AARCH64, 261): (Kind.PC_RELATIVE, 4, "R_AARCH64_PREL32"),
    (EM_AARCH64, 262): (Kind.PC_RELATIVE, 2, "R_AARCH64_PREL16"),
    (EM_AARCH64, 1029): (Kind.ABSOLUTE, 8, "R_AARCH64_TLS_DTPREL"),
    # s390x ELF ABI, "Relocation Types"
    (EM_S390, 0): (Kind.NONE, 0, "R_390_NONE"),
    (EM_S390, 1): (Kind.ABSOLUTE, 1, "R_390_8"),
    (EM_S390, 3): (Kind.ABSOLUTE, 2, "R_390_16"),
    (EM_S390, 4): (Kind.ABSOLUTE, 4, "R_390_32"),
    (EM_S390, 5): (Kind.PC_RELATIVE, 4, "R_390_PC32"),
    (EM_S390, 16): (Kind.PC_RELATIVE, 2, "R_390_PC16"),
    (EM_S390, 22): (Kind.ABSOLUTE, 8, "R_390_64"),
    (EM_S390, 23): (Kind.PC_RELATIVE, 8, "R_390_PC64"),
    (EM_S390, 52): (Kind.ABSOLUTE, 4, "R_390_TLS_LDO32"),
    (EM_S390, 53): (Kind.ABSOLUTE, 8, "R_390_TLS_LDO64"),
    # i386 psABI (REL: the addend is the value in place)
    (EM_386, 0): (Kind.NONE, 0, "R_386_NONE"),
    (EM_386, 1): (Kind.ABSOLUTE, 4, "R_386_32"),
    (EM_386, 2): (Kind.PC_RELATIVE, 4, "R_386_PC32"),
    (EM_386, 32): (Kind.ABSOLUTE, 4, "R_386_TLS_LDO_32"),
    # ARM ELF ABI (REL)
    (EM_ARM, 0): (Kind.NONE, 0, "R_ARM_NONE"),
    (EM_ARM, 2): (Kind.ABSOLUTE, 4, "R_ARM_ABS32"),
    (EM_ARM, 3): (Kind.PC_RELATIVE, 4, "R_ARM_REL32"),
    (EM_ARM, 55): (Kind.ABSOLUTE, 4, "R_ARM_ABS32_NOI"),
    # 64-bit ELF V2 ABI (PowerPC), "Relocation Types"
    (EM_PPC64, 0): (Kind.NONE, 0, "R_PPC64_NONE"),
    (EM_PPC64, 1): (Kind.ABSOLUTE, 4, "R_PPC64_ADDR32"),
    (EM_PPC64, 26): (Kind.PC_RELATIVE, 4, "R_PPC64_REL32"),
    (EM_PPC64, 38): (Kind.ABSOLUTE, 8, "R_PPC64_ADDR64"),
    (EM_PPC64, 44): (Kind.PC_RELATIVE, 8, "R_PPC64_REL64"),
    (EM_PPC64, 78): (Kind.ABSOLUTE, 8, "R_PPC64_DTPREL64"),
    # RISC-V ELF psABI: lengths and line advances are written as pairs
    # (ADD of the end label, SUB of the start) so that linker relaxation
    # keeps them right.
    (EM_RISCV, 0): (Kind.NONE, 0, "R_RISCV_NONE"),
    (EM_RISCV, 1): (Kind.ABSOLUTE, 4, "R_RISCV_32"),
    (EM_RISCV, 2): (Kind.ABSOLUTE, 8, "R_RISCV_64"),
    (EM_RISCV, 33): (Kind.ADD, 1, "R_RISCV_ADD8"),
    (EM_RISCV, 34): (Kind.ADD, 2, "R_RISCV_ADD16"),
    (EM_RISCV, 35): (Kind.ADD, 4, "R_RISCV_ADD32"),
    (EM_RISCV, 36): (Kind.ADD, 8, "R_RISCV_ADD64"),
    (EM_RISCV, 37): (Kind.SUB, 1, "R_RISCV_SUB8"),
    (EM_RISCV, 38): (Kind.SUB, 2, "R_RISCV_SUB16"),
    (EM_RISCV, 39): (Kind.SUB, 4, "R_RISCV_SUB32"),
    (EM_RISCV, 40): (Kind.SUB, 8, "R_RISCV_SUB64"),
    (EM_RISCV, 51): (Kind.NONE, 0, "R_RISCV_RELAX"),
    (EM_RISCV, 52): (Kind.SUB6, 1, "R_RISCV_SUB6"),
    (EM_RISCV, 53): (Kind.SET6, 1, "R_RISCV_SET6"),
    (EM_RISCV, 54): (Kind.ABSOLUTE, 1, "R_RISCV_SET8"),
    (EM_RISCV, 55): (Kind.ABSOLUTE, 2, "R_RISCV_SET16"),
    (EM_RISCV, 56): (Kind.ABSOLUTE, 4, "R_RISCV_SET32"),
    (EM_RISCV, 57): (Kind.PC_RELATIVE, 4, "R_RISCV_32_PCREL"),
    (EM_RISCV, 60): (Kind.SET_ULEB128, 0, "R_RISCV_SET_ULEB128"),
    (EM_RISCV, 61): (Kind.SUB_ULEB128, 0, "R_RISCV_SUB_ULEB128"),
}


class Relocation(FrozenRecord):
    """One entry of a SHT_REL or SHT_RELA section, its symbol's address resolved."""

    __slots__ = _fields = __match_args__ = (
        "offset",
        "type",
        "symbol",
        "addend",
        "entry_at",
        "symbol_section",
    )
    offset: int  # r_offset: the place, relative to the target section
    type: int  # r_type, machine-specific
    symbol: int  # S: the symbol's address (0 when undefined or index 0)
    addend: int | None  # r_addend; None for SHT_REL (the addend is in place)
    entry_at: int  # file offset of the entry itself, for error messages
    symbol_section: int | None  # index of the section the symbol is in; None: none

    def __init__(
        self,
        offset: int,
        type: int,
        symbol: int,
        addend: int | None,
        entry_at: int,
        symbol_section: int | None = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "offset", offset)
        setattr_(self, "type", type)
        setattr_(self, "symbol", symbol)
        setattr_(self, "addend", addend)
        setattr_(self, "entry_at", entry_at)
        setattr_(self, "symbol_section", symbol_section)


def relocation_sections(elf: ElfFile, target: Section) -> list[Section]:
    """The SHT_REL / SHT_RELA sections of `elf` that apply to `target` (sh_info)."""
    return [
        s
        for s in elf.sections
        if s.type in (SHT_RELA, SHT_REL) and s.info == target.index and s.index != target.index
    ]


def type_name(machine: int, r_type: int) -> str:
    """The psABI name of a relocation type, or "type N" when stackmark does not know it."""
    known = _TYPES.get((machine, r_type))
    return known[2] if known else f"type {r_type}"


def relocations(elf: ElfFile, rel_section: Section) -> Iterator[Relocation]:
    """The entries of one SHT_REL/SHT_RELA section, symbol addresses resolved."""
    is_rela = rel_section.type == SHT_RELA
    entry = (RELA if is_rela else REL)[elf.is_64].compiled(elf.endian)
    entsize = rel_section.entsize or entry.size
    if entsize < entry.size:
        raise FormatError(
            f"{rel_section.name} entry size {entsize} is too small (need {entry.size})",
            offset=rel_section.offset,
            source=elf.name,
        )
    addresses, in_sections = _symbol_addresses(elf, rel_section)
    data = elf.section_data(rel_section)
    for pos in range(0, len(data) - entry.size + 1, entsize):
        fields = entry.unpack_from(data, pos)  # r_offset, r_info[, r_addend], in both classes
        r_offset, r_info = fields[0], fields[1]
        if elf.is_64:
            sym_index, r_type = r_info >> 32, r_info & 0xFFFFFFFF
        else:
            sym_index, r_type = r_info >> 8, r_info & 0xFF
        if sym_index >= len(addresses):
            raise FormatError(
                f"{rel_section.name}: relocation at 0x{r_offset:x} names symbol {sym_index}, "
                f"past the end of its symbol table ({len(addresses)} symbols)",
                offset=rel_section.offset + pos,
                source=elf.name,
            )
        addend = fields[2] if is_rela else None
        yield Relocation(
            r_offset,
            r_type,
            addresses[sym_index],
            addend,
            rel_section.offset + pos,
            in_sections[sym_index],
        )


def relocated_section_data(elf: ElfFile, section: Section) -> bytes:
    """The contents of `section` with every relocation that targets it applied.

    Files other than ET_REL, and sections no relocation section targets, read
    as `elf.section_data(section)` (the same object, not a copy).
    """
    data = elf.section_data(section)
    if elf.e_type != ET_REL:
        return data
    rel_sections = relocation_sections(elf, section)
    if not rel_sections:
        return data
    out = bytearray(data)
    order = "little" if elf.endian == "<" else "big"
    for rel_section in rel_sections:
        for reloc in relocations(elf, rel_section):
            _apply(elf, section, rel_section, reloc, out, order)
    return bytes(out)


def _apply(
    elf: ElfFile,
    section: Section,
    rel_section: Section,
    reloc: Relocation,
    out: bytearray,
    order: str,
) -> None:
    known = _TYPES.get((elf.machine, reloc.type))
    if known is None:
        raise FormatError(
            f"{rel_section.name}: unknown relocation type {reloc.type} for "
            f"{elf.machine_name} at offset 0x{reloc.offset:x} of {section.name}",
            offset=reloc.entry_at,
            source=elf.name,
        )
    kind, size, name = known
    if kind is Kind.NONE:
        return
    if kind in (Kind.SET_ULEB128, Kind.SUB_ULEB128):
        _apply_uleb128(elf, section, rel_section, reloc, out, kind, name)
        return
    if reloc.offset < 0 or reloc.offset + size > len(out):
        raise FormatError(
            f"{rel_section.name}: {name} at offset 0x{reloc.offset:x} (+{size}) lies outside "
            f"{section.name} ({len(out)} bytes)",
            offset=reloc.entry_at,
            source=elf.name,
        )
    place = slice(reloc.offset, reloc.offset + size)
    in_place = int.from_bytes(out[place], order, signed=True)  # type: ignore[arg-type]
    # REL: the addend is what the assembler left in place, signed
    addend = reloc.addend if reloc.addend is not None else in_place
    value = reloc.symbol + addend
    if kind is Kind.PC_RELATIVE:
        value -= section.addr + reloc.offset
    elif kind is Kind.ADD:
        value = in_place + value
    elif kind is Kind.SUB:
        value = in_place - value
    elif kind is Kind.SUB6:
        value = (in_place & 0xC0) | ((in_place - value) & 0x3F)
    elif kind is Kind.SET6:
        value = (in_place & 0xC0) | (value & 0x3F)
    mask = (1 << (8 * size)) - 1
    out[place] = (value & mask).to_bytes(size, order)  # type: ignore[arg-type]


def _apply_uleb128(
    elf: ElfFile,
    section: Section,
    rel_section: Section,
    reloc: Relocation,
    out: bytearray,
    kind: Kind,
    name: str,
) -> None:
    """Rewrite the ULEB128 at the place with the new value, in as many bytes as
    it had (the assembler padded it for the largest value it can take)."""
    try:
        old, end = read_uleb(out, reloc.offset)
    except IndexError:
        raise FormatError(
            f"{rel_section.name}: {name} at offset 0x{reloc.offset:x} finds no complete "
            f"ULEB128 in {section.name} ({len(out)} bytes)",
            offset=reloc.entry_at,
            source=elf.name,
        ) from None
    value = reloc.symbol + (reloc.addend or 0)
    if kind is Kind.SUB_ULEB128:
        value = old - value
    out[reloc.offset : end] = uleb_bytes(value, end - reloc.offset)


def relocated_places(elf: ElfFile, section: Section) -> dict[int, int]:
    """Offset of each relocated place of `section` -> the index of the section its
    symbol is in (places whose symbol is in none are left out).

    This is llvm's section index of a relocated address (object::SectionedAddress):
    in an object file, code addresses of different sections overlap, and a line
    table's sequences are told apart by it."""
    places: dict[int, int] = {}
    if elf.e_type != ET_REL:
        return places
    for rel_section in relocation_sections(elf, section):
        for reloc in relocations(elf, rel_section):
            if reloc.symbol_section is not None:
                places[reloc.offset] = reloc.symbol_section
    return places


def code_section_at(elf: ElfFile, address: int) -> int | None:
    """The index of the first executable section holding `address` in an object
    file (llvm's getModuleSectionIndexForAddress), or None."""
    for section in elf.sections:
        if (
            section.flags & SHF_EXECINSTR
            and section.type != SHT_NOBITS
            and section.addr <= address < section.addr + section.size
        ):
            return section.index
    return None


def _symbol_addresses(elf: ElfFile, rel_section: Section) -> tuple[list[int], list[int | None]]:
    """S for every symbol of the table a relocation section links to (sh_link),
    and the index of the section each is defined in (None: undefined, absolute).

    A defined symbol's address is its section's sh_addr plus st_value (the
    sh_addr of every section of an object file is 0, so st_value alone in
    practice); an undefined one's is 0, as in llvm and bfd.
    """
    sections = elf.sections
    if not 0 < rel_section.link < len(sections):
        raise FormatError(
            f"{rel_section.name} links to section {rel_section.link}, which is not a symbol table",
            offset=rel_section.offset,
            source=elf.name,
        )
    table = sections[rel_section.link]
    symbols = elf.symbols_of(table)
    extended: list[int] | None = None
    addresses = []
    in_sections: list[int | None] = []
    for index, symbol in enumerate(symbols):
        shndx = symbol.shndx
        if shndx == SHN_XINDEX:
            if extended is None:
                extended = _extended_indexes(elf, table)
            shndx = extended[index] if index < len(extended) else SHN_UNDEF
        if shndx in (SHN_UNDEF, SHN_COMMON):
            addresses.append(0)
            in_sections.append(None)
        elif shndx == SHN_ABS or shndx >= len(sections):
            addresses.append(symbol.value)
            in_sections.append(None)
        else:
            addresses.append(sections[shndx].addr + symbol.value)
            in_sections.append(shndx)
    return addresses, in_sections


def _extended_indexes(elf: ElfFile, table: Section) -> list[int]:
    """The SHT_SYMTAB_SHNDX words of `table`: section indexes past 0xff00."""
    for section in elf.sections:
        if section.type == SHT_SYMTAB_SHNDX and section.link == table.index:
            data = elf.section_data(section)
            words = U32[elf.endian == "<"]
            return [v for (v,) in words.iter_unpack(data[: len(data) // 4 * 4])]
    return []
