"""A lean Mach-O reader: universal (fat) headers, load commands, sections, nlist symbols.

Layout follows Apple's <mach-o/fat.h>, <mach-o/loader.h> and <mach-o/nlist.h>
(also in LLVM's llvm/BinaryFormat/MachO.h), read top to bottom:

    fat_header        magic 0xcafebabe (big-endian), nfat_arch
    fat_arch[n]       cputype, cpusubtype, offset, size, align (0xcafebabf: 64-bit
                      offset and size)
    slice:
      mach_header     magic 0xfeedface (32-bit) / 0xfeedfacf (64-bit), cputype,
                      cpusubtype, filetype, ncmds, sizeofcmds, flags[, reserved]
      load commands   cmd, cmdsize, ... ; the ones read here:
        LC_SEGMENT(_64)  segname, vmaddr, vmsize, fileoff, filesize, ..., nsects,
                         then `nsects` section(_64) headers
        LC_SYMTAB        symoff, nsyms, stroff, strsize
        LC_UUID          16 bytes
      nlist(_64)[nsyms] n_strx, n_type, n_sect, n_desc, n_value

Offsets inside a slice are relative to the slice's start. A byte-swapped
magic (0xcefaedfe, 0xcffaedfe) means a big-endian slice (PowerPC).

`MachOFile` gives the DWARF reader the interface `ElfFile` gives it: DWARF
sections by their ELF names (`.debug_info` is the section `__debug_info`,
whatever its segment: `__DWARF` in a .dSYM or an object file), read in
place from the mapping. Every offset is bounds-checked; a malformed file
raises `FormatError` naming the file and the offset (within the whole
file, not the slice).

    fat = read_universal("app")                 # [] for a thin file
    macho = MachOFile.open("app", fat[1])       # or MachOFile.open("app") if thin
    macho.triple_arch_name, macho.uuid          # "arm64", LC_UUID
    macho.segments, macho.sections              # load commands, read at open
    macho.symbols()                             # nlist entries, read on demand
    macho.section(".debug_info")                # __debug_info, for DwarfReader(macho)
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from stackmark.binary import RecordLayout, unpack_at
from stackmark.errors import FormatError

# -- magics -----------------------------------------------------------------------
FAT_MAGIC, FAT_MAGIC_64 = 0xCAFEBABE, 0xCAFEBABF
MH_MAGIC, MH_MAGIC_64 = 0xFEEDFACE, 0xFEEDFACF
MH_CIGAM, MH_CIGAM_64 = 0xCEFAEDFE, 0xCFFAEDFE
# A Java class file also starts with 0xcafebabe; its next word (the class
# version) is at least 45, while no universal file has that many slices.
_MAX_FAT_ARCHS = 44

# -- mach_header.filetype ------------------------------------------------------------
MH_OBJECT, MH_EXECUTE, MH_DYLIB, MH_DYLIB_STUB, MH_DSYM = 0x1, 0x2, 0x6, 0x9, 0xA

# -- cputype / cpusubtype -----------------------------------------------------------------
CPU_ARCH_ABI64, CPU_ARCH_ABI64_32 = 0x01000000, 0x02000000
CPU_TYPE_X86, CPU_TYPE_ARM, CPU_TYPE_POWERPC = 7, 12, 18
CPU_TYPE_X86_64 = CPU_TYPE_X86 | CPU_ARCH_ABI64
CPU_TYPE_ARM64 = CPU_TYPE_ARM | CPU_ARCH_ABI64
CPU_TYPE_ARM64_32 = CPU_TYPE_ARM | CPU_ARCH_ABI64_32
CPU_TYPE_POWERPC64 = CPU_TYPE_POWERPC | CPU_ARCH_ABI64
CPU_SUBTYPE_MASK = 0xFF000000

# -- load commands ----------------------------------------------------------------------
LC_SEGMENT, LC_SYMTAB, LC_SEGMENT_64, LC_UUID = 0x1, 0x2, 0x19, 0x1B

# -- section.flags ----------------------------------------------------------------------
SECTION_TYPE = 0x000000FF
S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL = 0x1, 0xC, 0x12
S_ATTR_PURE_INSTRUCTIONS = 0x80000000
_ZEROFILL_TYPES = (S_ZEROFILL, S_GB_ZEROFILL, S_THREAD_LOCAL_ZEROFILL)

# -- nlist.n_type -----------------------------------------------------------------------
N_STAB, N_TYPE = 0xE0, 0x0E
N_UNDF, N_ABS, N_INDR, N_SECT = 0x0, 0x2, 0xA, 0xE


# Each record once, as (spec field name, struct code), in file order, with the
# names of <mach-o/loader.h>, <mach-o/fat.h> and <mach-o/nlist.h>.
FAT_HEADER = RecordLayout("fat_header", ("magic", "I"), ("nfat_arch", "I"))
FAT_ARCH = RecordLayout(
    "fat_arch",
    ("cputype", "i"),
    ("cpusubtype", "i"),
    ("offset", "I"),
    ("size", "I"),
    ("align", "I"),
)
FAT_ARCH_64 = RecordLayout(
    "fat_arch_64",
    ("cputype", "i"),
    ("cpusubtype", "i"),
    ("offset", "Q"),
    ("size", "Q"),
    ("align", "I"),
    ("reserved", "I"),
)
MACH_HEADER = RecordLayout(
    "mach_header",
    ("magic", "I"),
    ("cputype", "i"),
    ("cpusubtype", "i"),
    ("filetype", "I"),
    ("ncmds", "I"),
    ("sizeofcmds", "I"),
    ("flags", "I"),
)
MACH_HEADER_64 = RecordLayout(
    "mach_header_64",
    ("magic", "I"),
    ("cputype", "i"),
    ("cpusubtype", "i"),
    ("filetype", "I"),
    ("ncmds", "I"),
    ("sizeofcmds", "I"),
    ("flags", "I"),
    ("reserved", "I"),
)
LOAD_COMMAND = RecordLayout("load_command", ("cmd", "I"), ("cmdsize", "I"))
SEGMENT_COMMAND = RecordLayout(
    "segment_command",
    ("cmd", "I"),
    ("cmdsize", "I"),
    ("segname", "16s"),
    ("vmaddr", "I"),
    ("vmsize", "I"),
    ("fileoff", "I"),
    ("filesize", "I"),
    ("maxprot", "i"),
    ("initprot", "i"),
    ("nsects", "I"),
    ("flags", "I"),
)
SEGMENT_COMMAND_64 = RecordLayout(
    "segment_command_64",
    ("cmd", "I"),
    ("cmdsize", "I"),
    ("segname", "16s"),
    ("vmaddr", "Q"),
    ("vmsize", "Q"),
    ("fileoff", "Q"),
    ("filesize", "Q"),
    ("maxprot", "i"),
    ("initprot", "i"),
    ("nsects", "I"),
    ("flags", "I"),
)
SECTION = RecordLayout(
    "section",
    ("sectname", "16s"),
    ("segname", "16s"),
    ("addr", "I"),
    ("size", "I"),
    ("offset", "I"),
    ("align", "I"),
    ("reloff", "I"),
    ("nreloc", "I"),
    ("flags", "I"),
    ("reserved1", "I"),
    ("reserved2", "I"),
)
SECTION_64 = RecordLayout(
    "section_64",
    ("sectname", "16s"),
    ("segname", "16s"),
    ("addr", "Q"),
    ("size", "Q"),
    ("offset", "I"),
    ("align", "I"),
    ("reloff", "I"),
    ("nreloc", "I"),
    ("flags", "I"),
    ("reserved1", "I"),
    ("reserved2", "I"),
    ("reserved3", "I"),
)
SYMTAB_COMMAND = RecordLayout(
    "symtab_command",
    ("cmd", "I"),
    ("cmdsize", "I"),
    ("symoff", "I"),
    ("nsyms", "I"),
    ("stroff", "I"),
    ("strsize", "I"),
)
UUID_COMMAND = RecordLayout("uuid_command", ("cmd", "I"), ("cmdsize", "I"), ("uuid", "16s"))
NLIST = RecordLayout(
    "nlist", ("n_strx", "I"), ("n_type", "B"), ("n_sect", "B"), ("n_desc", "h"), ("n_value", "I")
)
NLIST_64 = RecordLayout(
    "nlist_64", ("n_strx", "I"), ("n_type", "B"), ("n_sect", "B"), ("n_desc", "h"), ("n_value", "Q")
)


def _fixed_name(raw: bytes) -> str:
    """A 16-byte name field: NUL-padded, or all 16 bytes when it has no NUL."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


