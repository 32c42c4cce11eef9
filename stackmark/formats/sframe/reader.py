"""Read `.sframe` sections (versions 1, 2 and 3) from bytes or ELF files.

Follows the section top to bottom: preamble and header, the FDE
sub-section (17-, 20- or 16-byte records by version), then each function's
FREs (in v3 behind a 5-byte attribute block). Every read is bounds-checked;
malformed input raises `FormatError` with the byte offset, counted from the
start of the section for raw bytes and from the start of the file for ELF
files.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from functools import lru_cache

from stackmark.elf import PT_GNU_SFRAME, SHT_NOBITS, ElfFile, Section
from stackmark.elf_relocations import relocated_section_data
from stackmark.errors import FormatError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import (
    FrameRowEntry,
    FuncDescEntry,
    SFrameHeader,
    SFrameSection,
)

SECTION_NAME = ".sframe"


def byte_order(data: bytes | memoryview, *, source: str | None = None) -> str:
    """The `struct` byte-order character that the magic number implies."""
    if len(data) < 2:
        raise FormatError("too short for the SFrame magic number", offset=0, source=source)
    if data[0] == 0xE2 and data[1] == 0xDE:
        return "<"
    if data[0] == 0xDE and data[1] == 0xE2:
        return ">"
    raise FormatError(
        f"not SFrame data: magic is 0x{data[0]:02x}{data[1]:02x}, expected 0xdee2 "
        "in either byte order",
        offset=0,
        source=source,
    )


def parse_header(data: bytes | memoryview, *, source: str | None = None) -> SFrameHeader:
    """The preamble and header at the start of `data`, checked for sense."""
    endian = byte_order(data, source=source)
    if len(data) < 4:
        raise FormatError("too short for the SFrame preamble", offset=0, source=source)
    version = data[2]
    if version not in spec.SUPPORTED_VERSIONS:
        raise FormatError(
            f"unsupported SFrame version {version} (1, 2 and 3 are known)",
            offset=2,
            source=source,
        )
    if len(data) < spec.HEADER_SIZE:
        raise FormatError(
            f"{len(data)} bytes are too short for the {spec.HEADER_SIZE}-byte SFrame header",
            offset=0,
            source=source,
        )
    (
        _magic,
        version,
        flags,
        abi,
        fixed_fp,
        fixed_ra,
        auxhdr_len,
        num_fdes,
        num_fres,
        fre_len,
        fdeoff,
        freoff,
    ) = struct.unpack_from(endian + "HBBBbbBIIIII", data, 0)
    try:
        abi_arch = spec.AbiArch(abi)
    except ValueError:
        raise FormatError(
            f"unknown abi_arch {abi} (1-2 AArch64, 3 AMD64, 4 s390x)", offset=4, source=source
        ) from None
    return SFrameHeader(
        version,
        flags,
        abi_arch,
        fixed_fp,
        fixed_ra,
        auxhdr_len,
        num_fdes,
        num_fres,
        fre_len,
        fdeoff,
        freoff,
    )


def parse_sframe(
    data: bytes | memoryview, address: int = 0, *, source: str | None = None, lazy: bool = False
) -> SFrameSection:
    """Decode a whole `.sframe` section linked at virtual address `address`.

    With `lazy`, header and FDEs are checked now but each function's FREs
    are decoded (and checked) on first use: lookups in a large section then
    pay only for the functions they touch.
    """
    return _SectionReader(bytes(data), address, source, lazy).read()


class LazyFres(Sequence[FrameRowEntry]):
    """A function's FREs, decoded from the section bytes on first access."""

    __slots__ = ("_args", "_decoded", "_reader")

    def __init__(self, reader: _SectionReader, args: tuple[str, int, int, int, int, int]):
        self._reader: _SectionReader | None = reader
        self._args = args
        self._decoded: tuple[FrameRowEntry, ...] | None = None

    def _fres(self) -> tuple[FrameRowEntry, ...]:
        if self._decoded is None:
            assert self._reader is not None
            self._decoded = self._reader._read_fres(*self._args)
            self._reader = None
        return self._decoded

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        return self._fres()[index]

    def __len__(self) -> int:
        return len(self._fres())

    def __iter__(self) -> Iterator[FrameRowEntry]:
        return iter(self._fres())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return self._fres() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fres())

    def __repr__(self) -> str:
        return repr(self._fres()) if self._decoded is not None else "LazyFres(<not decoded>)"


@lru_cache(maxsize=256)
def _words_struct(endian: str, size_code: int, count: int) -> struct.Struct:
    return struct.Struct(endian + "bhi"[size_code] * count)


_FDE_STRUCTS = {
    spec.VERSION_1: "iIIIB",
    spec.VERSION_2: "iIIIBBH",
    spec.VERSION_3: "qII",
}
_START_FORMATS = {spec.FRE_TYPE_ADDR1: "B", spec.FRE_TYPE_ADDR2: "H", spec.FRE_TYPE_ADDR4: "I"}


