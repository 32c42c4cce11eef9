"""Read `.sframe` sections (versions 1, 2 and 3) from bytes or ELF files.

Follows the section top to bottom: preamble and header, the FDE
sub-section (17-, 20- or 16-byte records by version), then each function's
FREs (in v3 behind a 5-byte attribute block). Every read is bounds-checked;
malformed input raises `FormatError` with the byte offset, counted from the
start of the section for raw bytes and from the start of the file for ELF
files.

The records are declared once in `spec` (`binary.RecordLayout`), but not read
through `binary.Cursor`: the header is checked against the data's length, each
sub-section once against the section's end, and then each FDE and FRE is
unpacked inside its region, with one check per FRE and per run of data words.
Measured on the SFrame v3 table `stackmark sframe generate` makes for the
benchmark's big-O2 (17,395 FDEs, 89,836 FREs; cachegrind instruction counts):
reading each FRE's two parts through a `Cursor` subclass cost 13% more
instructions per `parse_sframe` and 5.6% more per `stackmark sframe dump`;
`unpack_at` for each FDE record cost 4.1% per `parse_sframe` (the part a lazy
load pays in full). Both outputs were identical; the shape stays.
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

_HEADER_AT = spec.HEADER_LAYOUT.offsets  # where each header field lies, by spec name
_MAGIC_BYTES = {"<": spec.MAGIC.to_bytes(2, "little"), ">": spec.MAGIC.to_bytes(2, "big")}


def byte_order(data: bytes | memoryview, *, source: str | None = None) -> str:
    """The `struct` byte-order character that the magic number implies."""
    if len(data) < 2:
        raise FormatError("too short for the SFrame magic number", offset=0, source=source)
    magic = bytes(data[:2])
    if magic == _MAGIC_BYTES["<"]:
        return "<"
    if magic == _MAGIC_BYTES[">"]:
        return ">"
    raise FormatError(
        f"not SFrame data: magic is 0x{magic.hex()}, expected 0x{spec.MAGIC:04x} "
        "in either byte order",
        offset=0,
        source=source,
    )


def parse_header(data: bytes | memoryview, *, source: str | None = None) -> SFrameHeader:
    """The preamble and header at the start of `data`, checked for sense."""
    endian = byte_order(data, source=source)
    if len(data) < spec.PREAMBLE_LAYOUT.size:
        raise FormatError("too short for the SFrame preamble", offset=0, source=source)
    version = data[_HEADER_AT["sfp_version"]]
    if version not in spec.SUPPORTED_VERSIONS:
        raise FormatError(
            f"unsupported SFrame version {version} (1, 2 and 3 are known)",
            offset=_HEADER_AT["sfp_version"],
            source=source,
        )
    if len(data) < spec.HEADER_SIZE:
        raise FormatError(
            f"{len(data)} bytes are too short for the {spec.HEADER_SIZE}-byte SFrame header",
            offset=0,
            source=source,
        )
    fields = dict(
        zip(
            spec.HEADER_LAYOUT.names,
            spec.HEADER_LAYOUT.compiled(endian).unpack_from(data, 0),
            strict=True,
        )
    )
    abi = fields["sfh_abi_arch"]
    try:
        abi_arch = spec.AbiArch(abi)
    except ValueError:
        raise FormatError(
            f"unknown abi_arch {abi} (1-2 AArch64, 3 AMD64, 4 s390x)",
            offset=_HEADER_AT["sfh_abi_arch"],
            source=source,
        ) from None
    return SFrameHeader(
        version=fields["sfp_version"],
        flags=fields["sfp_flags"],
        abi_arch=abi_arch,
        cfa_fixed_fp_offset=fields["sfh_cfa_fixed_fp_offset"],
        cfa_fixed_ra_offset=fields["sfh_cfa_fixed_ra_offset"],
        auxhdr_len=fields["sfh_auxhdr_len"],
        num_fdes=fields["sfh_num_fdes"],
        num_fres=fields["sfh_num_fres"],
        fre_len=fields["sfh_fre_len"],
        fdeoff=fields["sfh_fdeoff"],
        freoff=fields["sfh_freoff"],
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
    return struct.Struct(endian + spec.WORD_CODE[size_code] * count)


# The FDE fields read, by version, in the order `_read_fde` takes them (v3 keeps
# the count, info bytes and repeat size in the attribute block, `_ATTR_V3`).
_FDE_FIELDS = (
    "sfde_func_start_address",
    "sfde_func_size",
    "sfde_func_start_fre_off",
    "sfde_func_num_fres",
    "sfde_func_info",
    "sfde_func_rep_size",
)
_PICK_FDE = {
    spec.VERSION_1: spec.FDE_V1_LAYOUT.picker(*_FDE_FIELDS[:5]),
    spec.VERSION_2: spec.FDE_V2_LAYOUT.picker(*_FDE_FIELDS),
    spec.VERSION_3: spec.FDE_V3_LAYOUT.picker(*_FDE_FIELDS[:3]),
}
_ATTR_V3 = spec.FDE_ATTR_V3_LAYOUT
_PICK_ATTR_V3 = _ATTR_V3.picker(
    "sfda_func_num_fres", "sfda_func_info", "sfda_func_info2", "sfda_func_rep_size"
)
_FDE_AT = {version: layout.offsets for version, layout in spec.FDE_LAYOUTS.items()}


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
                _HEADER_AT["sfh_auxhdr_len"],
            )
        stride = spec.FDE_SIZE[header.version]
        fdes_at = header.size + header.fdeoff
        fdes_end = fdes_at + header.num_fdes * stride
        if fdes_end > size:
            raise self.fail(
                f"{header.num_fdes} FDEs of {stride} bytes at offset 0x{fdes_at:x} run past "
                f"the section end ({size} bytes)",
                _HEADER_AT["sfh_num_fdes"],
            )
        fres_at = header.size + header.freoff
        fres_end = fres_at + header.fre_len
        if fres_end > size:
            raise self.fail(
                f"FRE sub-section (offset 0x{fres_at:x}, {header.fre_len} bytes) runs past "
                f"the section end ({size} bytes)",
                _HEADER_AT["sfh_fre_len"],
            )
        fde_struct = spec.FDE_LAYOUTS[header.version].compiled(header.endian)
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
        version = header.version
        fields = _PICK_FDE[version](fde_struct.unpack_from(self.data, at))
        fre_off_at = at + _FDE_AT[version]["sfde_func_start_fre_off"]
        info2 = rep_size = 0
        if version == spec.VERSION_3:
            raw_start, func_size, fre_off = fields
            attr_at = fres_at + fre_off
            if attr_at + _ATTR_V3.size > fres_end:
                raise self.fail(
                    f"FDE {index}: attribute block at FRE offset 0x{fre_off:x} lies outside "
                    "the FRE sub-section",
                    fre_off_at,
                )
            num_fres, info, info2, rep_size = _PICK_ATTR_V3(
                _ATTR_V3.compiled(header.endian).unpack_from(self.data, attr_at)
            )
            first_fre_at = attr_at + _ATTR_V3.size
        else:
            if version == spec.VERSION_2:
                raw_start, func_size, fre_off, num_fres, info, rep_size = fields
            else:
                raw_start, func_size, fre_off, num_fres, info = fields
            first_fre_at = fres_at + fre_off
            if num_fres and first_fre_at >= fres_end:
                raise self.fail(
                    f"FDE {index}: first FRE at offset 0x{fre_off:x} lies outside the FRE "
                    "sub-section",
                    fre_off_at,
                )
        if version >= spec.VERSION_2 and header.start_is_pcrel:
            # PC-relative: counted from the sfde_func_start_address field itself
            start = self.address + at + _FDE_AT[version]["sfde_func_start_address"] + raw_start
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
        fixed = spec.FRE_LAYOUTS[fre_type]
        fixed_size, info_at = fixed.size, fixed.offsets["sfre_info"]
        fixed_struct = fixed.compiled(endian)
        fres: list[FrameRowEntry] = []
        pos = at
        for _ in range(count):
            if pos + fixed_size > end:
                raise self.fail(
                    f"FDE {fde_index}: FRE {len(fres)} of {count} runs past the end of the "
                    "FRE sub-section",
                    pos,
                )
            start, info = fixed_struct.unpack_from(data, pos)  # sfre_start_address, sfre_info
            size_code = spec.fre_info_word_size_code(info)
            if size_code not in spec.WORD_SIZE:
                raise self.fail(
                    f"FDE {fde_index}: FRE {len(fres)} has an invalid data word size code 3",
                    pos + info_at,
                )
            word_count = spec.fre_info_word_count(info)
            words_at = pos + fixed_size
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
    flags_at = _HEADER_AT["sfp_flags"]
    if len(data) > flags_at and data[flags_at] & spec.F_FDE_FUNC_START_PCREL:
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
