"""Add an `.sframe` section to a copy of an ELF file.

The new section is appended as a non-allocated section (it is not mapped
at run time, and no PT_GNU_SFRAME is added: the program headers have no
room for one without relinking). Readers that work from the file, such
as objdump, readelf, stackmark and its debugger plugins, find it by name.
Its sh_addr is 0, so the section must be encoded for address 0.

Layout of the copy: the original bytes unchanged, then the section data, a
new section-name table (the old one plus ".sframe"), and a new section
header table (the old headers plus one) that e_shoff points at.
"""

from __future__ import annotations

import os

from stackmark.elf import EHDR, EI_NIDENT, SHDR, SHT_GNU_SFRAME, SHT_PROGBITS, ElfFile
from stackmark.errors import StackmarkError
from stackmark.formats.sframe import spec
from stackmark.whole_files import write_whole

SECTION_NAME = b".sframe"
SECTION_ADDRESS = 0
"""Where the added section says it lives (encode the section for this address)."""


def add_sframe_section(
    source: str | os.PathLike[str], data: bytes, output: str | os.PathLike[str]
) -> None:
    """Write a copy of ELF file `source` with `data` as its `.sframe` section to `output`."""
    name = os.fspath(source)
    with ElfFile.open(name) as elf:
        if elf.section(".sframe") is not None:
            raise StackmarkError(f"{name} already has an .sframe section")
        sections = elf.sections
        if not sections:
            raise StackmarkError(f"{name} has no section headers to add a section to")
        image = bytearray(elf.read(0, elf.size))
        is_64, endian = elf.is_64, elf.endian
    ehdr_layout, shdr_layout = EHDR[is_64], SHDR[is_64]
    ehdr = dict(
        zip(
            ehdr_layout.names,
            ehdr_layout.compiled(endian).unpack_from(image, EI_NIDENT),
            strict=True,
        )
    )
    shoff, shentsize = ehdr["e_shoff"], ehdr["e_shentsize"]
    shnum, shstrndx = ehdr["e_shnum"], ehdr["e_shstrndx"]
    if shnum == 0 or shnum >= 0xFF00 or not 0 < shstrndx < shnum:
        raise StackmarkError(f"{name}: extended section numbering is not supported here")
    shdr = shdr_layout.compiled(endian)
    if shentsize < shdr.size:
        raise StackmarkError(f"{name}: section header size {shentsize} is too small")
    align = 8 if is_64 else 4

    def pad() -> None:
        image.extend(b"\0" * (-len(image) % align))

    pad()
    data_at = len(image)
    image += data
    old_names = sections[shstrndx]
    names_blob = bytes(image[old_names.offset : old_names.offset + old_names.size])
    name_index = len(names_blob)
    names_at = len(image)
    image += names_blob + SECTION_NAME + b"\0"
    pad()
    table_at = len(image)
    for index in range(shnum):
        raw = bytearray(image[shoff + index * shentsize : shoff + (index + 1) * shentsize])
        if index == shstrndx:
            entry = dict(zip(shdr_layout.names, shdr.unpack_from(raw, 0), strict=True))
            entry["sh_offset"] = names_at
            entry["sh_size"] = len(names_blob) + len(SECTION_NAME) + 1
            raw[: shdr.size] = shdr_layout.pack(endian, entry)
        image += raw
    version = data[2] if len(data) > 2 else 0
    added = {
        "sh_name": name_index,
        "sh_type": SHT_GNU_SFRAME if version >= spec.VERSION_3 else SHT_PROGBITS,
        "sh_flags": 0,
        "sh_addr": SECTION_ADDRESS,
        "sh_offset": data_at,
        "sh_size": len(data),
        "sh_link": 0,
        "sh_info": 0,
        "sh_addralign": 8,
        "sh_entsize": 0,
    }
    image += shdr_layout.pack(endian, added) + bytes(shentsize - shdr.size)
    ehdr["e_shoff"], ehdr["e_shnum"] = table_at, shnum + 1
    image[EI_NIDENT : EI_NIDENT + ehdr_layout.size] = ehdr_layout.pack(endian, ehdr)
    _write(output, bytes(image), source_mode=os.stat(name).st_mode)


def _write(output: str | os.PathLike[str], image: bytes, source_mode: int) -> None:
    """Write whole or not at all, keeping the input's mode bits (an executable stays
    one); a device or FIFO is written in place (`stackmark.whole_files`)."""
    try:
        write_whole(output, image, mode=source_mode)
    except OSError as exc:
        raise StackmarkError(f"cannot write {os.fspath(output)}: {exc.strerror or exc}") from None