class _SectionReader:
    def __init__(
        self,
        data: bytes,
        address: int,
        source: str | None,
        lazy: bool = False,
        offset_base: int = 0,
        prefix: str = "",
    ):
        self.data = data
        self.address = address
        self.source = source
        self.lazy = lazy
        self.offset_base = offset_base  # reported offsets: file offsets for ELF files
        self.prefix = prefix

    def fail(self, message: str, offset: int | None) -> FormatError:
        where = None if offset is None else self.offset_base + offset
        return FormatError(self.prefix + message, offset=where, source=self.source)

    def read(self) -> SFrameSection:
        try:
            header = parse_header(self.data, source=self.source)
        except FormatError as exc:
            raise self.fail(exc.reason, exc.offset) from None
        size = len(self.data)
        if header.size > size:
            raise self.fail(
                f"auxiliary header of {header.auxhdr_len} bytes runs past the section end "
                f"({size} bytes)",
                7,
            )
        stride = spec.FDE_SIZE[header.version]
        fdes_at = header.size + header.fdeoff
        fdes_end = fdes_at + header.num_fdes * stride
        if fdes_end > size:
            raise self.fail(
                f"{header.num_fdes} FDEs of {stride} bytes at offset 0x{fdes_at:x} run past "
                f"the section end ({size} bytes)",
                8,
            )
        fres_at = header.size + header.freoff
        fres_end = fres_at + header.fre_len
        if fres_end > size:
            raise self.fail(
                f"FRE sub-section (offset 0x{fres_at:x}, {header.fre_len} bytes) runs past "
                f"the section end ({size} bytes)",
                16,
            )
        fde_struct = struct.Struct(header.endian + _FDE_STRUCTS[header.version])
        fdes = [
            self._read_fde(header, fde_struct, i, fdes_at + i * stride, fres_at, fres_end)
            for i in range(header.num_fdes)
        ]
        return SFrameSection(header, fdes, self.address)

    def _read_fde(
        self,
        header: SFrameHeader,
        fde_struct: struct.Struct,
        index: int,
        at: int,
        fres_at: int,
        fres_end: int,
    ) -> FuncDescEntry:
        fields = fde_struct.unpack_from(self.data, at)
        info2 = rep_size = 0
        if header.version == spec.VERSION_3:
            raw_start, func_size, fre_off = fields
            attr_at = fres_at + fre_off
            if attr_at + spec.FDE_ATTR_SIZE_V3 > fres_end:
                raise self.fail(
                    f"FDE {index}: attribute block at FRE offset 0x{fre_off:x} lies outside "
                    "the FRE sub-section",
                    at + 12,
                )
            num_fres, info, info2, rep_size = struct.unpack_from(
                header.endian + "HBBB", self.data, attr_at
            )
            first_fre_at = attr_at + spec.FDE_ATTR_SIZE_V3
        else:
            if header.version == spec.VERSION_2:
                raw_start, func_size, fre_off, num_fres, info, rep_size, _pad = fields
            else:
                raw_start, func_size, fre_off, num_fres, info = fields
            first_fre_at = fres_at + fre_off
            if num_fres and first_fre_at >= fres_end:
                raise self.fail(
                    f"FDE {index}: first FRE at offset 0x{fre_off:x} lies outside the FRE "
                    "sub-section",
                    at + 8,
                )
        if header.version >= spec.VERSION_2 and header.start_is_pcrel:
            start = self.address + at + raw_start
        else:
            start = self.address + raw_start
        fre_type = spec.fde_info_fre_type(info)
        if fre_type not in spec.FRE_START_SIZE:
            raise self.fail(f"FDE {index}: unknown FRE type {fre_type}", at)
        args = (header.endian, index, first_fre_at, num_fres, fre_type, fres_end)
        fres: Sequence[FrameRowEntry] = (
            LazyFres(self, args) if self.lazy and num_fres else self._read_fres(*args)
        )
        return FuncDescEntry(
            start=start,
            size=func_size,
            info=info,
            fres=fres,
            info2=info2,
            rep_size=rep_size,
            index=index,
            raw_start=raw_start,
            fre_offset=fre_off,
        )

    def _read_fres(
        self, endian: str, fde_index: int, at: int, count: int, fre_type: int, end: int
    ) -> tuple[FrameRowEntry, ...]:
        data = self.data
        start_size = spec.FRE_START_SIZE[fre_type]
        start_struct = struct.Struct(endian + _START_FORMATS[fre_type])
        fres: list[FrameRowEntry] = []
        pos = at
        for _ in range(count):
            if pos + start_size + 1 > end:
                raise self.fail(
                    f"FDE {fde_index}: FRE {len(fres)} of {count} runs past the end of the "
                    "FRE sub-section",
                    pos,
                )
            start = start_struct.unpack_from(data, pos)[0]
            info = data[pos + start_size]
            size_code = spec.fre_info_word_size_code(info)
            if size_code not in spec.WORD_SIZE:
                raise self.fail(
                    f"FDE {fde_index}: FRE {len(fres)} has an invalid data word size code 3",
                    pos + start_size,
                )
            word_count = spec.fre_info_word_count(info)
            words_at = pos + start_size + 1
            next_pos = words_at + word_count * spec.WORD_SIZE[size_code]
            if next_pos > end:
                raise self.fail(
                    f"FDE {fde_index}: the {word_count} data words of FRE {len(fres)} run past "
                    "the end of the FRE sub-section",
                    words_at,
                )
            words = _words_struct(endian, size_code, word_count).unpack_from(data, words_at)
            fres.append(FrameRowEntry(start, info, words, pos))
            pos = next_pos
        return tuple(fres)