# -- architecture names (LLVM's MachOObjectFile::getArchTriple and getArch) -------------

_TRIPLE_ARCH: dict[int, dict[int, str]] = {
    CPU_TYPE_X86: {3: "i386"},
    CPU_TYPE_X86_64: {3: "x86_64", 8: "x86_64h"},
    CPU_TYPE_ARM: {
        5: "armv4t",
        6: "armv6",
        7: "armv5e",
        8: "xscale",
        9: "armv7",
        11: "armv7s",
        12: "armv7k",
        14: "thumbv6m",
        15: "thumbv7m",
        16: "thumbv7em",
    },
    CPU_TYPE_ARM64: {0: "arm64", 2: "arm64e"},
    CPU_TYPE_ARM64_32: {1: "arm64_32"},
    CPU_TYPE_POWERPC: {0: "ppc"},
    CPU_TYPE_POWERPC64: {0: "ppc64"},
}

_ARCH_TYPE: dict[int, str] = {
    CPU_TYPE_X86: "i386",
    CPU_TYPE_X86_64: "x86_64",
    CPU_TYPE_ARM: "arm",
    CPU_TYPE_ARM64: "aarch64",
    CPU_TYPE_ARM64_32: "aarch64_32",
    CPU_TYPE_POWERPC: "powerpc",
    CPU_TYPE_POWERPC64: "powerpc64",
}


