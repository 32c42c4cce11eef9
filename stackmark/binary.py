"""Bounds-checked reads, record layouts and LEB128, written once for every binary format.

The readers of GSYM and its extras, DWARF's headers, CFI (one walk for
its rows and the FDE ranges the debuggers ask for) and DWP index, ELF and its relocations,
Mach-O and the Compact Image Map read through this module, so that a value
running past the end of its data is found in one way and reported as a
`FormatError` naming the source and the offset, never an IndexError or a
struct.error. Fixed-size records (ELF's, Mach-O's load commands, GSYM's
and the extras' headers, SFrame's header and FDEs, the DWP index header)
are declared as `RecordLayout`s. This module imports nothing of stackmark but
`errors`.

    RecordLayout        a fixed-size record declared once, beside its spec, as
                        (spec field name, struct code) pairs: size, offsets
                        and structs compiled on first use, for the reader,
                        the writer and the test that pins the size.
    Cursor              sequential reads of data[pos:end]: u8/u16/u32/u64,
                        uint, sint, uleb/sleb, bytes, unpack, record, sub.
                        A format keeps its own error texts by overriding
                        `overrun` (GSYM's `RecordCursor`, DWARF's
                        `SectionCursor`, CFI's `CfiCursor`, the DWP
                        index's, the image map's).
    unpack_at           one struct layout at an offset, checked against an end
                        (headers and table entries read at random).
    U16, U32, U64       the fixed-width layouts by byte order, shared with writers.

    LEB128 (DWARF 5 section 7.6; LLVM's llvm/Support/LEB128.h):
    read_uleb           (value, next position) at buf[pos], unchecked: the
    read_sleb           DWARF hot loops call them millions of times and catch
    skip_leb            IndexError once around a whole record instead.
    read_sleb_lenient   a SLEB128 that may be cut short (DWARF expressions).
    uleb_rest           finish a LEB128 from an iterator whose first byte was
    sleb_rest           already taken (GSYM's fast lookup walks), 64 bits.
    uleb_bytes          encoders; `uleb_bytes(value, width)` pads to a fixed
    sleb_bytes          width, as an assembler leaves room for a relocation.

Readers that check a whole region once and then read inside it keep that
shape, for speed; each module says why: DWARF's DIE and line-program loops
(`dwarf/sections.py`: `Section.check` on section-relative offsets, and
`guarded` around the unchecked LEB128 loops, on the measured first-answer
path; DWARF's headers read through `Section.cursor`), SFrame's FDE and FRE
sub-sections (`formats/sframe/reader.py`: a `Cursor` there cost 13% more
instructions per parse) and CBF's instruction loop, which returns errors as
values (`formats/cbf.py`: 1.9 times the instructions through a `Cursor`).

The compiled kernels in `stackmark._native` decode LEB128 in C; their
differential tests (tests/unit/test_native*.py) keep them equal to these.
tests/unit/test_leb128_written_once.py fails on a LEB128 decoder or encoder
anywhere else in the package.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable, Iterator, Mapping
from operator import itemgetter
from typing import Any, ClassVar, Self, TypeAlias

from stackmark.errors import FormatError

Buffer: TypeAlias = bytes | bytearray | mmap.mmap

_U64_MASK = 0xFFFFFFFFFFFFFFFF

# The fixed-width layouts by byte order (True: little-endian), for readers and writers.
U16 = {True: struct.Struct("<H"), False: struct.Struct(">H")}
U32 = {True: struct.Struct("<I"), False: struct.Struct(">I")}
U64 = {True: struct.Struct("<Q"), False: struct.Struct(">Q")}


# --- the sequential cursor ------------------------------------------------------------


class Cursor:
    """Reads values from `data[pos:end]` in one byte order, checking every read.

    Each read names `what` it reads; a read that would pass `end` raises the
    `FormatError` that `overrun` builds, with the position in `data` where the
    value starts. `base` is the offset a
    format counts from when it reports relative offsets (GSYM does, for
    llvm-gsymutil's texts); `source` names the input.

    LEB128 values are exact (DWARF allows any width). A subclass that reads
    as LLVM's DataExtractor does sets `WRAP_LEB_TO_64_BITS` and gets the low
    64 bits (SLEB128: as a signed value).
    """

    __slots__ = ("_u16", "_u32", "_u64", "base", "data", "end", "little", "pos", "source")

    WRAP_LEB_TO_64_BITS: ClassVar[bool] = False

    def __init__(
        self,
        data: Buffer,
        pos: int = 0,
        end: int | None = None,
        *,
        little: bool = True,
        source: str | None = None,
        base: int | None = None,
    ):
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else min(end, len(data))
        self.little = little
        self.source = source
        self.base = pos if base is None else base
        self._u16 = U16[little]
        self._u32 = U32[little]
        self._u64 = U64[little]

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        """The error for `what`, `size` bytes at `at` (None: a LEB128 starting
        at `at` that `end` cuts), not all before `end`. Formats override it to
        keep their own texts."""
        needed = "its last byte" if size is None else f"{size} bytes"
        return FormatError(
            f"{what} at 0x{at:x} needs {needed}, past the end of the data at 0x{self.end:x}",
            offset=at,
            source=self.source,
        )

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def u8(self, what: str) -> int:
        pos = self.pos
        if pos >= self.end:
            raise self.overrun(what, pos, 1)
        self.pos = pos + 1
        return self.data[pos]

    def u16(self, what: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.overrun(what, pos, 2)
        self.pos = pos + 2
        value: int = self._u16.unpack_from(self.data, pos)[0]
        return value

    def u32(self, what: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self.overrun(what, pos, 4)
        self.pos = pos + 4
        value: int = self._u32.unpack_from(self.data, pos)[0]
        return value

    def u64(self, what: str) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            raise self.overrun(what, pos, 8)
        self.pos = pos + 8
        value: int = self._u64.unpack_from(self.data, pos)[0]
        return value

    def uint(self, size: int, what: str) -> int:
        """An unsigned integer of `size` bytes (1, 2, 4 and 8 by struct; others too)."""
        if size == 1:
            return self.u8(what)
        if size == 2:
            return self.u16(what)
        if size == 4:
            return self.u32(what)
        if size == 8:
            return self.u64(what)
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise self.overrun(what, pos, size)
        self.pos = pos + size
        return int.from_bytes(self.data[pos : pos + size], "little" if self.little else "big")

    def sint(self, size: int, what: str) -> int:
        """A two's complement integer of `size` bytes."""
        value = self.uint(size, what)
        return value - (1 << (8 * size)) if value >> (8 * size - 1) else value

    def uleb(self, what: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                raise self.overrun(what, self.pos, None)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        self.pos = pos
        return result & _U64_MASK if self.WRAP_LEB_TO_64_BITS else result

    def sleb(self, what: str) -> int:
        data, pos, end = self.data, self.pos, self.end
        result = shift = 0
        while True:
            if pos >= end:
                raise self.overrun(what, self.pos, None)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        self.pos = pos
        if byte & 0x40:
            result -= 1 << shift
        if self.WRAP_LEB_TO_64_BITS:
            result &= _U64_MASK
            return result - (1 << 64) if result >> 63 else result
        return result

    def unpack(self, layout: struct.Struct, what: str) -> tuple[Any, ...]:
        """The values of `layout` (a record, or a run of equal values) read here."""
        pos = self.pos
        if pos + layout.size > self.end:
            raise self.overrun(what, pos, layout.size)
        self.pos = pos + layout.size
        return layout.unpack_from(self.data, pos)

    def record(self, layout: RecordLayout, what: str) -> dict[str, Any]:
        """The fields of `layout`, by their spec names, read here in the cursor's byte order."""
        values = self.unpack(layout.compiled("<" if self.little else ">"), what)
        return dict(zip(layout.names, values, strict=True))

    def rest(self) -> bytes:
        """The bytes from here to the end (the cursor stays)."""
        return bytes(self.data[self.pos : self.end])

    def bytes(self, size: int, what: str) -> bytes:
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise self.overrun(what, pos, size)
        self.pos = pos + size
        return bytes(self.data[pos : pos + size])

    def sub(self, size: int, what: str) -> Self:
        """A cursor of the same kind over the next `size` bytes (a record of
        its own, whose relative offsets count from its start); skip them here.
        A subclass whose constructor takes other arguments overrides it."""
        pos = self.pos
        if pos + size > self.end:
            raise self.overrun(what, pos, size)
        self.pos = pos + size
        return type(self)(self.data, pos, pos + size, little=self.little, source=self.source)


# --- fixed-size records -----------------------------------------------------------------


class RecordLayout:
    """A fixed-size record of a spec: (spec field name, struct code) pairs in
    file order, packed (no padding but what a field declares), in either byte
    order. Every format declares its fixed-size records this way: SFrame's
    (`formats/sframe/spec.py`), ELF's (`elf.py`), Mach-O's (`macho.py`), GSYM's
    header and its extras' (`formats/gsym/header.py`, `extras.py`) and the DWP
    index header (`dwarf/dwp.py`); `Cursor.record` reads one by its field names.

    A field whose code ends in "x" is padding the spec leaves implicit (C's
    alignment): it has a size and an offset, no value, and is not in `names`.
    Its structs are compiled on first use (a program reading ELF needs one
    class and one byte order of each record; compiling them all at import
    would cost every start-up)."""

    __slots__ = ("_structs", "c_name", "fields", "format", "names", "offsets", "size", "sizes")

    def __init__(self, c_name: str, *fields: tuple[str, str]) -> None:
        self.c_name = c_name  # the struct's name in the spec (include/sframe.h, elf.h...)
        self.fields = fields
        self.names = tuple(name for name, code in fields if not code.endswith("x"))
        self.format = "".join(code for _, code in fields)
        self.sizes = {name: _code_size(code) for name, code in fields}
        offsets: dict[str, int] = {}
        at = 0  # packed ("<" and ">" align nothing): each field starts where the last ends
        for name, size in self.sizes.items():
            offsets[name] = at
            at += size
        self.offsets = offsets
        self.size = at
        self._structs: dict[str, struct.Struct] = {}

    def compiled(self, endian: str) -> struct.Struct:
        """The compiled struct for byte order `endian` ("<" or ">")."""
        compiled = self._structs.get(endian)
        if compiled is None:
            compiled = self._structs[endian] = struct.Struct(endian + self.format)
        return compiled

    def picker(self, *names: str) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
        """A function taking the named fields, in the order asked, from a tuple
        this layout's struct unpacked (a C-level `itemgetter`: no per-record cost)."""
        indexes = [self.names.index(name) for name in names]
        if len(indexes) == 1:
            (index,) = indexes
            return lambda values: (values[index],)
        return itemgetter(*indexes)

    def pack(self, endian: str, values: Mapping[str, int | bytes]) -> bytes:
        """The record's bytes; `values` gives each field by name (extra names are
        ignored, so one mapping can serve the layouts of several versions)."""
        return self.compiled(endian).pack(*(values[name] for name in self.names))


_CODE_SIZES: dict[str, int] = {}


def _code_size(code: str) -> int:
    """The size of one field's struct code, packed (remembered: records share codes)."""
    size = _CODE_SIZES.get(code)
    if size is None:
        size = _CODE_SIZES[code] = struct.calcsize("<" + code)
    return size


# --- random access --------------------------------------------------------------------


def unpack_at(
    layout: struct.Struct,
    data: Buffer,
    at: int,
    end: int,
    what: str,
    overrun: Callable[[str, int, int], FormatError],
) -> tuple[Any, ...]:
    """`layout` unpacked at `data[at]`, or the error `overrun(what, at,
    layout.size)` builds when it does not lie within [0, end) (the reader's
    own text: a file, a Mach-O image...), as `Cursor.overrun` does."""
    if at < 0 or at + layout.size > end:
        raise overrun(what, at, layout.size)
    return layout.unpack_from(data, at)


# --- LEB128 at (buf, pos), unchecked --------------------------------------------------
#
# These index the buffer without checking the end, so a value cut by the end of
# the buffer raises IndexError: the callers catch it once around a whole record
# (dwarf/sections.py `guarded`) and report a FormatError there. The values are
# exact, as DWARF allows.


def read_uleb(buf: Buffer, pos: int) -> tuple[int, int]:
    """(value, next position) of the unsigned LEB128 at `pos`."""
    byte = buf[pos]
    pos += 1
    if byte < 0x80:  # one byte: most values in DWARF
        return byte, pos
    result = byte & 0x7F
    shift = 7
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def read_sleb(buf: Buffer, pos: int) -> tuple[int, int]:
    """(value, next position) of the signed LEB128 at `pos`."""
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            if byte & 0x40:
                result -= 1 << shift
            return result, pos


def skip_leb(buf: Buffer, pos: int) -> int:
    """The position after the LEB128 (signed or not) at `pos`."""
    while buf[pos] >= 0x80:
        pos += 1
    return pos + 1


def read_sleb_lenient(data: Buffer, pos: int, end: int) -> tuple[int, int]:
    """(value, next position) of a SLEB128 in `data[pos:end]` that may be cut
    short: the value its bytes make so far, in 64 bits (sign-extended only
    below 64 bits, as LLVM's decodeSLEB128 does). For operands of a DWARF
    expression, where a damaged one is not worth failing a whole answer."""
    result = shift = 0
    byte = 0x80
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if byte & 0x40 and shift < 64:
        result -= 1 << shift
    if result >= 1 << 63:
        result -= 1 << 64
    return result, pos


# --- LEB128 from an iterator ----------------------------------------------------------
#
# The fast GSYM lookup walks (formats/gsym/line_table.py, inline_info.py) read a
# record through an iterator and take a one-byte value inline; these finish a
# value whose first byte has the continuation bit set. Past the end of the
# bytes `next` raises StopIteration, which sends those walks to their checked
# versions. Values keep their low 64 bits, as `RecordCursor` reads them.


def uleb_rest(it: Iterator[int], byte: int) -> int:
    """A ULEB128 that starts with `byte`, in 64 bits."""
    value, shift = byte & 0x7F, 7
    while byte >= 0x80:
        byte = next(it)
        value |= (byte & 0x7F) << shift
        shift += 7
    return value & _U64_MASK


def sleb_rest(it: Iterator[int], byte: int) -> int:
    """An SLEB128 that starts with `byte`, in 64 bits (its own loop, like
    `uleb_rest`'s: the sign needs the last byte and the width, and a shared
    helper returning them cost these walks 4% more instructions)."""
    value, shift = byte & 0x7F, 7
    while byte >= 0x80:
        byte = next(it)
        value |= (byte & 0x7F) << shift
        shift += 7
    if byte & 0x40:
        value -= 1 << shift
    value &= _U64_MASK
    return value - (1 << 64) if value >> 63 else value


# --- encoders -------------------------------------------------------------------------


def uleb_bytes(value: int, width: int = 0) -> bytes:
    """ULEB128 encoding of a non-negative integer; with `width`, exactly that
    many bytes (the value cut to 7*width bits, continuation bits on all but
    the last), the form an assembler leaves for a ULEB128 relocation."""
    if width:
        value &= (1 << (7 * width)) - 1
        return bytes(
            ((value >> (7 * i)) & 0x7F) | (0x80 if i < width - 1 else 0) for i in range(width)
        )
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
