"""Section views and the primitive reads every DWARF structure is built from.

A `Section` is a window `buf[start:end]` onto the file mapping (or onto
decompressed bytes), read in place: DWARF offsets are section-relative and
`start + offset` is the position in `buf`. The LEB128 readers the DWARF
readers use are `stackmark.binary`'s unchecked ones over (buf, pos), because
they sit in every hot loop; `guarded` turns the IndexError of a value cut by
the end of the buffer into a FormatError naming the section.

Headers (units, line tables, address range sets) are read field by field
through `Section.cursor`, a `binary.Cursor` that fails as `Section.check`
does; the DIE and line-program loops keep `check` and `guarded`.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from typing import Literal, Protocol, TypeAlias, TypeVar

from stackmark.binary import Cursor
from stackmark.errors import FormatError

Buffer: TypeAlias = bytes | mmap.mmap
ByteOrder: TypeAlias = Literal["little", "big"]

_Header = TypeVar("_Header")


class SectionSource(Protocol[_Header]):
    """The object file a `DwarfReader` reads: `stackmark.elf.ElfFile` or
    `stackmark.macho.MachOFile`. Sections are asked for by their ELF names
    (`.debug_info`); a Mach-O file maps them to `__debug_info`."""

    @property
    def name(self) -> str: ...

    @property
    def endian(self) -> str: ...

    def section(self, name: str) -> _Header | None: ...

    def section_buffer(self, section: _Header) -> tuple[Buffer, int, int]: ...

    def section_data(self, section: str) -> bytes: ...

    def close(self) -> None: ...


def byteorder(endian: str) -> ByteOrder:
    """int.from_bytes' name for a struct byte-order prefix ("<" or ">")."""
    return "little" if endian == "<" else "big"


class Section:
    """One DWARF section of one file, read in place."""

    __slots__ = ("buf", "end", "name", "source", "start")

    def __init__(self, name: str, buf: Buffer, start: int, end: int, source: str):
        self.name = name
        self.buf = buf
        self.start = start
        self.end = end
        self.source = source

    @classmethod
    def empty(cls, name: str, source: str) -> Section:
        return cls(name, b"", 0, 0, source)

    @property
    def size(self) -> int:
        return self.end - self.start

    def __bool__(self) -> bool:
        return self.end > self.start

    def error(self, message: str, offset: int) -> FormatError:
        """A FormatError naming this section and a section-relative offset."""
        return FormatError(f"{self.name}: {message}", offset=offset, source=self.source)

    def check(self, offset: int, size: int, what: str) -> int:
        """The buffer position of `size` bytes at section `offset`, or FormatError."""
        if offset < 0 or size < 0 or offset + size > self.end - self.start:
            raise self.error(
                f"{what} at 0x{offset:x} (+{size}) lies outside the section "
                f"({self.end - self.start} bytes)",
                offset,
            )
        return self.start + offset

    def bytes_at(self, offset: int, size: int, what: str) -> bytes:
        pos = self.check(offset, size, what)
        return bytes(self.buf[pos : pos + size])

    def cstring(self, offset: int) -> str:
        """The NUL-terminated string at section `offset` (UTF-8, undecodable bytes escaped)."""
        pos = self.check(offset, 1, "string")
        nul = self.buf.find(b"\0", pos, self.end)
        if nul < 0:
            raise self.error(f"string at 0x{offset:x} is not NUL-terminated", offset)
        return self.buf[pos:nul].decode("utf-8", "surrogateescape")

    def cursor(self, offset: int, endian: str) -> SectionCursor:
        """A `Cursor` reading this section from section `offset`, in byte order `endian`."""
        return SectionCursor(self, offset, endian)

    def unpack(self, fmt: struct.Struct, offset: int, what: str) -> tuple[int, ...]:
        pos = self.check(offset, fmt.size, what)
        return fmt.unpack_from(self.buf, pos)

    def uint(self, offset: int, size: int, endian: str, what: str) -> int:
        pos = self.check(offset, size, what)
        return int.from_bytes(self.buf[pos : pos + size], byteorder(endian))


class SectionCursor(Cursor):
    """The shared `Cursor` over one section: positions are in the buffer, and
    `offset` gives the section-relative one; a read past the section's end
    raises the error `Section.check` raises, at the section-relative offset."""

    __slots__ = ("section",)

    def __init__(self, section: Section, offset: int, endian: str):
        super().__init__(
            section.buf,
            section.start + offset,
            section.end,
            little=endian == "<",
            source=section.source,
            base=section.start,
        )
        self.section = section

    @property
    def offset(self) -> int:
        """The section-relative position."""
        return self.pos - self.base

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        offset = at - self.base
        span = "a LEB128" if size is None else f"+{size}"
        return self.section.error(
            f"{what} at 0x{offset:x} ({span}) lies outside the section ({self.section.size} bytes)",
            offset,
        )

    def sub(self, size: int, what: str) -> SectionCursor:
        pos = self.pos
        if pos + size > self.end:
            raise self.overrun(what, pos, size)
        self.pos = pos + size
        cursor = SectionCursor(self.section, pos - self.base, "<" if self.little else ">")
        cursor.end = pos + size
        return cursor


def guarded(section: Section, offset: int, what: str) -> Callable[[BaseException], FormatError]:
    """Turn a low-level read failure (IndexError, struct.error, ...) into a FormatError."""

    def convert(exc: BaseException) -> FormatError:
        return section.error(f"truncated or malformed {what} ({exc})", offset)

    return convert
