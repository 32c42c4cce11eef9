"""Compact Backtrace Format (CBF): Swift's byte encoding of a backtrace.

Read this beside swift/docs/CompactBacktraceFormat.md and the Swift runtime's
encoder and decoder (CompactBacktrace.swift), which differ from that document
in places (docs/sframe-cbf-unwind.md lists them). We follow the
code, so that our bytes are the bytes Swift writes and we read what Swift
reads:

    info byte        0000 00ss        ss = 00 16-bit, 01 32-bit, 10 64-bit words
    then instructions, multi-byte fields big-endian:
    0000 0000        end
    0000 0001        trunc (end; the backtrace was truncated)
    0001 accc        pc     ccc+1 address bytes; a = absolute, else relative
    0010 accc        ra       to the previous address (which starts at 0);
    0011 accc        async    the bytes are a signed (sign-extended) value
    010c cccc        omit   ccccc+1 frames omitted
    011c cccc        omit   count in the next ccccc+1 bytes
    1000 0ccc        rep    the previous frame ccc+1 more times
    1000 1ccc        rep    count of further copies in the next ccc+1 bytes

Encoder choices that Swift makes and the document does not say (notes 4):
the first address is written relative to 0; absolute only when strictly
shorter than the delta; inline omit only for 1..31; inline rep for 1..8;
external counts in the fewest bytes that hold them. `absolute_first=True`
writes the document's form instead (first address absolute).

Decoder (notes 5): malformed input never raises. Decoding stops and the
backtrace is marked truncated, as Swift does; we also say why and where
(`error`, `error_offset`). A bad info byte yields no frames at all. Data
that ends without `end` counts as truncated. A `rep` whose count minus one
exceeds 1 << 20 is rejected, as Swift's decoder does since PR #90842, and
(ours) one that would make the backtrace longer than `MAX_DECODED_FRAMES`.

The decoder fills two parallel lists (kinds and values) instead of building
a `BacktraceFrame` per frame: that keeps it above a million frames per
second; `DecodedBacktrace.frames` builds the objects when asked. For the same
reason its instruction loop indexes the bytes itself, checking each
instruction's length once, rather than reading through `binary.Cursor`: a
`Cursor` subclass whose `overrun` became the error value gave the same
results on every truncation and on 3,000 damaged blobs, but executed 1.9
times the instructions (930 million against 488 million per decode of a
100,000-frame backtrace, cachegrind).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stackmark.errors import StackmarkError
from stackmark.model import BacktraceFrame, FrameKind

# --- info byte ---------------------------------------------------------------

WORD_BITS: tuple[int, ...] = (16, 32, 64)
"""Word sizes CBF can describe, indexed by the info byte's size field."""

_SIZE_FIELD = {16: 0, 32: 1, 64: 2}
_VERSION_SHIFT = 2

# --- opcodes -------------------------------------------------------------------

OP_END = 0x00
OP_TRUNC = 0x01
OP_PC = 0x10
OP_RA = 0x20
OP_ASYNC = 0x30
ADDRESS_ABSOLUTE = 0x08  # the `a` bit of pc / ra / async
OP_OMIT = 0x40
OMIT_EXTERNAL = 0x20  # the `x` bit of omit
OP_REP = 0x80
REP_EXTERNAL = 0x08  # the `x` bit of rep

OMIT_INLINE_MAX = 31
"""Swift writes omit counts above this externally (the inline field could hold 32)."""
REP_INLINE_MAX = 8
MAX_REPEAT = 1 << 20
"""A rep whose copy count minus one exceeds this is rejected (Swift PR #90842)."""
MAX_COUNT = (1 << 63) - 1
"""Counts are signed 64-bit values in Swift."""
MAX_DECODED_FRAMES = 1 << 22
"""Ours: a `rep` that would take the backtrace past this many frames is an
error. Swift decodes lazily; we build lists, and each 4-byte rep adds a
million frames, so a short hostile blob could otherwise ask for gigabytes."""

_ADDRESS_BASE = {FrameKind.PC: OP_PC, FrameKind.RA: OP_RA, FrameKind.ASYNC: OP_ASYNC}
_ADDRESS_KIND_BY_OPCODE: tuple[FrameKind | None, ...] = tuple(
    (FrameKind.PC, FrameKind.RA, FrameKind.ASYNC)[(op >> 4) - 1] if 0x10 <= op < 0x40 else None
    for op in range(256)
)
"""The frame kind of each address opcode; None for every other byte (decoder dispatch)."""


class CbfError(StackmarkError):
    """Frames that CBF cannot encode (an address wider than the word, a bad count)."""


# --- encoder -------------------------------------------------------------------


def _signed_length(value: int, word_bits: int) -> int:
    """Fewest bytes holding `value` (a word) as a sign-extended big-endian field."""
    if value >> (word_bits - 1):
        value -= 1 << word_bits
    return ((value if value >= 0 else ~value).bit_length() >> 3) + 1


def _unsigned_length(count: int) -> int:
    """Fewest bytes holding a positive count (Swift sizes it as a 64-bit value)."""
    return (count.bit_length() + 7) >> 3


