"""A lean ELF reader: headers, sections, segments, notes, symbols.

Why not pyelftools here: importing it costs about 90 ms, which alone would
double the time `stackmark symbolize` takes to give its first answer. This
module imports only the standard library and reads lazily over mmap.

Layout follows the System V gABI (Figure "ELF Header", "Section Header",
"Program Header", "Symbol Table Entry", "Note Section") for ELFCLASS32 and
ELFCLASS64 in either byte order. Every read is bounds-checked and a
malformed file raises `FormatError` naming the file and the offset.

Each record (Elf_Ehdr, _Shdr, _Phdr, _Sym, _Chdr, _Nhdr, _Rel, _Rela, _Dyn,
_auxv_t) is
declared once below, per class, with elf.h's field names, and the one note
walk is `iter_notes`: every other reader of ELF bytes (the `.sframe`
writer, the readers of headers and notes in a process's memory, core
files) takes them from here. They live in this module, not one beside it:
the formats that read them may import `stackmark.elf`, and a module beside
it would widen what a format may import (tests/unit/test_front_end_imports.py).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
import zlib
from collections.abc import Iterator
from functools import cached_property
from typing import TypeAlias

from stackmark.binary import U32, U64, Buffer, RecordLayout, unpack_at
from stackmark.errors import FormatError
from stackmark.plain import FrozenRecord

# e_type
ET_REL, ET_EXEC, ET_DYN, ET_CORE = 1, 2, 3, 4
# e_machine
EM_386, EM_ARM, EM_S390, EM_X86_64, EM_AARCH64, EM_RISCV = 3, 40, 22, 62, 183, 243
# sh_type
SHT_NULL, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOTE, SHT_NOBITS, SHT_DYNSYM = (
    0,
    1,
    2,
    3,
    7,
    8,
    11,
)
SHT_GNU_SFRAME = 0x6FFFFFF4
# sh_flags
SHF_ALLOC, SHF_EXECINSTR, SHF_TLS, SHF_COMPRESSED = 0x2, 0x4, 0x400, 0x800
# p_type
PT_NULL, PT_LOAD, PT_DYNAMIC, PT_NOTE, PT_TLS = 0, 1, 2, 4, 7
PT_GNU_EH_FRAME, PT_GNU_STACK, PT_GNU_RELRO, PT_GNU_SFRAME = (
    0x6474E550,
    0x6474E551,
    0x6474E552,
    0x6474E554,
)
# p_flags
PF_X, PF_W, PF_R = 1, 2, 4
# special section indexes
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFFF1, 0xFFF2, 0xFFFF
# symbol types (low nibble of st_info) and bindings (high nibble)
STT_NOTYPE, STT_OBJECT, STT_FUNC, STT_SECTION, STT_FILE, STT_COMMON, STT_TLS = 0, 1, 2, 3, 4, 5, 6
STT_GNU_IFUNC = 10
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
# note types
NT_PRSTATUS, NT_FPREGSET, NT_PRPSINFO, NT_AUXV = 1, 2, 3, 6
NT_FILE, NT_SIGINFO = 0x46494C45, 0x53494749
NT_GNU_BUILD_ID = 3
# compression (Elf_Chdr.ch_type)
ELFCOMPRESS_ZLIB, ELFCOMPRESS_ZSTD = 1, 2

MAX_DECOMPRESSED_SIZE = 4 << 30
"""A compressed section claiming to expand past this is rejected, not inflated."""

MACHINE_NAMES = {
    EM_386: "i386",
    EM_ARM: "arm",
    EM_S390: "s390x",
    EM_X86_64: "x86_64",
    EM_AARCH64: "aarch64",
    EM_RISCV: "riscv",
}


# -- the records (System V gABI; glibc's elf.h names) -------------------------------------
#
# Each record once, as (elf.h field name, struct code) pairs in file order, per
# class; the readers here, the `.sframe` writer (formats/sframe/embed.py), the
# readers of headers in target memory (formats/sframe/memory.py,
# unwind/core.py, debugger/modules.py) and tests/unit/test_elf_records.py
# (the gABI's sizes and offsets, by hand) take them from here.

# e_ident: EI_NIDENT bytes before the rest of the ELF header, starting with ELFMAG.
EI_NIDENT = 16
ELFMAG = b"\x7fELF"
EI_CLASS, EI_DATA, EI_OSABI = 4, 5, 7  # indexes in e_ident
ELFCLASS32, ELFCLASS64 = 1, 2
ELFDATA2LSB, ELFDATA2MSB = 1, 2

# The ELF header after e_ident (read at EI_NIDENT).
ELF32_EHDR = RecordLayout(
    "Elf32_Ehdr (after e_ident)",
    ("e_type", "H"),
    ("e_machine", "H"),
    ("e_version", "I"),
    ("e_entry", "I"),
    ("e_phoff", "I"),
    ("e_shoff", "I"),
    ("e_flags", "I"),
    ("e_ehsize", "H"),
    ("e_phentsize", "H"),
    ("e_phnum", "H"),
    ("e_shentsize", "H"),
    ("e_shnum", "H"),
    ("e_shstrndx", "H"),
)
ELF64_EHDR = RecordLayout(
    "Elf64_Ehdr (after e_ident)",
    ("e_type", "H"),
    ("e_machine", "H"),
    ("e_version", "I"),
    ("e_entry", "Q"),
    ("e_phoff", "Q"),
    ("e_shoff", "Q"),
    ("e_flags", "I"),
    ("e_ehsize", "H"),
    ("e_phentsize", "H"),
    ("e_phnum", "H"),
    ("e_shentsize", "H"),
    ("e_shnum", "H"),
    ("e_shstrndx", "H"),
)
ELF32_SHDR = RecordLayout(
    "Elf32_Shdr",
    ("sh_name", "I"),
    ("sh_type", "I"),
    ("sh_flags", "I"),
    ("sh_addr", "I"),
    ("sh_offset", "I"),
    ("sh_size", "I"),
    ("sh_link", "I"),
    ("sh_info", "I"),
    ("sh_addralign", "I"),
    ("sh_entsize", "I"),
)
ELF64_SHDR = RecordLayout(
    "Elf64_Shdr",
    ("sh_name", "I"),
    ("sh_type", "I"),
    ("sh_flags", "Q"),
    ("sh_addr", "Q"),
    ("sh_offset", "Q"),
    ("sh_size", "Q"),
    ("sh_link", "I"),
    ("sh_info", "I"),
    ("sh_addralign", "Q"),
    ("sh_entsize", "Q"),
)
ELF32_PHDR = RecordLayout(
    "Elf32_Phdr",
    ("p_type", "I"),
    ("p_offset", "I"),
    ("p_vaddr", "I"),
    ("p_paddr", "I"),
    ("p_filesz", "I"),
    ("p_memsz", "I"),
    ("p_flags", "I"),  # after p_memsz in ELF32, after p_type in ELF64
    ("p_align", "I"),
)
ELF64_PHDR = RecordLayout(
    "Elf64_Phdr",
    ("p_type", "I"),
    ("p_flags", "I"),
    ("p_offset", "Q"),
    ("p_vaddr", "Q"),
    ("p_paddr", "Q"),
    ("p_filesz", "Q"),
    ("p_memsz", "Q"),
    ("p_align", "Q"),
)
ELF32_SYM = RecordLayout(
    "Elf32_Sym",
    ("st_name", "I"),
    ("st_value", "I"),
    ("st_size", "I"),
    ("st_info", "B"),
    ("st_other", "B"),
    ("st_shndx", "H"),
)
ELF64_SYM = RecordLayout(
    "Elf64_Sym",
    ("st_name", "I"),
    ("st_info", "B"),
    ("st_other", "B"),
    ("st_shndx", "H"),
    ("st_value", "Q"),
    ("st_size", "Q"),
)
ELF32_CHDR = RecordLayout("Elf32_Chdr", ("ch_type", "I"), ("ch_size", "I"), ("ch_addralign", "I"))
ELF64_CHDR = RecordLayout(
    "Elf64_Chdr",
    ("ch_type", "I"),
    ("ch_reserved", "I"),
    ("ch_size", "Q"),
    ("ch_addralign", "Q"),
)
ELF_NHDR = RecordLayout(  # Elf32_Nhdr and Elf64_Nhdr are the same three words
    "Elf_Nhdr", ("n_namesz", "I"), ("n_descsz", "I"), ("n_type", "I")
)
ELF32_REL = RecordLayout("Elf32_Rel", ("r_offset", "I"), ("r_info", "I"))
ELF64_REL = RecordLayout("Elf64_Rel", ("r_offset", "Q"), ("r_info", "Q"))
ELF32_RELA = RecordLayout("Elf32_Rela", *ELF32_REL.fields, ("r_addend", "i"))
ELF64_RELA = RecordLayout("Elf64_Rela", *ELF64_REL.fields, ("r_addend", "q"))
ELF32_DYN = RecordLayout("Elf32_Dyn", ("d_tag", "i"), ("d_un", "I"))
ELF64_DYN = RecordLayout("Elf64_Dyn", ("d_tag", "q"), ("d_un", "Q"))
ELF32_AUXV = RecordLayout("Elf32_auxv_t", ("a_type", "I"), ("a_val", "I"))  # a_un.a_val
ELF64_AUXV = RecordLayout("Elf64_auxv_t", ("a_type", "Q"), ("a_val", "Q"))

# Each record by class (True: ELFCLASS64).
EHDR = {False: ELF32_EHDR, True: ELF64_EHDR}
SHDR = {False: ELF32_SHDR, True: ELF64_SHDR}
PHDR = {False: ELF32_PHDR, True: ELF64_PHDR}
SYM = {False: ELF32_SYM, True: ELF64_SYM}
CHDR = {False: ELF32_CHDR, True: ELF64_CHDR}
REL = {False: ELF32_REL, True: ELF64_REL}
RELA = {False: ELF32_RELA, True: ELF64_RELA}
DYN = {False: ELF32_DYN, True: ELF64_DYN}
AUXV = {False: ELF32_AUXV, True: ELF64_AUXV}

# The fields ElfFile keeps, in one order for both classes (Phdr and Sym differ).
_PICK_EHDR = {
    is_64: layout.picker(
        "e_type",
        "e_machine",
        "e_entry",
        "e_phoff",
        "e_shoff",
        "e_flags",
        "e_phentsize",
        "e_phnum",
        "e_shentsize",
        "e_shnum",
        "e_shstrndx",
    )
    for is_64, layout in EHDR.items()
}
_PICK_PHDR = {
    is_64: layout.picker(
        "p_type", "p_flags", "p_offset", "p_vaddr", "p_paddr", "p_filesz", "p_memsz", "p_align"
    )
    for is_64, layout in PHDR.items()
}
_PICK_CHDR = {is_64: layout.picker("ch_type", "ch_size") for is_64, layout in CHDR.items()}
# Section 0 holds the real counts under extended numbering (same index in both classes).
_SH_SIZE, _SH_LINK = ELF64_SHDR.names.index("sh_size"), ELF64_SHDR.names.index("sh_link")
_SH_OFFSET = ELF64_SHDR.names.index("sh_offset")


class Section(FrozenRecord):
    """One section header."""

    __slots__ = _fields = __match_args__ = (
        "index",
        "name",
        "type",
        "flags",
        "addr",
        "offset",
        "size",
        "link",
        "info",
        "addralign",
        "entsize",
    )
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int

    def __init__(
        self,
        index: int,
        name: str,
        type: int,
        flags: int,
        addr: int,
        offset: int,
        size: int,
        link: int,
        info: int,
        addralign: int,
        entsize: int,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "index", index)
        setattr_(self, "name", name)
        setattr_(self, "type", type)
        setattr_(self, "flags", flags)
        setattr_(self, "addr", addr)
        setattr_(self, "offset", offset)
        setattr_(self, "size", size)
        setattr_(self, "link", link)
        setattr_(self, "info", info)
        setattr_(self, "addralign", addralign)
        setattr_(self, "entsize", entsize)

    @property
    def is_compressed(self) -> bool:
        return bool(self.flags & SHF_COMPRESSED) or self.name.startswith(".zdebug")


class ProgramHeader(FrozenRecord):
    """One program header (segment)."""

    __slots__ = _fields = __match_args__ = (
        "type",
        "flags",
        "offset",
        "vaddr",
        "paddr",
        "filesz",
        "memsz",
        "align",
    )
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int

    def __init__(
        self,
        type: int,
        flags: int,
        offset: int,
        vaddr: int,
        paddr: int,
        filesz: int,
        memsz: int,
        align: int,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "type", type)
        setattr_(self, "flags", flags)
        setattr_(self, "offset", offset)
        setattr_(self, "vaddr", vaddr)
        setattr_(self, "paddr", paddr)
        setattr_(self, "filesz", filesz)
        setattr_(self, "memsz", memsz)
        setattr_(self, "align", align)

    @property
    def mode(self) -> str:
        """Permissions as markup writes them: a subset of "rwx", in that order."""
        return (
            ("r" if self.flags & PF_R else "")
            + ("w" if self.flags & PF_W else "")
            + ("x" if self.flags & PF_X else "")
        )


class Note(FrozenRecord):
    """One note entry: owner name, type and descriptor bytes."""

    __slots__ = _fields = __match_args__ = ("name", "type", "desc", "offset")
    name: str
    type: int
    desc: bytes
    offset: int  # file offset of the descriptor

    def __init__(self, name: str, type: int, desc: bytes, offset: int) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "type", type)
        setattr_(self, "desc", desc)
        setattr_(self, "offset", offset)


class ElfSymbol(FrozenRecord):
    """One symbol table entry, with its name resolved."""

    __slots__ = _fields = __match_args__ = (
        "name",
        "value",
        "size",
        "type",
        "binding",
        "other",
        "shndx",
    )
    name: str
    value: int
    size: int
    type: int
    binding: int
    other: int
    shndx: int

    def __init__(
        self, name: str, value: int, size: int, type: int, binding: int, other: int, shndx: int
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "value", value)
        setattr_(self, "size", size)
        setattr_(self, "type", type)
        setattr_(self, "binding", binding)
        setattr_(self, "other", other)
        setattr_(self, "shndx", shndx)

    @property
    def is_defined(self) -> bool:
        return self.shndx != SHN_UNDEF


class ElfFile:
    """An ELF file opened for reading (from a path over mmap, or from bytes)."""

    def __init__(self, data: bytes | mmap.mmap, name: str):
        self._data = data
        self.name = name
        self._section_cache: dict[int, bytes] = {}
        self._parse_header()

    # -- opening ----------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> ElfFile:
        """Open `path`; raise `FormatError` (not OSError) for unreadable or non-ELF files."""
        name = os.fspath(path)
        try:
            # O_NONBLOCK: a FIFO (or device) where a file was expected must
            # not block the open; it is refused below.
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise FormatError("not a regular file", source=name)
                if st.st_size == 0:
                    raise FormatError("empty file, not ELF", source=name)
                data: bytes | mmap.mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        except OSError as exc:
            raise FormatError(f"cannot read: {exc.strerror or exc}", source=name) from None
        return cls(data, name)

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> ElfFile:
        return cls(bytes(data), name)

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            # BufferError: a view is still alive; the mapping goes with it.
            with contextlib.suppress(BufferError):
                self._data.close()

    def __enter__(self) -> ElfFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- low-level reads ------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self._data)

    def read(self, offset: int, size: int) -> bytes:
        """`size` bytes at file `offset`, or FormatError if they are not all there."""
        if offset < 0 or size < 0 or offset + size > len(self._data):
            raise FormatError(
                f"read of {size} bytes runs past the end of the file ({len(self._data)} bytes)",
                offset=offset,
                source=self.name,
            )
        return bytes(self._data[offset : offset + size])

    def _unpack(self, fmt: struct.Struct, offset: int) -> tuple[int, ...]:
        return unpack_at(fmt, self._data, offset, len(self._data), "structure", self._overrun)

    def _overrun(self, what: str, at: int, size: int) -> FormatError:
        return FormatError(
            f"{what} of {size} bytes runs past the end of the file", offset=at, source=self.name
        )

    # -- ELF header -------------------------------------------------------------

    def _parse_header(self) -> None:
        ident = self._data[:EI_NIDENT]
        if len(ident) < EI_NIDENT or ident[: len(ELFMAG)] != ELFMAG:
            raise FormatError("not an ELF file (bad magic)", offset=0, source=self.name)
        elf_class, elf_data = ident[EI_CLASS], ident[EI_DATA]
        if elf_class not in (ELFCLASS32, ELFCLASS64):
            raise FormatError(f"unknown ELF class {elf_class}", offset=EI_CLASS, source=self.name)
        if elf_data not in (ELFDATA2LSB, ELFDATA2MSB):
            raise FormatError(
                f"unknown ELF data encoding {elf_data}", offset=EI_DATA, source=self.name
            )
        self.is_64 = is_64 = elf_class == ELFCLASS64
        self.endian = e = "<" if elf_data == ELFDATA2LSB else ">"
        self.osabi = ident[EI_OSABI]
        (
            self.e_type,
            self.machine,
            self.entry,
            self._phoff,
            self._shoff,
            self.e_flags,
            self._phentsize,
            self._phnum,
            self._shentsize,
            self._shnum,
            self._shstrndx,
        ) = _PICK_EHDR[is_64](self._unpack(EHDR[is_64].compiled(e), EI_NIDENT))
        self._shdr = SHDR[is_64].compiled(e)
        self._phdr = PHDR[is_64].compiled(e)
        self._sym = SYM[is_64].compiled(e)
        self._chdr = CHDR[is_64].compiled(e)

    @property
    def machine_name(self) -> str:
        return MACHINE_NAMES.get(self.machine, f"machine-{self.machine}")

    @property
    def pointer_size(self) -> int:
        return 8 if self.is_64 else 4

    # -- sections ---------------------------------------------------------------

    @cached_property
    def sections(self) -> list[Section]:
        """All section headers, with names (empty list when there are none)."""
        if self._shoff == 0:
            return []
        if self._shentsize < self._shdr.size:
            raise FormatError(
                f"section header size {self._shentsize} is too small",
                offset=self._shoff,
                source=self.name,
            )
        first = self._unpack(self._shdr, self._shoff)
        count = self._shnum or first[_SH_SIZE]  # extended numbering: count in section 0's
        strndx = self._shstrndx if self._shstrndx != SHN_XINDEX else first[_SH_LINK]
        if count * self._shentsize > len(self._data):
            raise FormatError(
                f"{count} section headers cannot fit in the file",
                offset=self._shoff,
                source=self.name,
            )
        raw = [self._unpack(self._shdr, self._shoff + i * self._shentsize) for i in range(count)]
        names_blob = b""
        if 0 < strndx < count:
            names = raw[strndx]
            names_blob = self.read(names[_SH_OFFSET], names[_SH_SIZE])
        result = []
        for index, fields in enumerate(raw):  # Elf_Shdr's order, the same in both classes
            name_off, sh_type, flags, addr, offset, size, link, info, align, entsize = fields
            result.append(
                Section(
                    index,
                    _cstring(names_blob, name_off),
                    sh_type,
                    flags,
                    addr,
                    offset,
                    size,
                    link,
                    info,
                    align,
                    entsize,
                )
            )
        return result

    @cached_property
    def _sections_by_name(self) -> dict[str, Section]:
        by_name: dict[str, Section] = {}
        for section in self.sections:
            by_name.setdefault(section.name, section)
        return by_name

    def section(self, name: str) -> Section | None:
        """The first section called `name` (also found as `.zdebug_*` for `.debug_*`)."""
        found = self._sections_by_name.get(name)
        if found is None and name.startswith(".debug_"):
            found = self._sections_by_name.get(".z" + name[1:])
        return found

    def section_data(self, section: Section | str) -> bytes:
        """The contents of a section, decompressed if needed (cached).

        SHT_NOBITS sections read as empty. A missing named section reads as b"".
        """
        if isinstance(section, str):
            found = self.section(section)
            if found is None:
                return b""
            section = found
        cached = self._section_cache.get(section.index)
        if cached is not None:
            return cached
        if section.type == SHT_NOBITS or section.size == 0:
            data = b""
        else:
            data = self.read(section.offset, section.size)
            if section.flags & SHF_COMPRESSED:
                data = self._inflate_gabi(section, data)
            elif section.name.startswith(".zdebug"):
                data = self._inflate_gnu(section, data)
        self._section_cache[section.index] = data
        return data

    def section_buffer(self, section: Section) -> tuple[bytes | mmap.mmap, int, int]:
        """(buffer, start, end) where the section's contents can be read in place.

        Why: copying a 30 MB .debug_info costs more than a lookup that reads a
        few kilobytes of it. Uncompressed sections are read straight from the
        file mapping; compressed ones are the (cached) `section_data`.
        """
        if section.type == SHT_NOBITS or section.size == 0:
            return b"", 0, 0
        if section.is_compressed:
            data = self.section_data(section)
            return data, 0, len(data)
        end = section.offset + section.size
        if end > len(self._data):
            raise FormatError(
                f"section {section.name} ({section.size} bytes) runs past the end of the file",
                offset=section.offset,
                source=self.name,
            )
        return self._data, section.offset, end

    def _inflate_gabi(self, section: Section, data: bytes) -> bytes:
        if len(data) < self._chdr.size:
            raise FormatError(
                f"compressed section {section.name} is shorter than its header",
                offset=section.offset,
                source=self.name,
            )
        ch_type, ch_size = _PICK_CHDR[self.is_64](self._chdr.unpack_from(data, 0))
        return self._inflate(section, ch_type, ch_size, data[self._chdr.size :])

    def _inflate_gnu(self, section: Section, data: bytes) -> bytes:
        if len(data) < 12 or data[:4] != b"ZLIB":
            raise FormatError(
                f"{section.name} lacks its ZLIB header", offset=section.offset, source=self.name
            )
        size = U64[False].unpack_from(data, 4)[0]  # big-endian, whatever the file's order
        return self._inflate(section, ELFCOMPRESS_ZLIB, size, data[12:])

    def _inflate(self, section: Section, kind: int, size: int, payload: bytes) -> bytes:
        def fail(reason: str) -> FormatError:
            return FormatError(reason, offset=section.offset, source=self.name)

        if size > MAX_DECOMPRESSED_SIZE:
            raise fail(
                f"compressed section {section.name} claims {size} bytes, over the "
                f"{MAX_DECOMPRESSED_SIZE} byte limit"
            )
        if kind == ELFCOMPRESS_ZLIB:
            inflater = zlib.decompressobj()
            try:
                out = inflater.decompress(payload, size)
            except zlib.error as exc:
                raise fail(f"cannot decompress {section.name}: {exc}") from None
        elif kind == ELFCOMPRESS_ZSTD:
            out = _zstd_decompress(payload, size, section.name, self.name, section.offset)
        else:
            raise fail(f"{section.name} uses unknown compression type {kind}")
        if len(out) != size:
            raise fail(f"{section.name} decompressed to {len(out)} bytes, header says {size}")
        return out

    # -- program headers -----------------------------------------------------------

    @cached_property
    def segments(self) -> list[ProgramHeader]:
        """All program headers (empty for relocatable objects)."""
        if self._phoff == 0:
            return []
        count = self._phnum
        if count == 0xFFFF and self.sections:  # PN_XNUM: real count in section 0's sh_info
            count = self.sections[0].info
        if self._phentsize < self._phdr.size:
            raise FormatError(
                f"program header size {self._phentsize} is too small",
                offset=self._phoff,
                source=self.name,
            )
        pick = _PICK_PHDR[self.is_64]  # ProgramHeader's order, whichever the class
        return [
            ProgramHeader(*pick(self._unpack(self._phdr, self._phoff + i * self._phentsize)))
            for i in range(count)
        ]

    def load_segments(self) -> list[ProgramHeader]:
        return [s for s in self.segments if s.type == PT_LOAD]

    def read_vaddr(self, vaddr: int, size: int) -> bytes | None:
        """Bytes at virtual address `vaddr` from the file image of a PT_LOAD.

        Bytes past p_filesz (bss) read as zeros. None when no segment holds
        the whole range.
        """
        for seg in self.segments:
            if seg.type == PT_LOAD and seg.vaddr <= vaddr and vaddr + size <= seg.vaddr + seg.memsz:
                start = vaddr - seg.vaddr
                in_file = max(0, min(size, seg.filesz - start))
                data = self.read(seg.offset + start, in_file) if in_file else b""
                return data + bytes(size - in_file)
        return None

    # -- notes ------------------------------------------------------------------

    def notes(self) -> Iterator[Note]:
        """Notes from SHT_NOTE sections, or from PT_NOTE segments if there are no sections."""
        note_sections = [s for s in self.sections if s.type == SHT_NOTE]
        if note_sections:
            for s in note_sections:
                yield from self._parse_notes(s.offset, s.size, max(4, s.addralign))
        else:
            for seg in self.segments:
                if seg.type == PT_NOTE:
                    yield from self._parse_notes(seg.offset, seg.filesz, max(4, seg.align))

    def _parse_notes(self, offset: int, size: int, align: int) -> Iterator[Note]:
        end = offset + size
        if end > len(self._data):
            raise FormatError(
                f"note area of {size} bytes runs past the end of the file",
                offset=offset,
                source=self.name,
            )
        notes = iter_notes(
            self._data, self.endian == "<", self.name, start=offset, end=end, align=align
        )
        for name, note_type, desc, desc_at in notes:
            yield Note(name.rstrip(b"\0").decode("latin-1"), note_type, desc, desc_at)

    @cached_property
    def build_id(self) -> str | None:
        """The GNU build ID as lower-case hex, or None."""
        section = self.section(".note.gnu.build-id")
        candidates: Iterator[Note]
        if section is not None and section.type == SHT_NOTE:
            candidates = self._parse_notes(section.offset, section.size, 4)
        else:
            candidates = self.notes()
        for note in candidates:
            if note.name == "GNU" and note.type == NT_GNU_BUILD_ID and note.desc:
                return note.desc.hex()
        return None

    # -- debug links --------------------------------------------------------------

    @cached_property
    def debuglink(self) -> tuple[str, int] | None:
        """(file name, CRC32) from `.gnu_debuglink`, or None."""
        data = self.section_data(".gnu_debuglink")
        if not data:
            return None
        nul = data.find(b"\0")
        if nul <= 0:
            return None
        crc_at = _round_up(nul + 1, 4)
        if crc_at + 4 > len(data):
            return None
        crc = U32[self.endian == "<"].unpack_from(data, crc_at)[0]
        return data[:nul].decode("utf-8", "surrogateescape"), crc

    @property
    def has_dwarf(self) -> bool:
        info = self.section(".debug_info")
        return info is not None and info.type != SHT_NOBITS and info.size > 0

    # -- symbols ----------------------------------------------------------------

    def symbols(self, table: str | None = None) -> list[ElfSymbol]:
        """Defined and undefined symbols of `.symtab`, else `.dynsym` (or the named table)."""
        if table is not None:
            section = self.section(table)
        else:
            section = self.section(".symtab")
            if section is None or section.type != SHT_SYMTAB:
                section = self.section(".dynsym")
        if section is None or section.type not in (SHT_SYMTAB, SHT_DYNSYM):
            return []
        return self.symbols_of(section)

    def symbols_of(self, section: Section) -> list[ElfSymbol]:
        """Every entry of the symbol table `section`, index 0 included."""
        strtab = b""
        if 0 < section.link < len(self.sections):
            strtab = self.section_data(self.sections[section.link])
        data = self.section_data(section)
        entsize = section.entsize or self._sym.size
        if entsize < self._sym.size:
            raise FormatError(
                f"{section.name} entry size {entsize} is too small",
                offset=section.offset,
                source=self.name,
            )
        result = []
        unpack = self._sym.unpack_from
        # ELF64_SYM's and ELF32_SYM's field orders, spelled here rather than picked:
        # a picker costs about 800 instructions a symbol (4% of symbols() on a
        # 23,000-symbol program); tests/unit/test_elf_records.py pins both orders.
        for pos in range(0, len(data) - self._sym.size + 1, entsize):
            if self.is_64:
                name_off, info, other, shndx, value, size = unpack(data, pos)
            else:
                name_off, value, size, info, other, shndx = unpack(data, pos)
            result.append(
                ElfSymbol(
                    _cstring(strtab, name_off), value, size, info & 0xF, info >> 4, other, shndx
                )
            )
        return result


RawNote: TypeAlias = tuple[bytes, int, bytes, int]
"""(name, n_type, desc, desc_at): `name` is all n_namesz bytes, its NULs
included; `desc_at` is where the descriptor starts in the data walked."""


def iter_notes(
    data: Buffer,
    little_endian: bool,
    source: str | None,
    *,
    start: int = 0,
    end: int | None = None,
    align: int = 4,
) -> Iterator[RawNote]:
    """Each note of `data[start:end]` (a note section, a PT_NOTE segment, one
    read from a process's memory), in order: Elf_Nhdr, then the name and the
    descriptor, each padded to `align` (4, or 8 for an area aligned to 8).

    Fewer bytes than a header at the end end the walk; a note whose name or
    descriptor runs past `end` raises `FormatError` naming `source` and the
    note's offset (a caller that only looks for one note treats it as the end).
    """
    align = 8 if align == 8 else 4
    end = len(data) if end is None else min(end, len(data))
    header = ELF_NHDR.compiled("<" if little_endian else ">")
    header_size = header.size
    pos = start
    while pos + header_size <= end:
        namesz, descsz, note_type = header.unpack_from(data, pos)
        name_at = pos + header_size
        desc_at = name_at + _round_up(namesz, align)
        if desc_at + descsz > end:
            raise FormatError(
                f"note (namesz {namesz}, descsz {descsz}) runs past its area",
                offset=pos,
                source=source,
            )
        yield (
            bytes(data[name_at : name_at + namesz]),
            note_type,
            bytes(data[desc_at : desc_at + descsz]),
            desc_at,
        )
        pos = desc_at + _round_up(descsz, align)


def _round_up(value: int, align: int) -> int:
    return (value + align - 1) & ~(align - 1)


def _cstring(blob: bytes, offset: int) -> str:
    """The NUL-terminated string at `offset` of a string table ("" when out of range)."""
    if offset >= len(blob):
        return ""
    end = blob.find(b"\0", offset)
    if end < 0:
        end = len(blob)
    return blob[offset:end].decode("utf-8", "surrogateescape")


def _zstd_decompress(payload: bytes, size: int, section: str, source: str, offset: int) -> bytes:
    """zstd through the optional `zstandard` package (gcc's -gz=zstd)."""
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise FormatError(
            f"{section} is zstd-compressed; install the 'zstandard' package to read it",
            offset=offset,
            source=source,
        ) from None
    try:
        out: bytes = zstandard.ZstdDecompressor().decompress(payload, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise FormatError(
            f"cannot decompress {section}: {exc}", offset=offset, source=source
        ) from None
    return out


def is_elf(path: str | os.PathLike[str]) -> bool:
    """True when `path` is a readable file starting with the ELF magic."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.pread(fd, len(ELFMAG), 0) == ELFMAG
    except OSError:
        return False
    finally:
        os.close(fd)
