"""CBF vectors worked out by hand from the rules (swift/docs/CompactBacktraceFormat.md and
CompactBacktrace.swift),
for every opcode and word size, in both directions, and malformed input.

Each vector's bytes were derived on paper from the rule it is named after,
not produced by our encoder: e.g. `ra 0x100003f2c` first -> relative to 0
(absolute is not strictly shorter) -> 5 bytes -> opcode 0x20 | (5-1) = 0x24.
"""

from __future__ import annotations

import pytest

from stackmark.formats import cbf
from stackmark.formats.cbf import Ending
from stackmark.formats.swift_backtrace import decode_base64, encode_base64
from stackmark.model import BacktraceFrame, FrameKind

PC, RA, ASYNC = FrameKind.PC, FrameKind.RA, FrameKind.ASYNC


def pc(a: int) -> BacktraceFrame:
    return BacktraceFrame(PC, a)


def ra(a: int) -> BacktraceFrame:
    return BacktraceFrame(RA, a)


def async_(a: int) -> BacktraceFrame:
    return BacktraceFrame(ASYNC, a)


def omit(n: int) -> BacktraceFrame:
    return BacktraceFrame(FrameKind.OMITTED, count=n)


TRUNC = BacktraceFrame(FrameKind.TRUNCATED)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


V23 = "02 11 10 00 20 10 21 ff 00 35 7f ff 00 00 10 f0 44 61 03 e8 29 20 20 80 11 10 10 88 09 01"

