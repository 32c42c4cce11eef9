"""Physical frames from a debugger's frame list (stackmark.debugger.frames)."""

from __future__ import annotations

from stackmark.debugger.backend import RawFrame, RawFrameKind
from stackmark.debugger.frames import physical_frames
from stackmark.model import FrameKind

N = RawFrameKind.NORMAL
INLINE = RawFrameKind.INLINE
SIG = RawFrameKind.SIGTRAMP
SYN = RawFrameKind.SYNTHETIC


def kinds_and_addresses(raw: list[RawFrame]) -> list[tuple[str, int]]:
    return [(f.frame.kind.value, f.frame.address) for f in physical_frames(raw)]


def test_inline_frames_fold_into_their_concrete_frame_at_the_youngest_pc() -> None:
    # LLDB reports the inlined block's start for the concrete frame (0x1bf); the
    # return address is the inline frame's pc (0x1cb).
    raw = [
        RawFrame(0x179, N, "stop_here"),
        RawFrame(0x1CB, INLINE, "mid"),
        RawFrame(0x1BF, N, "outer"),
        RawFrame(0x217, N, "main"),
    ]
    frames = physical_frames(raw)
    assert kinds_and_addresses(raw) == [("pc", 0x179), ("ra", 0x1CB), ("ra", 0x217)]
    assert [m.function for m in frames[1].members] == ["mid", "outer"]
    assert [f.index for f in frames] == [0, 1, 2]


def test_frame_zero_inside_an_inlined_function_is_one_pc_frame() -> None:
    raw = [RawFrame(0x10, INLINE, "inner"), RawFrame(0x10, N, "outer"), RawFrame(0x40, N, "main")]
    assert kinds_and_addresses(raw) == [("pc", 0x10), ("ra", 0x40)]


def test_signal_trampoline_and_the_interrupted_frame_are_pc() -> None:
    raw = [
        RawFrame(0x100, N, "stop_here"),
        RawFrame(0x200, N, "handler"),
        RawFrame(0x300, SIG, "__restore_rt"),
        RawFrame(0x400, N, "faulting"),
        RawFrame(0x500, N, "caller"),
    ]
    frames = physical_frames(raw)
    assert kinds_and_addresses(raw) == [
        ("pc", 0x100),
        ("ra", 0x200),
        ("pc", 0x300),
        ("pc", 0x400),
        ("ra", 0x500),
    ]
    assert frames[2].is_signal_trampoline and not frames[3].is_signal_trampoline


def test_synthetic_frames_are_dropped() -> None:
    raw = [RawFrame(0x1, N), RawFrame(0x2, SYN, "tail"), RawFrame(0x3, N)]
    assert kinds_and_addresses(raw) == [("pc", 0x1), ("ra", 0x3)]


def test_a_list_ending_in_inline_frames_keeps_them() -> None:
    raw = [RawFrame(0x1, N), RawFrame(0x2, INLINE)]
    assert kinds_and_addresses(raw) == [("pc", 0x1), ("ra", 0x2)]
    assert physical_frames([]) == []
    assert physical_frames([RawFrame(0x5, N)])[0].frame.kind is FrameKind.PC
