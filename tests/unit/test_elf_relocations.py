"""Relocations of ET_REL files (stackmark.elf_relocations), on hand-built objects.

Each object is a big-endian ELF64 s390x file (EM_S390 = 22) or a
little-endian x86-64 one, laid out by `_object` below: the null section,
.text, .debug_info (the target), .symtab, .strtab, the relocation
section, .shstrtab. The expected bytes are worked out in the comments.
"""

from __future__ import annotations

import struct

import pytest

from stackmark.elf import ElfFile
from stackmark.elf_relocations import relocated_section_data
from stackmark.errors import FormatError

EM_X86_64, EM_S390 = 62, 22
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_REL = 1, 2, 3, 4, 9
STT_SECTION, STT_FUNC = 3, 2


def _object(
    endian: str,
    machine: int,
    relocations: list[tuple[int, int, int, int]],
    *,
    rel_type: int = SHT_RELA,
    target: bytes = bytes(16),
    e_type: int = 1,
) -> bytes:
    """An ELF64 object with .text (0x40 bytes), .debug_info (`target`) and its
    relocations (r_offset, symbol index, r_type, r_addend).

    Symbols: 0 null, 1 the section symbol of .text (value 0), 2 `f`, a
    function at .text+0x20."""
    strtab = b"\0f\0"
    symtab = bytes(24)
    symtab += struct.pack(f"{endian}IBBHQQ", 0, STT_SECTION, 0, 1, 0, 0)
    symtab += struct.pack(f"{endian}IBBHQQ", 1, 0x10 | STT_FUNC, 0, 1, 0x20, 8)
    if rel_type == SHT_RELA:
        entries = b"".join(
            struct.pack(f"{endian}QQq", off, sym << 32 | typ, add)
            for off, sym, typ, add in relocations
        )
    else:
        entries = b"".join(
            struct.pack(f"{endian}QQ", off, sym << 32 | typ) for off, sym, typ, _ in relocations
        )
    rel_name = ".rela.debug_info" if rel_type == SHT_RELA else ".rel.debug_info"
    # (name, type, link, info, entsize, data)
    sections = [
        (".text", SHT_PROGBITS, 0, 0, 0, bytes(0x40)),
        (".debug_info", SHT_PROGBITS, 0, 0, 0, target),
        (".symtab", SHT_SYMTAB, 4, 2, 24, symtab),
        (".strtab", SHT_STRTAB, 0, 0, 0, strtab),
        (rel_name, rel_type, 3, 2, 24 if rel_type == SHT_RELA else 16, entries),
    ]
    names = b"\0"
    name_at = []
    for name, *_ in [*sections, (".shstrtab",)]:
        name_at.append(len(names))
        names += name.encode() + b"\0"
    sections.append((".shstrtab", SHT_STRTAB, 0, 0, 0, names))
    body = b""
    placed = []
    for *_, data in sections:
        placed.append(64 + len(body))
        body += data + bytes(-len(data) % 8)
    shoff = 64 + len(body)
    count = len(sections) + 1
    ident = b"\x7fELF" + bytes([2, 1 if endian == "<" else 2, 1, 0]) + bytes(8)
    header = ident + struct.pack(
        f"{endian}HHIQQQIHHHHHH",
        e_type,
        machine,
        1,
        0,
        0,
        shoff,
        0,
        64,
        56,
        0,
        64,
        count,
        count - 1,
    )
    table = bytes(64)
    for (_, sh_type, link, info, entsize, data), name, offset in zip(
        sections, name_at, placed, strict=True
    ):
        table += struct.pack(
            f"{endian}IIQQQQIIQQ", name, sh_type, 0, 0, offset, len(data), link, info, 1, entsize
        )
    return header + body + table


def _debug_info(data: bytes) -> bytes:
    elf = ElfFile.from_bytes(data, "hand.o")
    section = elf.section(".debug_info")
    assert section is not None
    return relocated_section_data(elf, section)