# (name, word bits, frames, bytes): encode(frames) == bytes and decode(bytes) == frames.
BOTH_WAYS = [
    ("empty", 64, [], "02 00"),
    ("first frame relative to zero (v01)", 64, [ra(0x100003F2C)], "02 24 01 00 00 3f 2c 00"),
    ("pc, one byte", 64, [pc(0x10)], "02 10 10 00"),
    ("async, six bytes", 64, [async_(0x7FFF00002000)], "02 35 7f ff 00 00 20 00 00"),
    ("negative one-byte delta", 64, [ra(0x1000), ra(0xFF0)], "02 21 10 00 20 f0 00"),
    (
        "absolute when strictly shorter",
        64,
        [ra(0x7FFF00002000), ra(0x10)],
        "02 25 7f ff 00 00 20 00 28 10 00",
    ),
    ("tie goes to relative", 64, [ra(0x1000), pc(0x2000)], "02 21 10 00 11 10 00 00"),
    ("eight-byte address", 64, [ra(0x8000000000000000)], "02 27 80 00 00 00 00 00 00 00 00"),
    ("top-bit-set address is one byte", 64, [pc(0xFFFFFFFFFFFFFFFF)], "02 10 ff 00"),
    ("omit 1, inline", 64, [omit(1)], "02 40 00"),
    ("omit 31, last inline", 64, [omit(31)], "02 5e 00"),
    ("omit 32, external (v17)", 64, [omit(32)], "02 60 20 00"),
    ("omit 256, two count bytes", 64, [omit(256)], "02 61 01 00 00"),
    ("omit max", 64, [omit(2**63 - 1)], "02 67 7f ff ff ff ff ff ff ff 00"),
    ("omit keeps the previous address", 64, [ra(0x1000), omit(2), ra(0x1010)],
     "02 21 10 00 41 20 10 00"),
    ("rep 1 further copy", 64, [ra(0x20)] * 2, "02 20 20 80 00"),
    ("rep 8, last inline", 64, [ra(0x20)] * 9, "02 20 20 87 00"),
    ("rep 9, external", 64, [ra(0x20)] * 10, "02 20 20 88 09 00"),
    ("rep 257, two count bytes", 64, [ra(0x20)] * 258, "02 20 20 89 01 01 00"),
    ("rep of an omit (v22)", 64, [omit(3), omit(3)], "02 42 80 00"),
    ("same address, other kind: no rep", 64, [ra(0x20), pc(0x20)], "02 20 20 10 00 00"),
    ("trunc ends without end", 64, [pc(1), TRUNC], "02 10 01 01"),
    ("trunc alone", 64, [TRUNC], "02 01"),
    (
        "upstream test vector v23",
        64,
        [pc(0x1000), ra(0x1010), ra(0xF10), async_(0x7FFF00002000), omit(5), omit(1000),
         ra(0x2020), ra(0x2020), *[pc(0x3030)] * 10, TRUNC],
        V23,
    ),
    ("32-bit all-ones is one byte", 32, [ra(0xFFFFFFFF)], "01 20 ff 00"),
    ("32-bit 0xfffffff0 (v08)", 32, [ra(0xFFFFFFF0)], "01 20 f0 00"),
    ("32-bit delta wraps", 32, [ra(0xFFFFFFF0), ra(0x10)], "01 20 f0 20 20 00"),
    ("32-bit four bytes", 32, [pc(0x12345678)], "01 13 12 34 56 78 00"),
    ("16-bit delta wraps (v11)", 16, [pc(0xFFF0), pc(0x10)], "00 10 f0 10 20 00"),
    ("16-bit 0x8000 needs two bytes", 16, [ra(0x8000)], "00 21 80 00 00"),
    ("16-bit count wider than the word (v37)", 16, [omit(70000)], "00 62 01 11 70 00"),
    ("16-bit async", 16, [async_(0x7F)], "00 30 7f 00"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("bits", "frames", "data"), [v[1:] for v in BOTH_WAYS], ids=[v[0] for v in BOTH_WAYS]
)
def test_encode_matches_vector(bits: int, frames: list[BacktraceFrame], data: str) -> None:
    assert cbf.encode(frames, bits).hex(" ") == h(data).hex(" ")


@pytest.mark.parametrize(
    ("bits", "frames", "data"), [v[1:] for v in BOTH_WAYS], ids=[v[0] for v in BOTH_WAYS]
)
def test_decode_matches_vector(bits: int, frames: list[BacktraceFrame], data: str) -> None:
    decoded = cbf.decode(h(data))
    assert decoded.word_bits == bits
    assert decoded.error is None
    assert decoded.frames == frames
    assert decoded.size == len(h(data))
    assert decoded.ending is (Ending.TRUNC if frames and frames[-1] == TRUNC else Ending.END)


# The document's form: the first address absolute.
ABSOLUTE_FIRST = [
    ([ra(0x100003F2C)], 64, "02 2c 01 00 00 3f 2c 00"),  # v02
    ([omit(2), pc(0x1000), ra(0x1010)], 64, "02 41 19 10 00 20 10 00"),
    ([pc(0xFFFFFFF0), pc(0x10)], 32, "01 18 f0 10 20 00"),
]


@pytest.mark.parametrize(("frames", "bits", "data"), ABSOLUTE_FIRST)
def test_absolute_first_option(frames: list[BacktraceFrame], bits: int, data: str) -> None:
    assert cbf.encode(frames, bits, absolute_first=True) == h(data)
    assert cbf.decode(h(data)).frames == frames


def test_frames_after_trunc_are_dropped() -> None:
    assert cbf.encode([pc(1), TRUNC, pc(2)]) == h("02 10 01 01")


def test_encoder_rejects_what_cbf_cannot_hold() -> None:
    with pytest.raises(cbf.CbfError, match="does not fit in 16 bits"):
        cbf.encode([ra(0x10000)], 16)
    with pytest.raises(cbf.CbfError, match="frame 1: omitted-frame count 0"):
        cbf.encode([ra(1), omit(0)])
    with pytest.raises(cbf.CbfError, match=r"outside 1\.\.2"):
        cbf.encode([omit(2**63)])
    with pytest.raises(cbf.CbfError, match="word size 48"):
        cbf.encode([], 48)


def test_runs_beyond_the_decoder_limit_are_split() -> None:
    """Swift's decoder rejects a rep of more than 1 + 1<<20 copies; we split."""
    frames = [ra(0x20)] * (cbf.MAX_REPEAT + 5)  # first frame + MAX_REPEAT + 4 copies
    data = cbf.encode(frames)
    assert data == h("02 20 20 8a 10 00 01 82 00")
    assert len(cbf.decode(data).kinds) == len(frames)


# Decoder-only: forms our encoder never writes, and malformed input.
def test_inline_omit_32_is_accepted() -> None:  # v18
    assert cbf.decode(h("02 5f 00")).frames == [omit(32)]


def test_extra_address_bytes_drop_out() -> None:  # v32: 16-bit, four bytes
    assert cbf.decode(h("00 1b 12 34 56 78 00")).frames == [pc(0x5678)]


def test_external_omit_keeps_low_64_bits() -> None:  # v33: nine count bytes
    assert cbf.decode(h("02 68 01 00 00 00 00 00 00 00 05 00")).frames == [omit(5)]


def test_relative_before_absolute_starts_from_zero() -> None:  # v34
    assert cbf.decode(h("01 21 ff f0 00")).frames == [ra(0xFFFFFFF0)]


def test_rep_limit_v35_v36() -> None:
    """The upstream test of PR #90842."""
    accepted = cbf.decode(h("02 18 7f 8a 10 00 01 00"))
    assert accepted.ending is Ending.END
    assert len(accepted.kinds) == 1 + 1_048_577
    assert set(accepted.values) == {0x7F}
    rejected = cbf.decode(h("02 18 7f 8a 10 00 02"))
    assert rejected.frames == [pc(0x7F), TRUNC]
    assert rejected.error == "rep count 1048578 exceeds 1048577"
    assert rejected.error_offset == 3  # the rep opcode


MALFORMED = [
    # (name, bytes, frames before the problem, error substring or None, offset)
    ("no end marker (v21)", "02 10 01", [pc(1)], None, None),
    ("reserved 0x02 (v26)", "02 10 01 02", [pc(1)], "reserved opcode 0x02", 3),
    ("reserved 0x0f", "02 0f", [], "reserved opcode 0x0f", 1),
    ("reserved 0x90 (v27)", "02 10 01 90 00", [pc(1)], "reserved opcode 0x90", 3),
    ("reserved 0xff", "02 ff", [], "reserved opcode 0xff", 1),
    ("short address (v29)", "02 10 01 12 01", [pc(1)], "needs 3 argument bytes, only 1", 3),
    ("short external omit", "02 61 01", [], "needs 2 argument bytes, only 1", 1),
    ("short external rep", "02 10 01 89 01", [pc(1)], "needs 2 argument bytes", 3),
    ("rep before any frame (v28)", "02 80 00", [], "rep before any frame", 1),
    ("external rep of 0", "02 10 01 88 00 00", [pc(1)], "rep count 0", 3),
    ("negative external omit", "02 67 80 00 00 00 00 00 00 00 00", [], "is not positive", 1),
    ("external omit of 0", "02 60 00 00", [], "is not positive", 1),
]


@pytest.mark.parametrize(
    ("data", "frames", "error", "offset"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_input_truncates(
    data: str, frames: list[BacktraceFrame], error: str | None, offset: int | None
) -> None:
    decoded = cbf.decode(h(data))
    assert decoded.truncated
    assert decoded.frames == [*frames, TRUNC]
    if error is None:
        assert decoded.ending is Ending.NO_END and decoded.error is None
    else:
        assert decoded.ending is Ending.ERROR
        assert decoded.error is not None and error in decoded.error
        assert decoded.error_offset == offset


@pytest.mark.parametrize(
    ("data", "error"),
    [("", "empty input"), ("03 10 01 00", "word size field 3"), ("04 00", "version 1"),
     ("fe", "version 63")],
)  # fmt: skip
def test_bad_info_byte_gives_no_frames_at_all(data: str, error: str) -> None:  # v30, v31
    decoded = cbf.decode(h(data))
    assert decoded.word_bits is None
    assert decoded.frames == []  # not even a truncated marker, as in Swift
    assert not decoded.truncated
    assert decoded.error is not None and error in decoded.error


def test_bytes_after_end_are_not_read() -> None:
    decoded = cbf.decode(h("02 10 01 00 ff ff"))
    assert decoded.frames == [pc(1)] and decoded.ending is Ending.END and decoded.size == 4


def test_word_bits_of() -> None:
    assert [cbf.word_bits_of(h(x)) for x in ("00", "01 00", "02", "03", "")] == [
        16,
        32,
        64,
        None,
        None,
    ]


# Swift's base64 (section 7 of the notes).
def test_swift_base64_vectors() -> None:
    assert encode_base64(h("02 24 01 00 00 3f 2c 00")) == "AiQBAAA/LAA"
    assert encode_base64(h(V23)) == "AhEQACAQIf8ANX//AAAQ8ERhA+gpICCAERAQiAkB"


@pytest.mark.parametrize(
    ("text", "data", "stopped_at"),
    [
        ("AiQBAAA/LAA", "02 24 01 00 00 3f 2c 00", None),
        ("AiQBAAA/LAA=", "02 24 01 00 00 3f 2c 00", None),  # padding ends it quietly
        ("AiQBAAA_LAA", "02 24 01 00 00 3f 2c 00", None),  # URL-safe 63
        ("+-/_", "fb ef ff", None),  # both spellings of 62 and 63
        ("AiQB AAA", "02 24 01", 4),  # any other character ends the data
        ("AiQBA", "02 24 01", 4),  # a dangling character carries no byte
        ("", "", None),
    ],
)
def test_swift_base64_decoding(text: str, data: str, stopped_at: int | None) -> None:
    result = decode_base64(text)
    assert result.data == h(data)
    assert result.stopped_at == stopped_at
