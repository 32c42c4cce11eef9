"""Opening a large log on two cores: the second half's diagnostics from a forked child.

A log of a million lines takes the index about 1.4 s of one core to read,
and a client waits for the first `publishDiagnostics` until it is done.
The crash reports of a log do not depend on each other: a line that starts
with `{{{reset}}}` (no multi-line element open) begins afresh, and what
every later line gets does not depend on any line before it. So a large
log is read in two halves at once:

* the server picks such a line near the middle of the text it was sent
  (`split_offset`) and forks (`fork_second_half`) before it does anything
  else with the text;
* the child cuts the text from that line on into a document of its own,
  reads it, and sends back only what the first publication needs: the
  diagnostics, the module elements and the build IDs of its half (a few
  kilobytes, pickled through a pipe), then leaves with `os._exit` (no
  clean-up of the parent's state, no output on the parent's streams);
* meanwhile the parent makes the document of the text before that line and
  reads it (`Halves.read_first_half`), then takes the child's answer, with
  its lines moved down by the first half's: the two halves make the
  `Preview` the first publication is made from;
* after publishing, the parent appends the second half to its document and
  reads it itself (`Halves.read_second_half`), so that its index is whole;
  its diagnostics are the same as the preview's, and the server publishes
  again only if they are not.

The parent checks that the line did start a crash report cleanly once it has
read the first half; if not (a multi-line element was open there), or if
there is no such line, no `fork`, or the child fails, the parent reads the
second half before publishing, as one pass would. Small logs are read in one
go: forking costs more than it saves below a few megabytes.
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
# Where the cut is looked for, as a share of the text. The child often finishes later than
# the parent (0-0.25 s on the benchmark), but moving the cut to 0.53 did not shorten the
# wait measurably on this machine, whose speed moves by a third within minutes.
FIRST_SHARE = 0.5
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


def split_offset(text: str) -> int | None:
    """Where `text` is cut in two: the start of a line near the middle that begins with a
    reset (None: the text is small, or no such line in its third quarter)."""
    if len(text) < MIN_CHARS:
        return None
    at = text.find("\n" + RESET_LINE, int(len(text) * FIRST_SHARE), len(text) * 3 // 4)
    return None if at < 0 else at + 1


class Halves:
    """A log being read in two processes (see the module docstring): the parent's side."""

    def __init__(self, text: str, offset: int, child: int, reader: int) -> None:
        self.text = text
        self.offset = offset  # where the child's half begins in `text`
        self.line = 0  # its first line (known once the parent has cut the first half)
        self._child = child
        self._reader = reader

    def read_first_half(self, index: Index) -> Preview | None:
        """Read `index`, whose document is `text[:offset]`, and join the child's answer to
        it. With a preview returned, the caller publishes, then calls `read_second_half`;
        with None (the child's answer is not to be used), it calls `read_second_half`
        first."""
        document = index.document
        self.line = len(document) - 1  # the empty last line the second half fills
        started = time.perf_counter()
        index.rebuild()
        read = time.perf_counter()
        clean = index.opens_cleanly(self.line)
        try:
            answer = _read_all(self._reader) if clean else b""
            waited = time.perf_counter() - read
        finally:
            os.close(self._reader)
            if not clean:
                with contextlib.suppress(OSError):
                    os.kill(self._child, 9)
        if not clean:
            return None
        try:
            diagnostics, modules, build_ids, child_time = pickle.loads(answer)
        except Exception:  # the child failed (it sends nothing then)
            return None
        logger.info(
            "read up to line %d in %.3f s, then waited %.3f s for the child's half "
            "(read in %.3f s)",
            self.line,
            read - started,
            waited,
            child_time,
        )
        base = self.line  # the child numbered its lines from 0
        mine = list(_first(index.diagnostics(), MAX_DIAGNOSTICS))
        theirs = [(base + line, diagnostic) for line, diagnostic in diagnostics]
        records = [(i, name, bid, base + line, col) for i, name, bid, line, col in modules]
        return Preview(
            self.line,
            index,
            mine + theirs[: MAX_DIAGNOSTICS - len(mine)],
            records,
            index.build_ids + build_ids,
        )

    def read_second_half(self, index: Index) -> None:
        """Append the second half to `index`'s document and read it there."""
        # The child is gone or going: it closed the pipe before leaving, so that the
        # parent did not wait for the kernel to tear down its memory.
        _reap(self._child)
        index.document.extend(self.text, self.offset)
        self.text = ""
        index.read_on(self.line)


def fork_second_half(uri: str, text: str) -> Halves | None:
    """Start a child reading the second half of `text` (None: the log is read in one go)."""
    offset = split_offset(text) if hasattr(os, "fork") else None
    if offset is None:
        return None
    reader, writer = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return None
    if child == 0:
        os.close(reader)
        _run_child(uri, text, offset, writer)  # never returns
    os.close(writer)
    return Halves(text, offset, child, reader)


def _run_child(uri: str, text: str, offset: int, writer: int) -> None:
    """The child: read `text` from `offset` on, send the preview's part, leave at once."""
    code = 1
    try:
        started = time.perf_counter()
        index = Index(Document(uri, text, start=offset))
        payload = (
            list(_first(index.diagnostics(), MAX_DIAGNOSTICS)),
            list(_module_records(index)),
            index.build_ids,
            time.perf_counter() - started,
        )
        _write_all(writer, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
        os.close(writer)  # the parent's end-of-file now, not after this process is torn down
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
