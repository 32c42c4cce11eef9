"""Backtraces as symbolizer markup: the lines a crashing program would log.

`{{{reset}}}`, then one `{{{module}}}` per module with its `{{{mmap}}}`
segments, then one `{{{bt:N:ADDR:pc|ra}}}` per frame, so the output pipes
into `stackmark symbolize` or `llvm-symbolizer --filter-markup`. Used by
`stackmark unwind`, `stackmark cbf decode` and the debugger plugins.

Markup has no element for CBF's markers: an omitted run advances the frame
numbers by its count (as Swift prints it); one with no frame after it, which
no number can show, is the plain-text line `omitted_line(count)`; a
truncated backtrace ends with the plain-text line `TRUNCATED_LINE`. Async resume points are precise
addresses, so they are written as `:pc`. A frame's note, when asked for,
follows its element as plain text (symbolizers keep text around elements).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from stackmark.model import BacktraceFrame, FrameKind, Module

TRUNCATED_LINE = "... (backtrace truncated)"
OMITTED_LINE = re.compile(r"^\.\.\. \((\d+) frames? omitted\)$")


def omitted_line(count: int) -> str:
    """The text line for `count` omitted frames at the end of a backtrace."""
    return f"... ({count} frame{'' if count == 1 else 's'} omitted)"


def _field(text: str) -> str:
    """A markup field cannot hold ':' (the separator) or the closing braces."""
    return text.replace(":", "_").replace("}}}", "___")


def context_lines(modules: Iterable[Module], *, reset: bool = True) -> list[str]:
    """`{{{reset}}}` (optional), then each module and its segments in address order.

    Modules without a build ID are left out: a `module` element must carry
    one (llvm-symbolizer rejects the element, and every `mmap` after it)."""
    lines = ["{{{reset}}}"] if reset else []
    for module in modules:
        if not module.build_id:
            continue  # markup requires one; symbolizers find files by it
        lines.append(f"{{{{{{module:{module.id}:{_field(module.name)}:elf:{module.build_id}}}}}}}")
        for seg in sorted(module.segments, key=lambda s: s.start):
            if seg.size <= 0 or not seg.mode:
                continue
            lines.append(
                f"{{{{{{mmap:0x{seg.start:x}:0x{seg.size:x}:load:{module.id}:{seg.mode}:"
                f"0x{seg.module_relative:x}}}}}}}"
            )
    return lines


def frame_lines(
    frames: Iterable[BacktraceFrame], *, first_number: int = 0, notes: bool = False
) -> list[str]:
    """One `bt` element per address frame; omitted runs skip numbers (a final
    one, with no number after it to skip to, is written as `omitted_line`)."""
    lines = []
    number = first_number
    omitted = 0
    truncated = False
    for frame in frames:
        kind = frame.kind
        if kind is FrameKind.OMITTED:
            number += frame.count
            omitted += frame.count
            continue
        if kind is FrameKind.TRUNCATED:
            truncated = True
            break
        omitted = 0
        suffix = "ra" if kind is FrameKind.RA else "pc"
        line = f"{{{{{{bt:{number}:0x{frame.address:x}:{suffix}}}}}}}"
        if notes and frame.note:
            line += f" ({frame.note})"
        lines.append(line)
        number += 1
    if omitted:
        lines.append(omitted_line(omitted))
    if truncated:
        lines.append(TRUNCATED_LINE)
    return lines


def backtrace_markup(
    modules: Sequence[Module],
    frames: Iterable[BacktraceFrame],
    *,
    reset: bool = True,
    notes: bool = False,
) -> list[str]:
    """The context for `modules` followed by the frames: a complete markup backtrace."""
    return context_lines(modules, reset=reset) + frame_lines(frames, notes=notes)