def test_s390x_absolute_and_pc_relative_relocations_by_hand() -> None:
    relocations = [
        (0, 1, 22, 0x10),  # R_390_64 at 0: .text + 0x10             = 0x10
        (8, 2, 4, 4),  # R_390_32 at 8: f + 4 = 0x20 + 4               = 0x24
        (12, 2, 5, 0),  # R_390_PC32 at 12: f + 0 - P = 0x20 - 12       = 0x14
    ]
    out = _debug_info(_object(">", EM_S390, relocations))
    assert out == bytes.fromhex("00000000000000100000002400000014")


def test_x86_64_relocations_are_written_little_endian_and_truncated() -> None:
    relocations = [
        (0, 2, 1, -0x21),  # R_X86_64_64: f - 0x21 = -1, as 8 bytes   = ff..ff
        (8, 1, 10, 0x1_0000_0007),  # R_X86_64_32: .text + 2**32 + 7, kept to 4 bytes = 7
        (12, 0, 0, 0x99),  # R_X86_64_NONE writes nothing
    ]
    out = _debug_info(_object("<", EM_X86_64, relocations, target=bytes(12) + b"\xaa" * 4))
    assert out == b"\xff" * 8 + bytes([7, 0, 0, 0]) + b"\xaa" * 4


def test_rel_entries_take_their_addend_from_the_bytes_in_place() -> None:
    # R_390_32 with SHT_REL: the place holds 0x00000008, so f + 8 = 0x28.
    target = bytes(4) + bytes.fromhex("00000008") + bytes(8)
    out = _debug_info(_object(">", EM_S390, [(4, 2, 4, 0)], rel_type=SHT_REL, target=target))
    assert out[4:8] == bytes.fromhex("00000028")


def test_files_that_are_not_relocatable_are_read_as_they_are() -> None:
    # The same entries in an ET_DYN file: a linker already applied them.
    data = _object(">", EM_S390, [(0, 1, 22, 0x10)], e_type=3)
    assert _debug_info(data) == bytes(16)


def test_unknown_relocation_type_names_file_section_and_offset() -> None:
    with pytest.raises(FormatError) as caught:
        _debug_info(_object(">", EM_S390, [(4, 1, 200, 0)]))
    message = str(caught.value)
    assert "hand.o" in message
    assert "unknown relocation type 200 for s390x at offset 0x4 of .debug_info" in message


def test_relocation_past_the_end_of_its_section_is_a_format_error() -> None:
    with pytest.raises(FormatError) as caught:
        _debug_info(_object(">", EM_S390, [(12, 1, 22, 0)]))  # 8 bytes at 12 of 16
    message = str(caught.value)
    assert "hand.o" in message
    assert "R_390_64 at offset 0xc (+8) lies outside .debug_info (16 bytes)" in message


def test_relocation_naming_a_missing_symbol_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="names symbol 7, past the end of its symbol table"):
        _debug_info(_object(">", EM_S390, [(0, 7, 22, 0)]))


EM_RISCV = 243


def test_riscv_label_differences_add_and_subtract_in_place() -> None:
    # A length written as ADD32 (f + 8 = 0x28) then SUB32 (.text + 0x10): 0x28 - 0x10 = 0x18,
    # and a ULEB128 padded to 2 bytes: SET_ULEB128 (f = 0x20) then SUB_ULEB128 (.text + 4)
    # = 0x1c, written as 0x9c 0x00.
    relocations = [
        (0, 2, 35, 8),  # R_RISCV_ADD32
        (0, 1, 39, 0x10),  # R_RISCV_SUB32
        (4, 2, 60, 0),  # R_RISCV_SET_ULEB128
        (4, 1, 61, 4),  # R_RISCV_SUB_ULEB128
    ]
    target = bytes(4) + b"\x80\x00" + bytes(10)
    out = _debug_info(_object("<", EM_RISCV, relocations, target=target))
    assert out[:6] == bytes([0x18, 0, 0, 0, 0x9C, 0x00])
