"""ELF's records, declared once in stackmark.elf, against the System V gABI's
numbers (written here by hand), the linker's own header sizes (readelf -h),
and the one note walk (`iter_notes`) on hand-built notes, as each of its
callers uses it."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from stackmark.binary import RecordLayout
from stackmark.debugger.backend import LoadedImage
from stackmark.debugger.modules import module_from_image
from stackmark.elf import (
    AUXV,
    CHDR,
    DYN,
    EHDR,
    EI_NIDENT,
    ELF_NHDR,
    PHDR,
    REL,
    RELA,
    SHDR,
    SYM,
    ElfFile,
    iter_notes,
)
from stackmark.errors import FormatError
from stackmark.formats.gsym.from_symtab import build_id_uuid
from stackmark.symbols.symtab import SymbolTable
from stackmark.unwind.core import _find_build_id
from stackmark.unwind.target import UnreadableMemory
from tests.conftest import require_tool
from tests.hostile.tiny_elf import SHF_ALLOC, SHT_NOTE, RawSection, elf_file
from tests.support.build import compile_program, run
from tests.support.sym_builds import freestanding_32bit

# Each record: its size and every field's offset, from the gABI's figures
# ("ELF Header", "Section Header", "Program Header", "Symbol Table Entry",
# "Compression Header", "Note Section", "Relocation Entries", "Dynamic Section")
# and elf.h.
GABI: dict[str, tuple[int, list[tuple[str, int]]]] = {
    "Elf64_Ehdr": (
        64,
        [
            ("e_type", 16), ("e_machine", 18), ("e_version", 20), ("e_entry", 24),
            ("e_phoff", 32), ("e_shoff", 40), ("e_flags", 48), ("e_ehsize", 52),
            ("e_phentsize", 54), ("e_phnum", 56), ("e_shentsize", 58), ("e_shnum", 60),
            ("e_shstrndx", 62),
        ],
    ),
    "Elf32_Ehdr": (
        52,
        [
            ("e_type", 16), ("e_machine", 18), ("e_version", 20), ("e_entry", 24),
            ("e_phoff", 28), ("e_shoff", 32), ("e_flags", 36), ("e_ehsize", 40),
            ("e_phentsize", 42), ("e_phnum", 44), ("e_shentsize", 46), ("e_shnum", 48),
            ("e_shstrndx", 50),
        ],
    ),
    "Elf64_Shdr": (
        64,
        [
            ("sh_name", 0), ("sh_type", 4), ("sh_flags", 8), ("sh_addr", 16),
            ("sh_offset", 24), ("sh_size", 32), ("sh_link", 40), ("sh_info", 44),
            ("sh_addralign", 48), ("sh_entsize", 56),
        ],
    ),
    "Elf32_Shdr": (
        40,
        [
            ("sh_name", 0), ("sh_type", 4), ("sh_flags", 8), ("sh_addr", 12),
            ("sh_offset", 16), ("sh_size", 20), ("sh_link", 24), ("sh_info", 28),
            ("sh_addralign", 32), ("sh_entsize", 36),
        ],
    ),
    "Elf64_Phdr": (
        56,
        [
            ("p_type", 0), ("p_flags", 4), ("p_offset", 8), ("p_vaddr", 16),
            ("p_paddr", 24), ("p_filesz", 32), ("p_memsz", 40), ("p_align", 48),
        ],
    ),
    "Elf32_Phdr": (
        32,
        [
            ("p_type", 0), ("p_offset", 4), ("p_vaddr", 8), ("p_paddr", 12),
            ("p_filesz", 16), ("p_memsz", 20), ("p_flags", 24), ("p_align", 28),
        ],
    ),
    "Elf64_Sym": (
        24,
        [
            ("st_name", 0), ("st_info", 4), ("st_other", 5), ("st_shndx", 6),
            ("st_value", 8), ("st_size", 16),
        ],
    ),
    "Elf32_Sym": (
        16,
        [
            ("st_name", 0), ("st_value", 4), ("st_size", 8), ("st_info", 12),
            ("st_other", 13), ("st_shndx", 14),
        ],
    ),
    "Elf64_Chdr": (
        24,
        [("ch_type", 0), ("ch_reserved", 4), ("ch_size", 8), ("ch_addralign", 16)],
    ),
    "Elf32_Chdr": (12, [("ch_type", 0), ("ch_size", 4), ("ch_addralign", 8)]),
    "Elf_Nhdr": (12, [("n_namesz", 0), ("n_descsz", 4), ("n_type", 8)]),
    "Elf64_Rel": (16, [("r_offset", 0), ("r_info", 8)]),
    "Elf32_Rel": (8, [("r_offset", 0), ("r_info", 4)]),
    "Elf64_Rela": (24, [("r_offset", 0), ("r_info", 8), ("r_addend", 16)]),
    "Elf32_Rela": (12, [("r_offset", 0), ("r_info", 4), ("r_addend", 8)]),
    "Elf64_Dyn": (16, [("d_tag", 0), ("d_un", 8)]),
    "Elf32_Dyn": (8, [("d_tag", 0), ("d_un", 4)]),
    "Elf64_auxv_t": (16, [("a_type", 0), ("a_val", 8)]),
    "Elf32_auxv_t": (8, [("a_type", 0), ("a_val", 4)]),
}  # fmt: skip

# Ours, and where each starts in its record (the ELF header's layouts follow e_ident).
OURS: dict[str, tuple[RecordLayout, int]] = {
    "Elf64_Ehdr": (EHDR[True], EI_NIDENT),
    "Elf32_Ehdr": (EHDR[False], EI_NIDENT),
    "Elf64_Shdr": (SHDR[True], 0),
    "Elf32_Shdr": (SHDR[False], 0),
    "Elf64_Phdr": (PHDR[True], 0),
    "Elf32_Phdr": (PHDR[False], 0),
    "Elf64_Sym": (SYM[True], 0),
    "Elf32_Sym": (SYM[False], 0),
    "Elf64_Chdr": (CHDR[True], 0),
    "Elf32_Chdr": (CHDR[False], 0),
    "Elf_Nhdr": (ELF_NHDR, 0),
    "Elf64_Rel": (REL[True], 0),
    "Elf32_Rel": (REL[False], 0),
    "Elf64_Rela": (RELA[True], 0),
    "Elf32_Rela": (RELA[False], 0),
    "Elf64_Dyn": (DYN[True], 0),
    "Elf32_Dyn": (DYN[False], 0),
    "Elf64_auxv_t": (AUXV[True], 0),
    "Elf32_auxv_t": (AUXV[False], 0),
}


@pytest.mark.parametrize("record", sorted(GABI))
def test_each_record_has_the_gabis_size_and_field_offsets_in_order(record: str) -> None:
    size, fields = GABI[record]
    layout, start = OURS[record]
    assert start + layout.size == size
    assert layout.compiled("<").size == layout.compiled(">").size == layout.size
    assert [(name, start + layout.offsets[name]) for name in layout.names] == fields


def test_e_ident_is_16_bytes() -> None:
    assert EI_NIDENT == 16


def _readelf_header(path: Path) -> dict[str, int]:
    """The ELF header's sizes and counts as readelf -h prints them."""
    text = run(["readelf", "-hW", path])
    labels = {
        "e_ehsize": "Size of this header",
        "e_phentsize": "Size of program headers",
        "e_shentsize": "Size of section headers",
        "e_phnum": "Number of program headers",
        "e_shnum": "Number of section headers",
    }
    found = {name: re.search(rf"{label}:\s+(\d+)", text) for name, label in labels.items()}
    return {name: int(match.group(1)) for name, match in found.items() if match is not None}