def triple_arch_name(cputype: int, cpusubtype: int) -> str:
    """The Apple arch name of a CPU (`arm64`, `armv7`, `x86_64h`), "" when unknown.

    This is what `lipo` and `--arch` call a slice."""
    subtype = cpusubtype & ~CPU_SUBTYPE_MASK & 0xFFFFFFFF
    return _TRIPLE_ARCH.get(cputype, {}).get(subtype, "")


def llvm_arch_name(cputype: int) -> str:
    """LLVM's generic arch name of a CPU (`aarch64`, `arm`, `x86_64`), "unknown" if none."""
    return _ARCH_TYPE.get(cputype, "unknown")


# -- records -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FatArch:
    """One slice of a universal file: where it lies in the file, and the CPU its
    entry claims (LLVM names and matches a slice by its own mach_header)."""

    index: int
    cputype: int
    cpusubtype: int
    offset: int
    size: int
    align: int


@dataclass(frozen=True, slots=True)
class Segment:
    """An LC_SEGMENT or LC_SEGMENT_64 command (without its sections)."""

    name: str
    vmaddr: int
    vmsize: int
    fileoff: int
    filesize: int
    command_offset: int


@dataclass(frozen=True, slots=True)
class Section:
    """One section header; `index` is 1-based, the number an nlist's n_sect holds."""

    index: int
    name: str
    segment: str
    addr: int
    size: int
    offset: int
    flags: int
    header_offset: int

    @property
    def is_zerofill(self) -> bool:
        return self.flags & SECTION_TYPE in _ZEROFILL_TYPES

    @property
    def is_text(self) -> bool:
        """Code: LLVM's isSectionText (S_ATTR_PURE_INSTRUCTIONS)."""
        return bool(self.flags & S_ATTR_PURE_INSTRUCTIONS)