# --- from ELF files ---------------------------------------------------------------------


class EmptySFrameSection(FormatError):
    """The SFrame section is there but holds no bytes (`ld --discard-sframe`).

    libsframe calls that corrupt; for a lookup it is a section without
    functions, and an unwinder treats the module as having no SFrame.
    """


def find_sframe_section(elf: ElfFile, name: str = SECTION_NAME) -> Section | None:
    """The SFrame section called `name` (PROGBITS before binutils 2.45, SHT_GNU_SFRAME since)."""
    return elf.section(name)


def read_elf_sframe(
    elf: ElfFile, *, lazy: bool = False, name: str = SECTION_NAME
) -> SFrameSection | None:
    """The SFrame section of an opened ELF file, or None when it has none.

    Uses the section called `name` (`.sframe` unless the file was renamed, as
    `objcopy --rename-section` does); for `.sframe`, files without section
    headers fall back to the PT_GNU_SFRAME segment, sized from the SFrame
    header (ld writes a p_memsz larger than the section). An empty section
    counts as none.
    """
    section = find_sframe_section(elf, name)
    if section is not None and (section.type == SHT_NOBITS or section.size == 0):
        return None  # a separate debug file (the data stays in the stripped binary), or discarded
    if section is None and name != SECTION_NAME:
        return None
    if section is not None:
        data = _section_bytes(elf, section)
        file_offset, address = section.offset, section.addr
    else:
        segment = next((s for s in elf.segments if s.type == PT_GNU_SFRAME), None)
        if segment is None:
            return None
        head = elf.read_vaddr(segment.vaddr, spec.HEADER_SIZE)
        if head is None:
            raise FormatError(
                "PT_GNU_SFRAME lies outside every PT_LOAD", offset=None, source=elf.name
            )
        header = parse_header(head, source=f"{elf.name} (PT_GNU_SFRAME)")
        loaded = elf.read_vaddr(segment.vaddr, header.section_size)
        if loaded is None:
            raise FormatError(
                f"the SFrame data ({header.section_size} bytes by its header) runs past "
                "its PT_LOAD",
                offset=segment.offset,
                source=elf.name,
            )
        data, file_offset, address = loaded, segment.offset, segment.vaddr
    reader = _SectionReader(data, address, elf.name, lazy, file_offset, f"{name}: ")
    return reader.read()


def _section_bytes(elf: ElfFile, section: Section) -> bytes:
    """The section's bytes; in a relocatable file (.o, ld -r) with its relocations
    applied when its FDE starts are PC-relative (FUNC_START_PCREL: v3, and v2 from
    binutils 2.45), as objdump 2.45+ does. Earlier sections store section-relative
    starts, to which gas 2.40-2.44 attach a PC-relative relocation that does not
    fit them: objdump 2.40 and 2.44 show the field unrelocated, and so do we."""
    data = elf.section_data(section)
    if len(data) > 3 and data[3] & spec.F_FDE_FUNC_START_PCREL:
        return relocated_section_data(elf, section)
    return data


def read_sframe_file(
    path: str | os.PathLike[str], *, name: str = SECTION_NAME, lazy: bool = False
) -> SFrameSection:
    """The SFrame section `name` of the ELF file at `path`.

    FormatError when it has none; `EmptySFrameSection` when it is empty.
    """
    with ElfFile.open(path) as elf:
        section = read_elf_sframe(elf, lazy=lazy, name=name)
        if section is None:
            found = find_sframe_section(elf, name)
            if found is not None and found.type != SHT_NOBITS:
                raise EmptySFrameSection(f"the {name} section is empty", source=elf.name)
            hint = (
                "build with -Wa,--gsframe, or run 'stackmark sframe generate'"
                if name == SECTION_NAME
                else "name another section with --section"
            )
            raise FormatError(f"no {name} section ({hint})", source=elf.name)
        return section