@pytest.mark.parametrize("is_64", [True, False], ids=["ELFCLASS64", "ELFCLASS32"])
def test_the_record_sizes_are_what_the_linker_wrote(is_64: bool) -> None:
    if is_64:
        program = compile_program("elf_records_64", ["elf_basic.c"], flags=["-O1"])
    else:
        program = freestanding_32bit()
    header = _readelf_header(program)
    assert (header["e_ehsize"], header["e_phentsize"], header["e_shentsize"]) == (
        EI_NIDENT + EHDR[is_64].size,
        PHDR[is_64].size,
        SHDR[is_64].size,
    )
    with ElfFile.open(program) as elf:  # read through them: the counts readelf gives
        assert elf.is_64 is is_64
        assert (len(elf.segments), len(elf.sections)) == (header["e_phnum"], header["e_shnum"])


_READELF_TYPES = {"NOTYPE": 0, "OBJECT": 1, "FUNC": 2, "SECTION": 3, "FILE": 4}
_READELF_BINDINGS = {"LOCAL": 0, "GLOBAL": 1, "WEAK": 2}


def _readelf_symbols(path: Path) -> list[tuple[str, int, int, int, int]]:
    """(name, value, size, type, binding) of each .symtab entry, from readelf -sW."""
    rows = []
    for line in run(["readelf", "-sW", path]).splitlines():
        fields = line.split()
        if len(fields) >= 7 and fields[0].rstrip(":").isdigit():
            name = fields[7] if len(fields) > 7 else ""
            kind, binding = _READELF_TYPES[fields[3]], _READELF_BINDINGS[fields[4]]
            if kind == _READELF_TYPES["SECTION"]:
                name = ""  # readelf prints the section's name; st_name is 0
            rows.append((name, int(fields[1], 16), int(fields[2]), kind, binding))
    return rows


