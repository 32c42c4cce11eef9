"""SFrame data read out of a running process (debugger plugins, core files).

In memory there are no section headers: the data is the PT_GNU_SFRAME
segment, inside a read-only PT_LOAD. Its size comes from the SFrame header
(ld writes a p_memsz larger than the section). Lookups take runtime PCs and
answer with rows in the module's own address space (runtime - load bias).
"""

from __future__ import annotations

from collections.abc import Callable

from stackmark.elf import (
    EHDR,
    EI_CLASS,
    EI_DATA,
    EI_NIDENT,
    ELF64_EHDR,
    ELFCLASS64,
    ELFDATA2LSB,
    ELFMAG,
    PT_GNU_SFRAME,
    PT_LOAD,
    ElfFile,
)
from stackmark.errors import FormatError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.lookup import SFrameMatch, SFrameTable
from stackmark.formats.sframe.reader import parse_header, parse_sframe
from stackmark.unwind_rules import UnwindRow

ReadMemory = Callable[[int, int], bytes]
"""read(address, size) -> exactly `size` bytes, or raise (the target's memory reader)."""

MAX_SFRAME_SIZE = 1 << 30
"""A header claiming more than this is rejected before anything is read."""

_PICK_PROGRAM_HEADERS = {
    is_64: layout.picker("e_phoff", "e_phentsize", "e_phnum") for is_64, layout in EHDR.items()
}


class LoadedSFrame:
    """An SFrame table of a module mapped with `load_bias` (runtime - link address)."""

    def __init__(self, table: SFrameTable, load_bias: int):
        self.table = table
        self.load_bias = load_bias

    def find(self, runtime_pc: int) -> SFrameMatch | None:
        return self.table.find(runtime_pc - self.load_bias)

    def row(self, runtime_pc: int) -> UnwindRow | None:
        """The row for a runtime PC; its start/end are module-relative."""
        return self.table.row(runtime_pc - self.load_bias)


def read_sframe_at(read: ReadMemory, runtime_address: int, load_bias: int = 0) -> LoadedSFrame:
    """Decode the SFrame data at `runtime_address` of a module mapped with `load_bias`."""
    source = f"SFrame data at 0x{runtime_address:x}"
    header = parse_header(_read(read, runtime_address, spec.HEADER_SIZE, source), source=source)
    size = header.section_size
    if size > MAX_SFRAME_SIZE:
        raise FormatError(f"header claims {size} bytes of SFrame data", offset=0, source=source)
    data = _read(read, runtime_address, size, source)
    return LoadedSFrame(
        SFrameTable(parse_sframe(data, runtime_address - load_bias, source=source, lazy=True)),
        load_bias,
    )


def read_sframe_from_image(read: ReadMemory, image_base: int) -> LoadedSFrame | None:
    """Find and decode PT_GNU_SFRAME of the ELF image whose header is mapped at
    `image_base` (its first PT_LOAD, file offset 0). None when it has none."""
    source = f"ELF image at 0x{image_base:x}"
    ident = _read(read, image_base, EI_NIDENT + ELF64_EHDR.size, source)  # the larger class's
    if ident[: len(ELFMAG)] != ELFMAG:
        raise FormatError("no ELF header there", offset=0, source=source)
    endian = "<" if ident[EI_DATA] == ELFDATA2LSB else ">"
    is_64 = ident[EI_CLASS] == ELFCLASS64
    phoff, phentsize, phnum = _PICK_PROGRAM_HEADERS[is_64](
        EHDR[is_64].compiled(endian).unpack_from(ident, EI_NIDENT)
    )
    if not 0 < phnum < 0xFFFF or phentsize == 0 or phoff > MAX_SFRAME_SIZE:
        raise FormatError("no usable program headers", offset=0, source=source)
    image = _read(read, image_base, phoff + phnum * phentsize, source)
    elf = ElfFile.from_bytes(image, source)
    first_load = next((s for s in elf.segments if s.type == PT_LOAD), None)
    sframe = next((s for s in elf.segments if s.type == PT_GNU_SFRAME), None)
    if first_load is None or sframe is None:
        return None
    load_bias = image_base - (first_load.vaddr - first_load.offset)
    return read_sframe_at(read, sframe.vaddr + load_bias, load_bias)


def _read(read: ReadMemory, address: int, size: int, source: str) -> bytes:
    try:
        data = read(address, size)
    except Exception as exc:  # the target's reader: any failure is "cannot read"
        raise FormatError(
            f"cannot read {size} bytes at 0x{address:x}: {exc}", source=source
        ) from None
    if len(data) != size:
        raise FormatError(f"read {len(data)} of {size} bytes at 0x{address:x}", source=source)
    return bytes(data)