@dataclass(frozen=True, slots=True)
class Symbol:
    """One nlist entry; `name` is None when n_strx points outside the file
    (`name_error` then says so)."""

    index: int
    name: str | None
    type: int
    sect: int
    desc: int
    value: int
    name_error: str = ""

    @property
    def is_stab(self) -> bool:
        return bool(self.type & N_STAB)

    @property
    def kind(self) -> int:
        """n_type & N_TYPE: N_UNDF, N_ABS, N_SECT, N_INDR, ..."""
        return self.type & N_TYPE


# -- opening ------------------------------------------------------------------------------


def _map(path: str) -> bytes | mmap.mmap:
    """The contents of `path` (mapped), or FormatError for what cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FormatError("not a regular file", source=path)
            if st.st_size == 0:
                return b""
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=path) from None


def _unpack(
    data: bytes | mmap.mmap, fmt: struct.Struct, offset: int, what: str, source: str, end: int
) -> tuple[int | bytes, ...]:
    """`fmt` at `offset`, or FormatError when it runs past `end`."""

    def overrun(what: str, at: int, size: int) -> FormatError:
        return FormatError(
            f"{what} ({size} bytes) runs past the end of the file", offset=at, source=source
        )

    return unpack_at(fmt, data, offset, end, what, overrun)


def fat_magic(data: bytes | mmap.mmap) -> int | None:
    """FAT_MAGIC or FAT_MAGIC_64 when `data` starts a universal file, else None."""
    if len(data) < 8:
        return None
    magic, count = FAT_HEADER.compiled(">").unpack_from(data, 0)  # big-endian, always
    if magic in (FAT_MAGIC, FAT_MAGIC_64) and count < _MAX_FAT_ARCHS:
        return int(magic)
    return None


def parse_universal(data: bytes | mmap.mmap, source: str) -> list[FatArch]:
    """The slices of a universal file ([] when `data` is not one), checked to lie in it."""
    magic = fat_magic(data)
    if magic is None:
        return []
    layout = FAT_ARCH_64 if magic == FAT_MAGIC_64 else FAT_ARCH
    fmt = layout.compiled(">")
    _, count = FAT_HEADER.compiled(">").unpack_from(data, 0)
    arches = []
    for i in range(count):
        at = FAT_HEADER.size + i * fmt.size
        cputype, cpusubtype, offset, size, align, *_ = _unpack(
            data, fmt, at, f"fat_arch {i}", source, len(data)
        )
        assert isinstance(offset, int) and isinstance(size, int)
        if offset + size > len(data):
            raise FormatError(
                f"slice {i} ({size} bytes at 0x{offset:x}) runs past the end of the file "
                f"({len(data)} bytes)",
                offset=at,
                source=source,
            )
        arches.append(FatArch(i, int(cputype), int(cpusubtype), offset, size, int(align)))
    return arches


def read_universal(path: str) -> list[FatArch]:
    """The slices of the universal file at `path` ([] for a thin file)."""
    data = _map(path)
    try:
        return parse_universal(data, path)
    finally:
        if isinstance(data, mmap.mmap):
            with contextlib.suppress(BufferError):
                data.close()


def is_macho(path: str | os.PathLike[str]) -> bool:
    """True when `path` is a regular file starting with a Mach-O or universal magic."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.pread(fd, 8, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    if len(head) < 4:
        return False
    if struct.unpack_from("<I", head)[0] in (MH_MAGIC, MH_MAGIC_64, MH_CIGAM, MH_CIGAM_64):
        return True
    return fat_magic(head) is not None


