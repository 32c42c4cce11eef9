"""Property-based tests of CBF: round trips, minimal encodings, robustness."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.formats import cbf
from stackmark.formats.cbf import Ending
from stackmark.model import BacktraceFrame, FrameKind

ADDRESS_KINDS = (FrameKind.PC, FrameKind.RA, FrameKind.ASYNC)


def frames_for(bits: int) -> st.SearchStrategy[list[BacktraceFrame]]:
    """Backtraces with clustered addresses (as in real traces), runs and omits."""
    base = st.integers(0, (1 << bits) - 1)
    near = st.tuples(base, st.integers(-(1 << 20), 1 << 20)).map(
        lambda t: (t[0] + t[1]) % (1 << bits)
    )
    address_frame = st.builds(BacktraceFrame, st.sampled_from(ADDRESS_KINDS), st.one_of(base, near))
    omitted = st.builds(
        lambda n: BacktraceFrame(FrameKind.OMITTED, count=n),
        st.one_of(st.integers(1, 40), st.integers(1, 2**63 - 1)),
    )
    frame = st.one_of(address_frame, address_frame, omitted)
    runs = st.tuples(frame, st.integers(1, 12)).map(lambda t: [t[0]] * t[1])
    return st.lists(runs, max_size=12).map(lambda chunks: [f for c in chunks for f in c])


traces = st.sampled_from((16, 32, 64)).flatmap(
    lambda bits: st.tuples(st.just(bits), frames_for(bits))
)


@given(traces, st.booleans())
@settings(max_examples=200)
def test_round_trip(trace: tuple[int, list[BacktraceFrame]], truncated: bool) -> None:
    bits, frames = trace
    if truncated:
        frames = [*frames, BacktraceFrame(FrameKind.TRUNCATED)]
    data = cbf.encode(frames, bits)
    decoded = cbf.decode(data)
    assert decoded.word_bits == bits
    assert decoded.error is None
    assert decoded.frames == frames
    assert decoded.size == len(data)
    assert decoded.ending is (Ending.TRUNC if truncated else Ending.END)


@given(traces)
@settings(max_examples=200)
def test_absolute_first_round_trips_and_starts_absolute(
    trace: tuple[int, list[BacktraceFrame]],
) -> None:
    bits, frames = trace
    data = cbf.encode(frames, bits, absolute_first=True)
    assert cbf.decode(data).frames == frames
    first_address = next((i for i, f in enumerate(frames) if f.kind in ADDRESS_KINDS), None)
    if first_address is not None:
        opcode = _opcodes(data)[_instruction_index(frames, first_address)]
        assert opcode & cbf.ADDRESS_ABSOLUTE


@given(traces)
@settings(max_examples=200)
def test_no_address_instruction_is_longer_than_needed(
    trace: tuple[int, list[BacktraceFrame]],
) -> None:
    """Each address argument is the shorter of the two forms, and as short as
    its value allows: dropping its first byte would change the value."""
    bits, frames = trace
    data = cbf.encode(frames, bits)
    pos = 1
    while data[pos] not in (cbf.OP_END, cbf.OP_TRUNC):
        op = data[pos]
        length = _argument_length(op)
        if 0x10 <= op < 0x40 and length > 1:
            field = data[pos + 1 : pos + 1 + length]
            value = int.from_bytes(field, "big", signed=True)
            assert int.from_bytes(field[1:], "big", signed=True) != value
        pos += 1 + length


@given(st.binary(max_size=64))
@settings(max_examples=300)
def test_decoder_never_raises(data: bytes) -> None:
    decoded = cbf.decode(data)
    assert decoded.size <= len(data)
    assert len(decoded.kinds) == len(decoded.values)
    if decoded.word_bits is None:
        assert decoded.kinds == []


@given(traces, st.data())
@settings(max_examples=200)
def test_any_prefix_decodes_to_a_prefix(
    trace: tuple[int, list[BacktraceFrame]], data: st.DataObject
) -> None:
    """Cutting an encoding anywhere loses frames from the end, never invents any."""
    bits, frames = trace
    encoded = cbf.encode(frames, bits)
    cut = data.draw(st.integers(1, len(encoded) - 1)) if len(encoded) > 1 else 1
    decoded = cbf.decode(encoded[:cut])
    got = decoded.frames[:-1] if decoded.truncated else decoded.frames
    assert decoded.truncated
    assert got == frames[: len(got)]


def _argument_length(op: int) -> int:
    if 0x10 <= op < 0x40:
        return (op & 7) + 1
    if 0x60 <= op < 0x80:
        return (op & 0x1F) + 1
    if 0x88 <= op < 0x90:
        return (op & 7) + 1
    return 0


def _opcodes(data: bytes) -> list[int]:
    ops, pos = [], 1
    while pos < len(data):
        ops.append(data[pos])
        if data[pos] in (cbf.OP_END, cbf.OP_TRUNC):
            break
        pos += 1 + _argument_length(data[pos])
    return ops


def _instruction_index(frames: list[BacktraceFrame], frame_index: int) -> int:
    """Which instruction writes frames[frame_index]: each run of equal frames
    before it took one instruction, plus one `rep` if it repeated."""
    index = i = 0
    while i < frame_index:
        j = i + 1
        while j < frame_index and frames[j] == frames[i]:
            j += 1
        index += 1 if j - i == 1 else 2
        i = j
    return index
