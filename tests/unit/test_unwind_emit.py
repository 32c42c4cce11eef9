"""Markup emission of backtraces (`stackmark.unwind.emit`), element by element
as the symbolizer markup format writes them."""

from __future__ import annotations

from stackmark.model import BacktraceFrame, FrameKind, Module, Segment
from stackmark.unwind.emit import TRUNCATED_LINE, backtrace_markup, context_lines, frame_lines


def test_context_lists_modules_and_segments_in_address_order() -> None:
    modules = [
        Module(0, "app", "0a1b", [Segment(0x56000, 0x2000, "rw", 0x3000),
                                  Segment(0x55000, 0x1000, "rx", 0x1000)]),
        Module(1, "no:colons}}}", "cd", [Segment(0x7000, 0x1000, "r", 0)]),
        Module(2, "[vdso-like, no build ID]", "", [Segment(0x9000, 0x1000, "rx", 0)]),
    ]  # fmt: skip
    assert context_lines(modules) == [
        "{{{reset}}}",
        "{{{module:0:app:elf:0a1b}}}",
        "{{{mmap:0x55000:0x1000:load:0:rx:0x1000}}}",
        "{{{mmap:0x56000:0x2000:load:0:rw:0x3000}}}",
        "{{{module:1:no_colons___:elf:cd}}}",
        "{{{mmap:0x7000:0x1000:load:1:r:0x0}}}",
    ]
    assert context_lines([], reset=False) == []


def test_frames() -> None:
    frames = [
        BacktraceFrame(FrameKind.PC, 0x1000, note="registers"),
        BacktraceFrame(FrameKind.RA, 0x2000, note="sframe"),
        BacktraceFrame(FrameKind.OMITTED, count=5),
        BacktraceFrame(FrameKind.ASYNC, 0x3000),
        BacktraceFrame(FrameKind.TRUNCATED),
        BacktraceFrame(FrameKind.RA, 0x4000),  # after the end: not written
    ]
    assert frame_lines(frames) == [
        "{{{bt:0:0x1000:pc}}}",
        "{{{bt:1:0x2000:ra}}}",
        "{{{bt:7:0x3000:pc}}}",
        TRUNCATED_LINE,
    ]
    # omitted frames with no frame after them: a line of their own, before the end
    assert frame_lines([*frames[:3], BacktraceFrame(FrameKind.OMITTED, count=2)]) == [
        "{{{bt:0:0x1000:pc}}}",
        "{{{bt:1:0x2000:ra}}}",
        "... (7 frames omitted)",
    ]
    assert frame_lines([frames[0], BacktraceFrame(FrameKind.OMITTED, count=1), frames[4]]) == [
        "{{{bt:0:0x1000:pc}}}",
        "... (1 frame omitted)",
        TRUNCATED_LINE,
    ]
    assert frame_lines(frames[:2], notes=True, first_number=3) == [
        "{{{bt:3:0x1000:pc}}} (registers)",
        "{{{bt:4:0x2000:ra}}} (sframe)",
    ]


def test_backtrace_markup_is_context_then_frames() -> None:
    module = Module(0, "m", "ff", [Segment(0x1000, 0x1000, "rx", 0)])
    lines = backtrace_markup([module], [BacktraceFrame(FrameKind.PC, 0x1010)], reset=False)
    assert lines == [
        "{{{module:0:m:elf:ff}}}",
        "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}",
        "{{{bt:0:0x1010:pc}}}",
    ]