def _frame_key(frame: BacktraceFrame) -> tuple[FrameKind, int]:
    """What makes two frames "the same" for `rep` (the note does not count)."""
    return (frame.kind, frame.count if frame.kind is FrameKind.OMITTED else frame.address)


def encode(
    frames: Iterable[BacktraceFrame], word_bits: int = 64, *, absolute_first: bool = False
) -> bytes:
    """The CBF bytes for `frames`, as Swift's encoder writes them.

    A TRUNCATED frame writes `trunc` and ends the backtrace (later frames are
    dropped, as in Swift). Runs of equal frames become `rep`; runs longer than
    a decoder accepts (1 + 1<<20 copies) are split over several `rep`s.
    Raises `CbfError` for an unsupported word size, an address that does not
    fit in it, or an omitted-frame count outside 1..2**63-1.
    """
    if word_bits not in _SIZE_FIELD:
        raise CbfError(f"unsupported word size {word_bits} (use 16, 32 or 64)")
    mask = (1 << word_bits) - 1
    out = bytearray((_SIZE_FIELD[word_bits],))
    items = frames if isinstance(frames, Sequence) else list(frames)
    count = len(items)
    previous_address = 0
    wrote_address = False
    last_key: tuple[FrameKind, int] | None = None
    i = 0
    while i < count:
        frame = items[i]
        key = _frame_key(frame)
        if key == last_key:
            run_end = i + 1
            while run_end < count and _frame_key(items[run_end]) == last_key:
                run_end += 1
            _write_repeats(out, run_end - i)
            i = run_end
            continue
        kind = frame.kind
        if kind is FrameKind.TRUNCATED:
            out.append(OP_TRUNC)
            return bytes(out)
        if kind is FrameKind.OMITTED:
            _write_omit(out, frame.count, i)
        else:
            address = frame.address
            if not 0 <= address <= mask:
                raise CbfError(f"frame {i}: address 0x{address:x} does not fit in {word_bits} bits")
            delta = (address - previous_address) & mask
            absolute_length = _signed_length(address, word_bits)
            delta_length = _signed_length(delta, word_bits)
            base = _ADDRESS_BASE[kind]
            if absolute_length < delta_length or (absolute_first and not wrote_address):
                out.append(base | ADDRESS_ABSOLUTE | (absolute_length - 1))
                out += (address & ((1 << (8 * absolute_length)) - 1)).to_bytes(
                    absolute_length, "big"
                )
            else:
                out.append(base | (delta_length - 1))
                out += (delta & ((1 << (8 * delta_length)) - 1)).to_bytes(delta_length, "big")
            previous_address = address
            wrote_address = True
        last_key = key
        i += 1
    out.append(OP_END)
    return bytes(out)


def _write_omit(out: bytearray, omitted: int, index: int) -> None:
    if not 1 <= omitted <= MAX_COUNT:
        raise CbfError(f"frame {index}: omitted-frame count {omitted} is outside 1..2**63-1")
    if omitted <= OMIT_INLINE_MAX:
        out.append(OP_OMIT | (omitted - 1))
    else:
        length = _unsigned_length(omitted)
        out.append(OP_OMIT | OMIT_EXTERNAL | (length - 1))
        out += omitted.to_bytes(length, "big")


def _write_repeats(out: bytearray, copies: int) -> None:
    """`rep` instructions for `copies` further copies of the previous frame."""
    while copies:
        chunk = min(copies, MAX_REPEAT + 1)
        if chunk <= REP_INLINE_MAX:
            out.append(OP_REP | (chunk - 1))
        else:
            length = _unsigned_length(chunk)
            out.append(OP_REP | REP_EXTERNAL | (length - 1))
            out += chunk.to_bytes(length, "big")
        copies -= chunk


# --- decoder -------------------------------------------------------------------


class Ending(enum.Enum):
    """How a decoded backtrace ended."""

    END = "end"  # an `end` instruction: complete
    TRUNC = "trunc"  # a `trunc` instruction: the writer truncated it
    NO_END = "no end"  # the data stopped at an instruction boundary, no end marker
    ERROR = "error"  # malformed: see `DecodedBacktrace.error`


@dataclass(slots=True)
class DecodedBacktrace:
    """The result of `decode`: frames as two parallel lists, and how it ended.

    `kinds[i]` is PC, RA, ASYNC or OMITTED; `values[i]` the address, or the
    omitted-frame count. `word_bits` is None when the info byte was invalid
    (then there are no frames). `size` is the number of bytes read, so a CBF
    blob can be found inside a longer stream.
    """

    word_bits: int | None
    kinds: list[FrameKind]
    values: list[int]
    ending: Ending
    size: int
    error: str | None = None
    error_offset: int | None = None

    @property
    def truncated(self) -> bool:
        """True where Swift's decoder would end with a `.truncated` frame."""
        return self.word_bits is not None and self.ending is not Ending.END

    def __len__(self) -> int:
        return len(self.kinds)

    @property
    def frames(self) -> list[BacktraceFrame]:
        """The frames as `BacktraceFrame`s, plus a final TRUNCATED one when truncated."""
        omitted = FrameKind.OMITTED
        result = [
            BacktraceFrame(kind, count=value) if kind is omitted else BacktraceFrame(kind, value)
            for kind, value in zip(self.kinds, self.values, strict=True)
        ]
        if self.truncated:
            result.append(BacktraceFrame(FrameKind.TRUNCATED))
        return result