def dsym_members(path: str) -> list[str] | None:
    """The files in a `.dSYM` bundle's Contents/Resources/DWARF/ (directory order),
    or None when `path` is not a .dSYM directory.

    As LLVM's MachOObjectFile::findDsymObjectMembers: a bundle without that
    directory, or with nothing in it, is an error."""
    bundle = os.path.normpath(path)
    if not os.path.isdir(bundle) or os.path.splitext(bundle)[1] != ".dSYM":
        return None
    directory = os.path.join(bundle, "Contents", "Resources", "DWARF")
    if not os.path.isdir(directory):
        raise FormatError(
            "expected directory 'Contents/Resources/DWARF' in dSYM bundle", source=path
        )
    try:
        members = [e.path for e in os.scandir(directory) if not e.is_dir()]
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=directory) from None
    if not members:
        raise FormatError("no objects found in dSYM bundle", source=path)
    return members


class MachOFile:
    """One Mach-O image: a thin file, or one slice of a universal file.

    Load commands are read at open; sections' contents and the symbol table
    when asked for.
    """

    def __init__(self, data: bytes | mmap.mmap, name: str, fat_arch: FatArch | None = None):
        self._data = data
        self.name = name
        self.fat_arch = fat_arch
        self.base = fat_arch.offset if fat_arch is not None else 0
        self.end = self.base + fat_arch.size if fat_arch is not None else len(data)
        self.segments: list[Segment] = []
        self.sections: list[Section] = []
        self.uuid = b""
        self._symtab: tuple[int, int, int, int, int] | None = None
        self._parse_header()
        self._parse_load_commands()

    # -- opening ----------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], fat_arch: FatArch | None = None) -> MachOFile:
        """Open a thin Mach-O file, or the slice `fat_arch` of a universal one."""
        name = os.fspath(path)
        return cls(_map(name), name, fat_arch)

    @classmethod
    def open_slice(cls, path: str, index: int | None) -> MachOFile:
        """Open `path`, or its slice number `index` (picklable for worker processes)."""
        if index is None:
            return cls.open(path)
        data = _map(path)
        return cls(data, path, parse_universal(data, path)[index])

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<memory>") -> MachOFile:
        return cls(bytes(data), name)

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._data.close()

    def __enter__(self) -> MachOFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def size(self) -> int:
        """The size of the image (of the slice in a universal file)."""
        return self.end - self.base

    def _read(self, fmt: struct.Struct, offset: int, what: str) -> tuple[int | bytes, ...]:
        """`fmt` at image `offset`; FormatError (naming the file offset) past the image."""
        return unpack_at(fmt, self._data, self.base + offset, self.end, what, self._overrun)

    def _overrun(self, what: str, at: int, size: int) -> FormatError:
        return FormatError(
            f"{what} ({size} bytes at 0x{at - self.base:x}) runs past the end of the Mach-O "
            f"image ({self.size} bytes)",
            offset=at,
            source=self.name,
        )

    # -- mach_header ------------------------------------------------------------

    def _parse_header(self) -> None:
        if self.size < 4:
            raise FormatError(
                "not a Mach-O file (shorter than its magic)", offset=self.base, source=self.name
            )
        (magic,) = struct.unpack_from("<I", self._data, self.base)
        if magic in (MH_MAGIC, MH_MAGIC_64):
            self.endian = "<"
        elif magic in (MH_CIGAM, MH_CIGAM_64):
            self.endian = ">"
        else:
            raise FormatError(
                f"not a Mach-O file (magic 0x{magic:08x})", offset=self.base, source=self.name
            )
        self.is_64 = magic in (MH_MAGIC_64, MH_CIGAM_64)
        layout = MACH_HEADER_64 if self.is_64 else MACH_HEADER
        fields = self._read(layout.compiled(self.endian), 0, "mach_header")
        header = dict(zip(layout.names, fields, strict=True))
        self.cputype = int(header["cputype"])
        self.cpusubtype = int(header["cpusubtype"])
        self.filetype = int(header["filetype"])
        self.ncmds = int(header["ncmds"])
        self.sizeofcmds = int(header["sizeofcmds"])
        self.flags = int(header["flags"])
        self.header_size = layout.size
        if self.header_size + self.sizeofcmds > self.size:
            raise FormatError(
                f"load commands ({self.sizeofcmds} bytes) run past the end of the file",
                offset=self.base + self.header_size,
                source=self.name,
            )

    @property
    def arch_name(self) -> str:
        """LLVM's arch name for this image as a thin file (`aarch64`, `x86_64`)."""
        return llvm_arch_name(self.cputype)

    @property
    def triple_arch_name(self) -> str:
        """The Apple arch name (`arm64`, `armv7`), as a universal file's slice is named."""
        return triple_arch_name(self.cputype, self.cpusubtype)

    # -- load commands --------------------------------------------------------------

    def _parse_load_commands(self) -> None:
        command = LOAD_COMMAND.compiled(self.endian)
        offset = self.header_size
        end = self.header_size + self.sizeofcmds
        for i in range(self.ncmds):
            if offset + command.size > end:
                raise FormatError(
                    f"load command {i} lies past the end of the load commands "
                    f"(sizeofcmds {self.sizeofcmds})",
                    offset=self.base + offset,
                    source=self.name,
                )
            cmd, cmdsize = self._read(command, offset, f"load command {i}")
            assert isinstance(cmd, int) and isinstance(cmdsize, int)
            if cmdsize < command.size or offset + cmdsize > end:
                raise FormatError(
                    f"load command {i} (0x{cmd:x}) has a bad cmdsize {cmdsize}",
                    offset=self.base + offset + 4,
                    source=self.name,
                )
            if cmd in (LC_SEGMENT, LC_SEGMENT_64):
                self._parse_segment(offset, cmd == LC_SEGMENT_64, cmdsize, i)
            elif cmd == LC_SYMTAB:
                self._parse_symtab(offset, cmdsize, i)
            elif cmd == LC_UUID:
                self._need(cmdsize, UUID_COMMAND, offset, i)
                _, _, uuid = self._read(UUID_COMMAND.compiled(self.endian), offset, "LC_UUID")
                assert isinstance(uuid, bytes)
                self.uuid = uuid
            offset += cmdsize

    def _need(self, cmdsize: int, layout: RecordLayout, offset: int, index: int) -> None:
        size = layout.size
        if cmdsize < size:
            raise FormatError(
                f"load command {index} is {cmdsize} bytes, shorter than its {size}-byte structure",
                offset=self.base + offset + 4,
                source=self.name,
            )

    def _parse_segment(self, offset: int, is_64: bool, cmdsize: int, index: int) -> None:
        layout = SEGMENT_COMMAND_64 if is_64 else SEGMENT_COMMAND
        section_layout = SECTION_64 if is_64 else SECTION
        self._need(cmdsize, layout, offset, index)
        fmt = layout.compiled(self.endian)
        values = dict(zip(layout.names, self._read(fmt, offset, "segment command"), strict=True))
        nsects = int(values["nsects"])
        section_fmt = section_layout.compiled(self.endian)
        if fmt.size + nsects * section_fmt.size > cmdsize:
            raise FormatError(
                f"segment command {index} claims {nsects} sections, more than its "
                f"cmdsize {cmdsize} holds",
                offset=self.base + offset,
                source=self.name,
            )
        raw_name = values["segname"]
        assert isinstance(raw_name, bytes)
        fileoff, filesize = int(values["fileoff"]), int(values["filesize"])
        if fileoff + filesize > self.size:
            raise FormatError(
                f"segment {_fixed_name(raw_name)} (fileoff 0x{fileoff:x}, filesize {filesize}) "
                "runs past the end of the file",
                offset=self.base + offset,
                source=self.name,
            )
        self.segments.append(
            Segment(
                _fixed_name(raw_name),
                int(values["vmaddr"]),
                int(values["vmsize"]),
                int(values["fileoff"]),
                int(values["filesize"]),
                self.base + offset,
            )
        )
        for j in range(nsects):
            at = offset + fmt.size + j * section_fmt.size
            fields = dict(
                zip(
                    section_layout.names, self._read(section_fmt, at, "section header"), strict=True
                )
            )
            sectname, segname = fields["sectname"], fields["segname"]
            assert isinstance(sectname, bytes) and isinstance(segname, bytes)
            self._check_section(values, fields, self.base + at)
            self.sections.append(
                Section(
                    len(self.sections) + 1,
                    _fixed_name(sectname),
                    _fixed_name(segname),
                    int(fields["addr"]),
                    int(fields["size"]),
                    int(fields["offset"]),
                    int(fields["flags"]),
                    self.base + at,
                )
            )

    def _check_section(
        self, segment: dict[str, int | bytes], fields: dict[str, int | bytes], header_offset: int
    ) -> None:
        """The checks of LLVM's MachOObjectFile on a section header that the
        conversion depends on: its bytes lie in the file and in its segment
        (not in a .dSYM, where only __DWARF has bytes, nor for zero-fill
        sections: LLVM compares the whole flags word with those types), and
        its addresses lie in the segment's."""
        raw_name = fields["sectname"]
        name = _fixed_name(raw_name) if isinstance(raw_name, bytes) else ""
        offset, size, addr = int(fields["offset"]), int(fields["size"]), int(fields["addr"])
        vmaddr, vmsize = int(segment["vmaddr"]), int(segment["vmsize"])

        def fail(what: str) -> FormatError:
            return FormatError(f"section {name} {what}", offset=header_offset, source=self.name)

        has_bytes = self.filetype not in (MH_DSYM, MH_DYLIB_STUB) and fields["flags"] not in (
            S_ZEROFILL,
            S_THREAD_LOCAL_ZEROFILL,
        )
        if has_bytes and offset + size > self.size:
            raise fail(f"({size} bytes at 0x{offset:x}) runs past the end of the file")
        if has_bytes and size > int(segment["filesize"]):
            raise fail(f"({size} bytes) is larger than its segment's bytes in the file")
        if vmsize and size and addr + size > vmaddr + vmsize:
            raise fail(f"[0x{addr:x}, 0x{addr + size:x}) runs past the end of its segment")

    def _parse_symtab(self, offset: int, cmdsize: int, index: int) -> None:
        self._need(cmdsize, SYMTAB_COMMAND, offset, index)
        _, _, symoff, nsyms, stroff, strsize = self._read(
            SYMTAB_COMMAND.compiled(self.endian), offset, "LC_SYMTAB"
        )
        assert isinstance(symoff, int) and isinstance(nsyms, int)
        assert isinstance(stroff, int) and isinstance(strsize, int)
        entry = (NLIST_64 if self.is_64 else NLIST).size
        if symoff + nsyms * entry > self.size:
            raise FormatError(
                f"symbol table ({nsyms} entries at 0x{symoff:x}) runs past the end of the file",
                offset=self.base + offset + 8,
                source=self.name,
            )
        if stroff + strsize > self.size:
            raise FormatError(
                f"string table ({strsize} bytes at 0x{stroff:x}) runs past the end of the file",
                offset=self.base + offset + 16,
                source=self.name,
            )
        self._symtab = (symoff, nsyms, stroff, strsize, self.base + offset)

    # -- segments and sections -------------------------------------------------------

    def segment(self, name: str) -> Segment | None:
        """The first segment called `name` (`__TEXT`, `__DWARF`)."""
        return next((s for s in self.segments if s.name == name), None)

    def file_size_of(self, section: Section) -> int:
        """The section's size as LLVM counts it: a zero-fill section's own size,
        else clipped to the bytes the file holds from its offset (0 when the
        offset lies past the end)."""
        if section.is_zerofill:
            return section.size
        if section.offset > self.size:
            return 0
        return min(section.size, self.size - section.offset)

    @cached_property
    def _debug_sections(self) -> dict[str, Section]:
        """DWARF sections by ELF name: `__debug_info` is `.debug_info`, and the
        16-byte-truncated `__debug_str_offs` is `.debug_str_offsets` (the last
        section of a name wins, as in LLVM's DWARFContext)."""
        by_name: dict[str, Section] = {}
        for section in self.sections:
            name = section.name.lstrip("_.")
            if name == "debug_str_offs":
                name = "debug_str_offsets"
            by_name["." + name] = section
        return by_name

    def section(self, name: str) -> Section | None:
        """The section with the ELF-style name `name` (`.debug_line`), as DWARF asks."""
        return self._debug_sections.get(name)

    def section_buffer(self, section: Section) -> tuple[bytes | mmap.mmap, int, int]:
        """(buffer, start, end) of the section's contents, read in place."""
        if section.is_zerofill or section.size == 0:
            return b"", 0, 0
        start = self.base + section.offset
        if section.offset + section.size > self.size:
            raise FormatError(
                f"section {section.segment},{section.name} ({section.size} bytes at "
                f"0x{section.offset:x}) runs past the end of the file",
                offset=section.header_offset,
                source=self.name,
            )
        return self._data, start, start + section.size

    def section_data(self, section: Section | str) -> bytes:
        """The contents of a section (by ELF-style name, b"" when it is missing)."""
        if isinstance(section, str):
            found = self.section(section)
            if found is None:
                return b""
            section = found
        buf, start, end = self.section_buffer(section)
        return bytes(buf[start:end])

    @property
    def has_dwarf(self) -> bool:
        info = self.section(".debug_info")
        return info is not None and not info.is_zerofill and info.size > 0

    # -- symbol table -----------------------------------------------------------------

    def symbols(self) -> Iterator[Symbol]:
        """Every nlist entry of LC_SYMTAB, in table order (none without LC_SYMTAB).

        A name is read from the string table up to its NUL; as in LLVM, only an
        n_strx that points outside the file is an error (reported on the
        symbol), and n_strx 0 is the empty name."""
        if self._symtab is None:
            return
        symoff, nsyms, stroff, _, _ = self._symtab
        layout = NLIST_64 if self.is_64 else NLIST
        fmt = layout.compiled(self.endian)
        data = self._data
        for i in range(nsyms):
            strx, n_type, n_sect, n_desc, n_value = self._read(
                fmt, symoff + i * fmt.size, f"nlist entry {i}"
            )
            assert isinstance(strx, int)
            name: str | None = ""
            error = ""
            if strx:
                at = self.base + stroff + strx
                if stroff + strx >= self.size:
                    name = None
                    error = f"bad string index: {strx} for symbol at index {i}"
                else:
                    nul = data.find(b"\0", at, self.end)
                    stop = self.end if nul < 0 else nul
                    name = bytes(data[at:stop]).decode("utf-8", "surrogateescape")
            yield Symbol(i, name, int(n_type), int(n_sect), int(n_desc), int(n_value), error)

    def symbol_section(self, symbol: Symbol) -> Section | None:
        """The section an N_SECT symbol's n_sect names (None for NO_SECT).

        An n_sect past the section list is malformed: FormatError."""
        if symbol.sect == 0:
            return None
        if symbol.sect > len(self.sections):
            raise FormatError(
                f"bad section index: {symbol.sect} for symbol at index {symbol.index}",
                source=self.name,
            )
        return self.sections[symbol.sect - 1]


__all__ = [
    "FatArch",
    "MachOFile",
    "Section",
    "Segment",
    "Symbol",
    "dsym_members",
    "is_macho",
    "parse_universal",
    "read_universal",
]
