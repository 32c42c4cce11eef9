"""Cutting a large log into chunks that filter like the whole log.

    for chunk in split_log(data, min_size=8 << 20):
        part = data[chunk.start : chunk.end]
        filter_streams([(name, io.BytesIO(part))], out, err, settings, sym, naming,
                       first_line=chunk.first_line)

The chunks' outputs (and diagnostics), joined in order, are byte for byte
what `filter_streams` gives for the whole log. That holds because a log is
cut only before a *boundary line*: a line that starts a crash report with
`{{{reset}}}`, where stackmark's filter (`stackmark.markup.filter`) starts
over as a fresh filter would:

* the line's first `{{{` is `{{{reset}}}` (text without `}}}` or ESC may
  come before it, such as a timestamp): the reset takes effect before any
  other element of the line, so the context is empty for every element
  the line and those after it name, as it is in a fresh filter;
* a module info line left open before it is closed by the line itself in
  the whole log, and by `finish()` at the end of the previous chunk: the
  same text (`]]]` and that info line's own line ending);
* a multi-line element (an open `{{{hexdict:`) cannot continue through
  it: the parser gives up an open element on a line that opens another
  before closing it, so the lines it held are plain text in both runs;
  and nothing else is carried: the once-per-module warnings are kept per
  reset (`MarkupContext.generation`), and the log's SGR colour starts
  over on every line (`StyledWriter.reset_state`); the line before the
  boundary must hold no ESC all the same, so that no colour is open when
  an info line is closed;
* line numbers: each chunk is filtered with the number of its first line
  (`filter_streams(first_line=...)`), so diagnostics and JSON records name
  the whole log's lines and columns;
* one diagnostic is said once per input, not per reset: the note that a
  module has no file (the vDSO). A later chunk says it again, so the
  chunks' diagnostics are joined by `join_diagnostics`, which leaves out a
  note an earlier chunk already gave.

`--compat=llvm19` logs are never cut (`splittable`): llvm-symbolizer 19
prints `[[[reset]]]` only when the context held a module or mmap, so a
chunk's first line would come out differently depending on what the
previous chunk declared, which a chunk filtered on its own cannot know.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from stackmark.markup.filter import fileless_note

RESET_ELEMENT = b"{{{reset}}}"


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Bytes `start` to `end` of a log; `first_line` is the 0-based number of its first line."""

    start: int
    end: int
    first_line: int


def splittable(llvm19: bool) -> bool:
    """Whether logs filtered this way may be cut at boundary lines (see the module
    docstring: not in llvm19 mode)."""
    return not llvm19


def boundary_offsets(data: bytes) -> list[int]:
    """Where the boundary lines of `data` start (byte offsets, never 0)."""
    found: list[int] = []
    search = 0
    while True:
        at = data.find(RESET_ELEMENT, search)
        if at < 0:
            return found
        search = at + len(RESET_ELEMENT)
        line_start = data.rfind(b"\n", 0, at) + 1
        if line_start == 0:
            continue  # the first line: nothing before it to cut off
        before = data[line_start:at]
        if b"{{{" in before or b"}}}" in before or b"\x1b" in before or before.endswith(b"{"):
            continue  # `{{{{reset}}}` is an element with the bad tag `{reset`
        previous = data.rfind(b"\n", 0, line_start - 1) + 1
        if b"\x1b" in data[previous:line_start]:
            continue
        if not found or found[-1] != line_start:
            found.append(line_start)


def split_log(data: bytes, min_size: int) -> list[LogChunk]:
    """`data` cut at boundary lines into chunks of at least `min_size` bytes
    (the last may be smaller); one chunk when the log is no larger than
    `min_size` (or `min_size` is 0), or has no boundary line."""
    if min_size <= 0 or len(data) <= min_size:
        return [LogChunk(0, len(data), 0)]
    chunks: list[LogChunk] = []
    start, first_line = 0, 0
    for offset in boundary_offsets(data):
        if offset - start < min_size:
            continue
        chunks.append(LogChunk(start, offset, first_line))
        first_line += data.count(b"\n", start, offset)
        start = offset
    if chunks and len(data) - start < min_size // 4:
        last = chunks.pop()  # a short tail rides with the chunk before it
        start, first_line = last.start, last.first_line
    chunks.append(LogChunk(start, len(data), first_line))
    return chunks


_FILELESS_NOTE = re.compile(
    r"^.*: note: " + re.escape(fileless_note("\0")).replace(re.escape("\0"), "(.*)") + "$"
)


def join_diagnostics(parts: Sequence[str]) -> str:
    """The chunks' diagnostics, in order, as the whole log's filter says them: a
    module with no file is noted once per input, so a later chunk's repeat of that
    note is left out."""
    noted: set[str] = set()
    kept: list[str] = []
    for part in parts:
        for line in part.splitlines(keepends=True):
            found = _FILELESS_NOTE.match(line.rstrip("\r\n"))
            if found is not None:
                if found.group(1) in noted:
                    continue
                noted.add(found.group(1))
            kept.append(line)
    return "".join(kept)
