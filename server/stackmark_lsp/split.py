"""Opening a large log on two cores: the second half's diagnostics from a forked child.

A log of a million lines takes the index about 1.4 s of one core to read,
and a client waits for the first `publishDiagnostics` until it is done.
The crash reports of a log do not depend on each other: a line that starts
with `{{{reset}}}` (no multi-line element open) begins afresh, and what
every later line gets does not depend on any line before it. So a large
log is read in two halves at once:

* the server picks such a line near the middle (`split_line`) and forks;
* the child reads from that line to the end (`Index.read_from`) and sends
  back only what the first publication needs: the diagnostics, the module
  elements and the build IDs of its half (a few kilobytes, pickled through
  a pipe), then leaves with `os._exit` (no clean-up of the parent's state,
  no output on the parent's streams);
* meanwhile the parent reads up to that line (`Index.read_until`), then
  takes the child's answer: the two halves make the `Preview` the first
  publication is made from;
* after publishing, the parent reads the second half itself (`read_on`),
  so that its index is whole; its diagnostics are the same as the
  preview's, and the server publishes again only if they are not.

The parent checks that the line did start a crash report cleanly when its
own reading reached it; if not (a multi-line element was open there), or if
there is no such line, no `fork`, or the child fails, the log is read in
one go as before. Small logs are read in one go: forking costs more than it
saves below a few megabytes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import time
from collections import Counter
from collections.abc import Iterator

from stackmark.markup.diagnostics import Diagnostic
from stackmark.model import Module
from stackmark_lsp.document import Document
from stackmark_lsp.index import Index

# Logs smaller than this (in characters) are read in one go. Tests lower it through
# the environment to exercise the split on small logs.
MIN_CHARS = int(os.environ.get("STACKMARK_LSP_SPLIT_MIN_CHARS", "8000000"))
RESET_LINE = "{{{reset}}}"
MAX_DIAGNOSTICS = 5000  # what the child sends at most (problems.py publishes no more)

logger = logging.getLogger(__name__)


# A module element as the child sends it: (ID, name, build ID, line, column of its `{{{`).
ModuleRecord = tuple[int, str, str, int, int]


class Preview:
    """What the first publication needs, for the whole log, before the index is whole.

    `diagnostics`: (document line, diagnostic) in document order, as
    `Index.diagnostics` gives them; `build_ids`: how many module elements
    declare each build ID; `modules()`: each module element, in document
    order (the first half's from the index, read only if asked: a log whose
    binaries are all known never needs them).
    """

    __slots__ = ("_index", "_theirs", "build_ids", "diagnostics", "line")

    def __init__(
        self,
        line: int,
        index: Index,
        diagnostics: list[tuple[int, Diagnostic]],
        theirs: list[ModuleRecord],
        build_ids: Counter[str],
    ) -> None:
        self.line = line  # where the halves meet
        self._index = index  # read up to `line` (until the caller reads on)
        self._theirs = theirs
        self.diagnostics = diagnostics
        self.build_ids = build_ids

    def modules(self) -> Iterator[tuple[Module, int, int]]:
        """(module, line, column of its `{{{`) of each module element, in document order."""
        for record in _module_records(self._index):
            yield Module(*record[:3]), record[3], record[4]
        for record in self._theirs:
            yield Module(*record[:3]), record[3], record[4]

    def by_build_id(self) -> dict[str, list[tuple[Module, int, int]]]:
        found: dict[str, list[tuple[Module, int, int]]] = {}
        for record in self.modules():
            found.setdefault(record[0].build_id, []).append(record)
        return found


def split_line(document: Document) -> int | None:
    """A line near the middle of `document` that starts with a reset (None: none found
    in its third quarter, or the log is small)."""
    chunks = document.chunks
    if sum(len(chunk.text) for chunk in chunks) < MIN_CHARS or len(chunks) < 4:
        return None
    for chunk in chunks[len(chunks) // 2 : 3 * len(chunks) // 4]:
        text = chunk.text
        if text.startswith(RESET_LINE):
            return chunk.start
        at = text.find("\n" + RESET_LINE)
        if at >= 0 and text.count("\n", 0, at + 1) < chunk.count:
            return chunk.start + text.count("\n", 0, at + 1)
    return None


def read_first_half(index: Index) -> Preview | None:
    """Read `index`'s document, in two processes when it is large (see the module
    docstring). With a preview returned, the index is read up to `preview.line` and the
    caller must call `index.read_on(preview.line)` after publishing; with None, the
    index is whole."""
    line = split_line(index.document) if hasattr(os, "fork") else None
    if line is None:
        index.rebuild()
        return None
    reader, writer = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        index.rebuild()
        return None
    if child == 0:
        os.close(reader)
        _run_child(index, line, writer)  # never returns
    os.close(writer)
    started = time.perf_counter()
    try:
        clean = index.read_until(line)
        read = time.perf_counter()
        answer = _read_all(reader) if clean else b""
        waited = time.perf_counter() - read
    finally:
        os.close(reader)
        if not clean:
            with contextlib.suppress(OSError):
                os.kill(child, 9)
        _reap(child)
    if not clean:
        if index.halted_at == line:
            index.read_on(line)  # stopped there, but inside a multi-line element
        return None
    try:
        theirs = pickle.loads(answer)
    except Exception:  # the child failed (it sends nothing then): read on here
        index.read_on(line)
        return None
    diagnostics, modules, build_ids, child_time = theirs
    logger.info(
        "read up to line %d in %.3f s, then waited %.3f s for the child's half (read in %.3f s)",
        line,
        read - started,
        waited,
        child_time,
    )
    mine_diagnostics = list(_first(index.diagnostics(), MAX_DIAGNOSTICS))
    return Preview(
        line,
        index,
        mine_diagnostics + diagnostics[: MAX_DIAGNOSTICS - len(mine_diagnostics)],
        modules,
        index.build_ids + build_ids,
    )


def _run_child(index: Index, line: int, writer: int) -> None:
    """The child: read from `line` on, send the preview's part, leave at once."""
    code = 1
    try:
        started = time.perf_counter()
        index.read_from(line)
        payload = (
            list(_first(index.diagnostics(), MAX_DIAGNOSTICS)),
            list(_module_records(index)),
            index.build_ids,
            time.perf_counter() - started,
        )
        _write_all(writer, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        code = 0
    except BaseException:
        pass  # the parent reads the log itself then
    finally:
        os._exit(code)


def _module_records(index: Index) -> Iterator[ModuleRecord]:
    """Every module element the index has read, in document order."""
    for epoch in index.epochs():
        for module_id, ((info, column), name, build_id) in epoch.modules.items():
            yield module_id, name, build_id, info.line, column


def _first(items: Iterator[tuple[int, Diagnostic]], count: int) -> Iterator[tuple[int, Diagnostic]]:
    for number, item in enumerate(items):
        if number >= count:
            return
        yield item


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int) -> bytes:
    parts = []
    while part := os.read(fd, 1 << 20):
        parts.append(part)
    return b"".join(parts)


def _reap(child: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child, 0)