@pytest.mark.parametrize(
    "target", ["s390x-linux-gnu", "i386-linux-gnu"], ids=["big-endian ELF64", "ELF32"]
)
def test_symbols_read_through_the_layouts_match_readelf(target: str) -> None:
    """A big-endian ELF64 object (the symbol table's unpacking path) and a 32-bit one."""
    obj = compile_program(
        f"elf_records_{target}.o",
        ["sym_freestanding.c"],
        compiler=require_tool("clang-19"),
        flags=[f"--target={target}", "-O1", "-c"],
    )
    expected = _readelf_symbols(obj)
    with ElfFile.open(obj) as elf:
        ours = [(s.name, s.value, s.size, s.type, s.binding) for s in elf.symbols()]
        assert ours == expected
        kept = [(entry.name, entry.address, entry.size) for entry in SymbolTable(elf).entries]
    assert "_start" in {name for name, _, _ in kept}
    assert set(kept) <= {(name, value, size) for name, value, size, _, _ in expected}


# -- the note walk ----------------------------------------------------------------------


def note(name: bytes, n_type: int, desc: bytes, *, endian: str = "<", align: int = 4) -> bytes:
    """One note: Elf_Nhdr, then name and desc each padded to `align`."""
    pad_name = -len(name) % align
    pad_desc = -len(desc) % align
    header = struct.pack(endian + "III", len(name), len(desc), n_type)
    return header + name + bytes(pad_name) + desc + bytes(pad_desc)


BUILD_ID = bytes(range(1, 21))
# Two notes: "GNU\0" (4 bytes, no padding) with a 3-byte desc padded to 4, at 0;
# the next header at 12 + 4 + 4 = 20, its name "Go\0" padded to 4 at 32, desc at 36.
TWO_NOTES = note(b"GNU\0", 3, b"\x01\x02\x03") + note(b"Go\0", 4, b"ABCDEFGH")


def test_iter_notes_yields_name_type_desc_and_where_the_desc_starts() -> None:
    assert list(iter_notes(TWO_NOTES, True, "t")) == [
        (b"GNU\0", 3, b"\x01\x02\x03", 16),
        (b"Go\0", 4, b"ABCDEFGH", 36),
    ]


def test_iter_notes_reads_big_endian_headers() -> None:
    data = note(b"GNU\0", 3, b"\x01\x02\x03", endian=">")
    assert list(iter_notes(data, False, "t")) == [(b"GNU\0", 3, b"\x01\x02\x03", 16)]


def test_iter_notes_pads_name_and_desc_to_8_in_an_area_aligned_to_8() -> None:
    # "CORE\0" (5 bytes) pads to 8: desc at 12 + 8 = 20, 4 bytes padded to 8; the next
    # header at 20 + 8 = 28, its name "X\0" at 40 padded to 8: its desc at 48.
    data = note(b"CORE\0", 1, b"abcd", align=8) + note(b"X\0", 2, b"", align=8)
    assert list(iter_notes(data, True, "t", align=8)) == [
        (b"CORE\0", 1, b"abcd", 20),
        (b"X\0", 2, b"", 48),
    ]


def test_iter_notes_walks_only_between_start_and_end() -> None:
    data = b"junk" + TWO_NOTES + b"junk"
    notes = list(iter_notes(data, True, "t", start=4, end=4 + 20))
    assert notes == [(b"GNU\0", 3, b"\x01\x02\x03", 20)]


def test_fewer_bytes_than_a_header_at_the_end_end_the_walk_quietly() -> None:
    assert len(list(iter_notes(TWO_NOTES + bytes(11), True, "t"))) == 2


def test_a_note_running_past_its_area_is_a_format_error_at_its_header() -> None:
    cut = TWO_NOTES + struct.pack("<III", 4, 100, 3) + b"GNU\0" + b"short"
    walked = iter_notes(cut, True, "notes.bin")
    assert len([next(walked), next(walked)]) == 2
    with pytest.raises(FormatError, match=r"namesz 4, descsz 100\) runs past its area") as caught:
        next(walked)
    assert (caught.value.source, caught.value.offset) == ("notes.bin", 44)


