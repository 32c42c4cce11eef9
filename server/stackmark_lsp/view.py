"""The symbolized view: the whole log as `stackmark symbolize` prints it.

The view is a virtual document (LSP 3.18 `workspace/textDocumentContent`)
under the `stackmark-symbolized` scheme. Its URI keeps the log's folder and
extension and marks the name, so an editor names the tab after the log but
tells the two apart, and highlights the view as a log:

    file:///var/log/crash.log  ->  stackmark-symbolized:/var/log/crash%20(symbolized).log

(a log that is not a file keeps its whole URI, escaped, in the path).

The text is made by the core's markup filter (`StackmarkFilter`) with the
defaults of `stackmark symbolize` and the server's symbolizer, in a worker
thread, from a snapshot of the log; it is kept until the log changes.
Along with the text comes a line map: where each log line's output starts,
so that "Symbolize" on a backtrace opens the view at that backtrace.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlparse

from stackmark.markup.filter import StackmarkFilter
from stackmark.markup.naming import Naming
from stackmark.markup.report import DiagnosticPrinter
from stackmark.markup.resolve import Resolver
from stackmark_lsp.symbolization import SymbolService, ThreadSafeSymbolizer

SCHEME = "stackmark-symbolized"
MARK = " (symbolized)"
"""Added to the log's file name, before its extension, in the view's name."""
_BREAK = re.compile(r"\r\n|\r|\n")


def view_uri(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return f"{SCHEME}:{quote(_marked(unquote(parsed.path)))}"
    return f"{SCHEME}:/{quote(uri, safe='')}{quote(MARK)}.log"


def _marked(path: str) -> str:
    """/var/log/crash.log -> /var/log/crash (symbolized).log; /tmp/log -> /tmp/log (symbolized)."""
    folder, _slash, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    marked = f"{stem}{MARK}.{extension}" if dot and stem else f"{name}{MARK}"
    return f"{folder}/{marked}"


def _unmarked(path: str) -> str:
    folder, _slash, name = path.rpartition("/")
    at = name.rfind(MARK)
    return path if at < 0 else f"{folder}/{name[:at]}{name[at + len(MARK) :]}"


def log_uri(uri: str) -> str | None:
    """The log a view URI shows (the inverse of `view_uri`), or None."""
    parsed = urlparse(uri)
    if parsed.scheme != SCHEME:
        return None
    raw = unquote(parsed.path)
    tail = MARK + ".log"
    if "/" not in raw[1:] and ":" in raw and raw.endswith(tail):
        return raw[1 : -len(tail)]  # a log that is not a file: its whole URI
    return "file://" + quote(_unmarked(raw))


@dataclass(frozen=True, slots=True)
class View:
    version: int
    blocks: tuple[str, ...]  # the text, a few thousand lines a piece (never joined whole)
    starts: array[int]  # output line where each log line's output begins

    @property
    def text(self) -> str:
        return "".join(self.blocks)

    def large_text(self) -> LargeText:
        """The text for an answer, written out block by block (transport.py)."""
        return LargeText(self.blocks)

    def line_for(self, log_line: int) -> int:
        """The view line showing log line `log_line`."""
        if not self.starts:
            return 0
        return self.starts[min(max(log_line, 0), len(self.starts) - 1)]

    def log_line(self, view_line: int) -> int:
        """The log line a view line comes from."""
        return max(bisect.bisect_right(self.starts, view_line) - 1, 0)


@dataclass(frozen=True, slots=True)
class LargeText:
    """A string value of an answer, given as pieces: the server writes it into the JSON
    message piece by piece, so a view of a large log is never held whole a second time,
    nor escaped whole (`StackmarkProtocol._send_data`, transport.py)."""

    pieces: tuple[str, ...]

    def __str__(self) -> str:
        return "".join(self.pieces)


def lines_of(text: str) -> Iterator[tuple[str, str]]:
    """(line, terminator) for each line of `text`, as `stackmark symbolize` reads them."""
    pos = 0
    for match in _BREAK.finditer(text):
        yield text[pos : match.start()], match.group()
        pos = match.end()
    if pos < len(text):
        yield text[pos:], ""


def render(
    pieces: list[str],
    version: int,
    service: SymbolService,
    naming: Naming,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> View:
    """The symbolized text of a log snapshot (run in a worker thread).

    `pieces` are the texts of the log's chunks: whole lines each (strings never
    change, so holding them is a snapshot without a copy).
    """
    resolver = Resolver(ThreadSafeSymbolizer(service))
    printer = DiagnosticPrinter(lambda _message: None, colour=False, llvm_style=False)
    line_filter = StackmarkFilter(resolver, naming, printer)
    out: list[str] = []  # the text so far, joined a block of lines at a time
    block: list[str] = []
    starts = array("L")
    view_line = 0
    total = sum(piece.count("\n") for piece in pieces) + 1
    lines = (pair for piece in pieces for pair in lines_of(piece))
    for number, (line, eol) in enumerate(lines):
        starts.append(view_line)
        produced = line_filter.feed(line, eol)
        block.append(produced)
        view_line += produced.count("\n") + produced.count("\r") - produced.count("\r\n")
        if number % 2000 == 1999:
            out.append("".join(block))  # a string per line costs ~50 bytes more each
            block.clear()
            progress(number + 1, total)
    block.append(line_filter.finish())
    out.append("".join(block))
    return View(version, tuple(out), starts)