def decode(data: bytes | bytearray | memoryview) -> DecodedBacktrace:
    """Decode CBF bytes; never raises on malformed input (see the module docstring)."""
    data = bytes(data)
    if not data:
        return DecodedBacktrace(None, [], [], Ending.ERROR, 0, "empty input", 0)
    info = data[0]
    size_field = info & 3
    if info >> _VERSION_SHIFT or size_field == 3:
        reason = (
            f"unsupported version {info >> _VERSION_SHIFT}"
            if info >> _VERSION_SHIFT
            else "invalid word size field 3"
        )
        return DecodedBacktrace(
            None, [], [], Ending.ERROR, 0, f"info byte 0x{info:02x}: {reason}", 0
        )
    word_bits = WORD_BITS[size_field]
    kinds: list[FrameKind] = []
    values: list[int] = []
    ending, pos, error = _decode_instructions(data, (1 << word_bits) - 1, kinds, values)
    if error is None:
        return DecodedBacktrace(word_bits, kinds, values, ending, pos)
    return DecodedBacktrace(word_bits, kinds, values, Ending.ERROR, pos, error, pos)


def _decode_instructions(
    data: bytes, mask: int, kinds: list[FrameKind], values: list[int]
) -> tuple[Ending, int, str | None]:
    """The hot loop. Returns (ending, offset reached, error); on an error the
    offset is that of the instruction at fault and the frames before it stay."""
    add_kind = kinds.append
    add_value = values.append
    from_bytes = int.from_bytes
    address_kind = _ADDRESS_KIND_BY_OPCODE
    length = len(data)
    previous = 0
    pos = 1
    while pos < length:
        op = data[pos]
        kind = address_kind[op]
        if kind is not None:  # pc / ra / async: the common case, kept short
            end = pos + 2 + (op & 7)
            if end > length:
                return Ending.ERROR, pos, _short(op, end - pos - 1, length - pos - 1)
            if op & ADDRESS_ABSOLUTE:
                previous = from_bytes(data[pos + 1 : end], "big", signed=True) & mask
            else:
                previous = (previous + from_bytes(data[pos + 1 : end], "big", signed=True)) & mask
            add_kind(kind)
            add_value(previous)
            pos = end
        elif op <= OP_TRUNC:
            return (Ending.END if op == OP_END else Ending.TRUNC), pos + 1, None
        elif op < 0x10 or op >= 0x90:
            return Ending.ERROR, pos, f"reserved opcode 0x{op:02x}"
        elif op < OP_REP:  # omit
            if op & OMIT_EXTERNAL:
                end = pos + 2 + (op & 0x1F)
                if end > length:
                    return Ending.ERROR, pos, _short(op, end - pos - 1, length - pos - 1)
                # Swift keeps the low 64 bits as a signed count.
                omitted = from_bytes(data[pos + 1 : end], "big") & 0xFFFF_FFFF_FFFF_FFFF
                if not 1 <= omitted <= MAX_COUNT:
                    shown = omitted - (1 << 64) if omitted > MAX_COUNT else omitted
                    return Ending.ERROR, pos, f"omitted-frame count {shown} is not positive"
            else:
                end = pos + 1
                omitted = (op & 0x1F) + 1
            add_kind(FrameKind.OMITTED)
            add_value(omitted)
            pos = end
        else:  # rep
            if not kinds:
                return Ending.ERROR, pos, "rep before any frame"
            if op & REP_EXTERNAL:
                end = pos + 2 + (op & 7)
                if end > length:
                    return Ending.ERROR, pos, _short(op, end - pos - 1, length - pos - 1)
                copies = from_bytes(data[pos + 1 : end], "big")
                if copies < 1:
                    return Ending.ERROR, pos, "rep count 0"
                if copies - 1 > MAX_REPEAT:
                    return Ending.ERROR, pos, f"rep count {copies} exceeds {MAX_REPEAT + 1}"
            else:
                end = pos + 1
                copies = (op & 7) + 1
            if len(kinds) + copies > MAX_DECODED_FRAMES:
                return Ending.ERROR, pos, f"more than {MAX_DECODED_FRAMES} frames"
            kinds += [kinds[-1]] * copies
            values += [values[-1]] * copies
            pos = end
    return Ending.NO_END, pos, None


def _short(op: int, needed: int, available: int) -> str:
    return f"opcode 0x{op:02x} needs {needed} argument bytes, only {available} left"


# --- conveniences -------------------------------------------------------------


def word_bits_of(data: bytes) -> int | None:
    """The word size a CBF blob declares, or None when its info byte is invalid."""
    if not data or data[0] >> _VERSION_SHIFT or data[0] & 3 == 3:
        return None
    return WORD_BITS[data[0] & 3]