def test_a_name_running_past_its_area_is_a_format_error() -> None:
    cut = struct.pack("<III", 0xFFFF, 0, 3) + b"GNU\0"
    with pytest.raises(FormatError) as caught:
        list(iter_notes(cut, True, "notes.bin"))
    assert caught.value.offset == 0


# -- each caller of the walk keeps its own answer to a malformed note -------------------


def _tiny_elf_with_notes(name: str, notes: bytes) -> ElfFile:
    return ElfFile.from_bytes(
        elf_file([RawSection(name, SHT_NOTE, SHF_ALLOC, notes)]), name="tiny.elf"
    )


def test_elf_file_notes_name_the_file_and_the_file_offset_of_a_cut_note() -> None:
    elf = _tiny_elf_with_notes(".note.test", TWO_NOTES + struct.pack("<III", 4, 100, 3))
    section = elf.section(".note.test")
    assert section is not None
    with pytest.raises(FormatError, match="runs past its area") as caught:
        list(elf.notes())
    assert (caught.value.source, caught.value.offset) == ("tiny.elf", section.offset + 44)


def test_elf_file_notes_strip_the_names_nuls() -> None:
    elf = _tiny_elf_with_notes(".note.test", TWO_NOTES)
    assert [(n.name, n.type, n.desc) for n in elf.notes()] == [
        ("GNU", 3, b"\x01\x02\x03"),
        ("Go", 4, b"ABCDEFGH"),
    ]


def test_gsym_uuid_is_the_first_notes_payload_and_a_cut_note_gives_none() -> None:
    good = note(b"GNU\0", 3, BUILD_ID)
    assert build_id_uuid(_tiny_elf_with_notes(".note.gnu.build-id", good)) == BUILD_ID
    cut = struct.pack("<III", 4, 100, 3) + b"GNU\0" + BUILD_ID
    assert build_id_uuid(_tiny_elf_with_notes(".note.gnu.build-id", cut)) == b""
    second = note(b"Go\0", 4, b"x") + good  # llvm-gsymutil reads the first note only
    assert build_id_uuid(_tiny_elf_with_notes(".note.gnu.build-id", second)) == b""


def test_core_build_id_search_skips_other_notes_and_stops_quietly_at_a_cut_one() -> None:
    assert _find_build_id(note(b"Go\0", 4, b"x") + note(b"GNU\0", 3, BUILD_ID)) == BUILD_ID.hex()
    assert _find_build_id(note(b"GNU", 3, BUILD_ID)) == BUILD_ID.hex()  # NULs stripped
    assert _find_build_id(note(b"GNU\0", 3, b"")) is None
    cut = struct.pack("<III", 4, 100, 3) + b"GNU\0" + BUILD_ID
    assert _find_build_id(note(b"Go\0", 4, b"x") + cut) is None


BASE = 0x7F00_0000_0000


def _image_in_memory(notes: bytes) -> bytes:
    """A page holding an ELF64 header, a PT_LOAD of the page and a PT_NOTE of `notes`."""
    phoff, note_at = 64, 64 + 2 * 56
    ehdr = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    ehdr += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, 64, 56, 2, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, 4096, 4096, 4096)  # PT_LOAD r-x
    pt_note = struct.pack("<IIQQQQQQ", 4, 4, note_at, note_at, note_at, len(notes), len(notes), 4)
    image = ehdr + load + pt_note + notes
    return image + bytes(4096 - len(image))


def _module_build_id(notes: bytes) -> str:
    image = _image_in_memory(notes)

    def read(address: int, size: int) -> bytes:
        at = address - BASE
        if at < 0 or at + size > len(image):
            raise UnreadableMemory(address, size)
        return image[at : at + size]

    module = module_from_image(read, LoadedImage("/nonexistent/image.so", BASE), 0)
    assert len(module.segments) == 1  # the headers were read from this memory
    return module.build_id or ""


def test_debugger_build_id_from_memory_needs_the_exact_gnu_name_and_stops_at_a_cut_note() -> None:
    assert _module_build_id(note(b"Go\0", 4, b"x") + note(b"GNU\0", 3, BUILD_ID)) == BUILD_ID.hex()
    assert _module_build_id(note(b"GNU", 3, BUILD_ID)) == ""  # "GNU\0" exactly
    cut = struct.pack("<III", 4, 100, 3) + b"GNU\0" + BUILD_ID
    assert _module_build_id(note(b"Go\0", 4, b"x") + cut) == ""
