"""GSYM's reads and writes: the shared cursor with LLVM's texts, and a writer.

GSYM stores fixed-width integers (u8/u16/u32/u64) in the file's byte order
and ULEB128/SLEB128 values, which have none. `RecordCursor` is the cursor
of `stackmark.binary` reading them as llvm-gsymutil does: it raises
`RecordError` (a `FormatError`) naming the absolute offset, and the text
llvm-gsymutil prints, when a value runs past the end. `Writer` appends them
to a growing buffer (LEB128 through `stackmark.binary`'s encoders) and can
patch a u32 afterwards (lengths and offsets that are only known later).
"""

from __future__ import annotations

from stackmark.binary import U16, U32, U64, Buffer, Cursor, sleb_bytes, uleb_bytes
from stackmark.errors import FormatError


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


class RecordCursor(Cursor):
    """The shared `Cursor`, reading as llvm-gsymutil does.

    LEB128 values keep their low 64 bits (LLVM's DataExtractor), and a read
    past the end raises `RecordError` with llvm-gsymutil's text, whose
    offset counts from `base`: LLVM reports offsets relative to the start of
    the record it is decoding (a FunctionInfo, or one InfoType payload).
    """

    __slots__ = ()

    WRAP_LEB_TO_64_BITS = True

    def fail(self, what: str, at: int | None = None) -> RecordError:
        """A `RecordError` saying `what` is missing at `at` (default: here)."""
        where = self.pos if at is None else at
        return RecordError(
            f"{what}: data ends at offset 0x{self.end:x}",
            offset=where,
            source=self.source,
            llvm_reason=f"0x{where - self.base:08x}: {what}",
        )

    def overrun(self, what: str, at: int, size: int | None) -> RecordError:
        return self.fail(what, at)


class Writer:
    """Appends GSYM values in one byte order; `fixup32` patches a u32 later."""

    __slots__ = ("_u16", "_u32", "_u64", "buf", "little")

    def __init__(self, little: bool):
        self.buf = bytearray()
        self.little = little
        self._u16 = U16[little]
        self._u32 = U32[little]
        self._u64 = U64[little]

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
