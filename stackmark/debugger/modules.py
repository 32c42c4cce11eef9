"""The process layout as stackmark models it, built from what a debugger loaded.

A backend only says "this file is loaded, its ELF header is at this
address". The rest is read here, the same way for every debugger, so that
GDB and LLDB describe a process identically: the program headers and the
GNU build ID note are read from target memory (the header page of every
ELF image is mapped, in live processes and in core files alike); when
memory cannot be read, from the file on disk. The load bias is the header
address minus the address the first PT_LOAD gives the header.

Segments are the PT_LOADs rounded out to whole pages, as the kernel maps
them and as `stackmark unwind CORE` (`stackmark.unwind.core`) describes a
core file, so a backtrace reads the same from GDB, LLDB and the core. The
main program comes first (module 0), then the others by address.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from stackmark.debugger.backend import DebuggerBackend, LoadedImage
from stackmark.elf import NT_GNU_BUILD_ID, PT_LOAD, PT_NOTE, ElfFile, ProgramHeader, iter_notes
from stackmark.errors import FormatError, StackmarkError
from stackmark.model import Module, Segment

PAGE_SIZE = 4096
MAX_NOTE_SIZE = 64 * 1024

ReadMemory = Callable[[int, int], bytes]


@dataclass(frozen=True, slots=True)
class _Headers:
    """Program headers of an image, and where they were read."""

    segments: list[ProgramHeader]
    little_endian: bool
    in_memory: bool
    file_build_id: str | None = None


def _read_headers(read: ReadMemory, image: LoadedImage) -> _Headers | None:
    """The program headers from the image's first page in memory, else from its file.

    The first page holds the ELF header and, in every linker's output, the
    program headers; a page is the smallest unit that can be mapped, so it
    is readable whenever the header is.
    """
    if image.header_address is not None:
        try:
            elf = ElfFile.from_bytes(read(image.header_address, PAGE_SIZE), image.path)
            return _Headers(elf.segments, elf.endian == "<", in_memory=True)
        except StackmarkError:  # unreadable memory, or not ELF there
            pass
    if os.path.isfile(image.path):
        try:
            with ElfFile.open(image.path) as elf:
                return _Headers(elf.segments, elf.endian == "<", False, elf.build_id)
        except FormatError:
            pass
    return None


def _build_id_from_notes(blob: bytes, little_endian: bool) -> str | None:
    """The GNU build ID in a PT_NOTE's bytes, or None (also when a note before
    it is cut short: memory holds no more to read)."""
    try:
        for name, note_type, desc, _ in iter_notes(blob, little_endian, "PT_NOTE in memory"):
            if note_type == NT_GNU_BUILD_ID and name == b"GNU\0":
                return desc.hex() or None
    except FormatError:
        pass
    return None


def _build_id_in_memory(read: ReadMemory, bias: int, headers: _Headers) -> str | None:
    for note in (p for p in headers.segments if p.type == PT_NOTE):
        try:
            blob = read(bias + note.vaddr, min(note.filesz, MAX_NOTE_SIZE))
        except StackmarkError:
            continue
        build_id = _build_id_from_notes(blob, headers.little_endian)
        if build_id:
            return build_id
    return None


def _segments(bias: int, loads: list[ProgramHeader]) -> list[Segment]:
    """The PT_LOADs as mapped: whole pages; a page two PT_LOADs share goes to the first."""
    segments: list[Segment] = []
    for load in sorted(loads, key=lambda p: p.vaddr):
        low = load.vaddr & ~(PAGE_SIZE - 1)
        high = (load.vaddr + load.memsz + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
        if segments and bias + low < segments[-1].end:
            low = segments[-1].end - bias
        if high > low:
            segments.append(Segment(bias + low, high - low, load.mode, low))
    return segments


def display_name(image: LoadedImage) -> str:
    """The module name markup shows: the file's base name ("[vdso]" as is)."""
    return os.path.basename(image.path) or image.path


def module_from_image(read: ReadMemory, image: LoadedImage, module_id: int) -> Module:
    """Describe one loaded image as a `Module` (see the module docstring)."""
    headers = _read_headers(read, image)
    loads = [p for p in headers.segments if p.type == PT_LOAD] if headers else []
    if image.load_bias is not None:
        bias = image.load_bias
    elif image.header_address is not None and loads:
        first = min(loads, key=lambda p: p.offset)  # the PT_LOAD that maps the header
        bias = image.header_address - (first.vaddr - first.offset)
    else:
        bias = image.header_address or 0
    build_id = None
    if headers is not None:
        build_id = headers.file_build_id
        if headers.in_memory:
            build_id = _build_id_in_memory(read, bias, headers)
    return Module(
        id=module_id,
        name=display_name(image),
        build_id=build_id or image.build_id,
        segments=_segments(bias, loads),
        path=image.path,
    )


def loaded_modules(backend: DebuggerBackend) -> list[Module]:
    """Every loaded image as a Module: the program first, then by address; numbered from 0."""
    ordered = []
    for image in backend.images():
        module = module_from_image(backend.read_memory, image, 0)
        start = module.segments[0].start if module.segments else 0
        ordered.append((not image.is_executable, start, module.name, module))
    ordered.sort(key=lambda entry: entry[:3])
    modules = [entry[3] for entry in ordered]
    for number, module in enumerate(modules):
        module.id = number
    return modules


def module_for_address(modules: list[Module], address: int) -> Module | None:
    """The module whose segments contain runtime `address`."""
    for module in modules:
        if any(segment.contains(address) for segment in module.segments):
            return module
    return None
