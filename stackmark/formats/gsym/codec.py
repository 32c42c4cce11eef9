"""Bounds-checked reads and the writes GSYM is made of.

GSYM stores fixed-width integers (u8/u16/u32/u64) in the file's byte order
and ULEB128/SLEB128 values, which have none. `Cursor` reads them from a
buffer (bytes or an mmap) between a position and an end, and raises
`RecordError` (a `FormatError`) naming the absolute offset when a value runs
past the end. `Writer` appends them to a growing buffer and can patch a u32
afterwards (lengths and offsets that are only known later).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator

from stackmark.errors import FormatError

Buffer = bytes | bytearray | mmap.mmap


class RecordError(FormatError):
    """A malformed GSYM structure.

    `offset` is the absolute file offset; `llvm_reason` is the text
    llvm-gsymutil prints for the same problem (with its offset relative to
    the record being decoded), used where we reproduce its dump output.
    """

    def __init__(
        self,
        message: str,
        *,
        offset: int | None = None,
        source: str | None = None,
        llvm_reason: str | None = None,
    ):
        super().__init__(message, offset=offset, source=source)
        self.llvm_reason = llvm_reason if llvm_reason is not None else message

    def with_source(self, source: str) -> RecordError:
        return RecordError(
            self.reason, offset=self.offset, source=source, llvm_reason=self.llvm_reason
        )


_U16 = {True: struct.Struct("<H"), False: struct.Struct(">H")}
_U32 = {True: struct.Struct("<I"), False: struct.Struct(">I")}
_U64 = {True: struct.Struct("<Q"), False: struct.Struct(">Q")}


class Cursor:
    """Reads values from `data[pos:end]`; `base` is the offset LLVM counts from.

    `base` only matters for `llvm_reason` texts: LLVM reports offsets
    relative to the start of the record it is decoding (a FunctionInfo, or
    one InfoType payload).
    """

    __slots__ = ("_u16", "_u32", "_u64", "base", "data", "end", "little", "pos", "source")

    def __init__(
        self,
        data: Buffer,
        pos: int,
        end: int,
        *,
        little: bool,
        source: str | None = None,
        base: int | None = None,
    ):
        self.data = data
        self.pos = pos
        self.end = min(end, len(data))
        self.little = little
        self.source = source
        self.base = pos if base is None else base
        self._u16 = _U16[little]
        self._u32 = _U32[little]
        self._u64 = _U64[little]

    def fail(self, what: str, at: int | None = None) -> RecordError:
        """A `RecordError` saying `what` is missing at `at` (default: here)."""
        where = self.pos if at is None else at
        return RecordError(
            f"{what}: data ends at offset 0x{self.end:x}",
            offset=where,
            source=self.source,
            llvm_reason=f"0x{where - self.base:08x}: {what}",
        )

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def u8(self, what: str) -> int:
        pos = self.pos
        if pos >= self.end:
            raise self.fail(what)
        self.pos = pos + 1
        return self.data[pos]

    def u16(self, what: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.fail(what)
        self.pos = pos + 2
        value: int = self._u16.unpack_from(self.data, pos)[0]
        return value

    def u32(self, what: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self.fail(what)
        self.pos = pos + 4
        value: int = self._u32.unpack_from(self.data, pos)[0]
        return value

    def u64(self, what: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self.fail(what)
        self.pos = pos + 8
        value: int = self._u64.unpack_from(self.data, pos)[0]
        return value

    def uint(self, size: int, what: str) -> int:
        """An unsigned integer of `size` bytes (1, 2, 4 or 8)."""
        if size == 1:
            return self.u8(what)
        if size == 2:
            return self.u16(what)
        if size == 4:
            return self.u32(what)
        return self.u64(what)

    def uleb(self, what: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                raise self.fail(what)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        self.pos = pos
        return result & 0xFFFFFFFFFFFFFFFF

    def sleb(self, what: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                raise self.fail(what)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        self.pos = pos
        if byte & 0x40:
            result -= 1 << shift
        # LLVM keeps the low 64 bits, as a signed value.
        result &= 0xFFFFFFFFFFFFFFFF
        return result - (1 << 64) if result >> 63 else result

    def bytes(self, size: int, what: str) -> bytes:
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise self.fail(what)
        self.pos = pos + size
        return bytes(self.data[pos : pos + size])

    def sub(self, size: int, what: str) -> Cursor:
        """A cursor over the next `size` bytes (its own record); skip them here."""
        pos = self.pos
        if pos + size > self.end:
            raise self.fail(what)
        self.pos = pos + size
        return Cursor(self.data, pos, pos + size, little=self.little, source=self.source)


# -- LEB128 values read from an iterator over bytes -----------------------------
#
# The fast lookup walks (line_table, inline_info) read a record through an
# iterator and take a one-byte value inline; these finish a value whose
# first byte has the continuation bit set. Past the end of the bytes,
# `next` raises StopIteration, which sends those walks to their checked
# versions.


def uleb_rest(it: Iterator[int], byte: int) -> int:
    """A ULEB128 that starts with `byte`, as `Cursor.uleb` reads it."""
    value, shift = byte & 0x7F, 7
    while byte >= 0x80:
        byte = next(it)
        value |= (byte & 0x7F) << shift
        shift += 7
    return value & 0xFFFFFFFFFFFFFFFF


def sleb_rest(it: Iterator[int], byte: int) -> int:
    """An SLEB128 that starts with `byte`, as `Cursor.sleb` reads it (its own loop,
    like `uleb_rest`'s: the sign needs the last byte and the width, and a shared
    helper returning them cost these walks 4% more instructions)."""
    value, shift = byte & 0x7F, 7
    while byte >= 0x80:
        byte = next(it)
        value |= (byte & 0x7F) << shift
        shift += 7
    if byte & 0x40:
        value -= 1 << shift
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >> 63 else value


def uleb_bytes(value: int) -> bytes:
    """ULEB128 encoding of a non-negative integer."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sleb_bytes(value: int) -> bytes:
    """SLEB128 encoding of a signed integer."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


class Writer:
    """Appends GSYM values in one byte order; `fixup32` patches a u32 later."""

    __slots__ = ("_u16", "_u32", "_u64", "buf", "little")

    def __init__(self, little: bool):
        self.buf = bytearray()
        self.little = little
        self._u16 = _U16[little]
        self._u32 = _U32[little]
        self._u64 = _U64[little]

    def tell(self) -> int:
        return len(self.buf)

    def u8(self, value: int) -> None:
        self.buf.append(value & 0xFF)

    def u16(self, value: int) -> None:
        self.buf += self._u16.pack(value & 0xFFFF)

    def u32(self, value: int) -> None:
        self.buf += self._u32.pack(value & 0xFFFFFFFF)

    def u64(self, value: int) -> None:
        self.buf += self._u64.pack(value & 0xFFFFFFFFFFFFFFFF)

    def uint(self, size: int, value: int) -> None:
        if size == 1:
            self.u8(value)
        elif size == 2:
            self.u16(value)
        elif size == 4:
            self.u32(value)
        else:
            self.u64(value)

    def uleb(self, value: int) -> None:
        if 0 <= value < 0x80:  # one byte: most values a GSYM writes
            self.buf.append(value)
        else:
            self.buf += uleb_bytes(value)

    def sleb(self, value: int) -> None:
        if -0x40 <= value < 0x40:
            self.buf.append(value & 0x7F)
        else:
            self.buf += sleb_bytes(value)

    def raw(self, data: Buffer) -> None:
        self.buf += data

    def align(self, alignment: int) -> None:
        """Zero padding up to a multiple of `alignment`."""
        rem = len(self.buf) % alignment
        if rem:
            self.buf += bytes(alignment - rem)

    def fixup32(self, value: int, offset: int) -> None:
        self._u32.pack_into(self.buf, offset, value & 0xFFFFFFFF)
