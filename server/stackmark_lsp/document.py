"""An open log as chunks of lines, edited in place without rebuilding the whole text.

A log can be a million lines long. Holding it as one string would make
every keystroke copy it; holding one string per line costs a second per
open and ~50 bytes per line. So the text is cut into *chunks* of whole
lines (~32 KiB each). An edit rewrites one chunk (merging neighbours when
a range crosses chunk boundaries), and each chunk also carries what the
index knows about its lines (`infos`, keyed by line number *within* the
chunk), so that inserting a line shifts nothing outside the chunk.

Lines end at `\\n`, `\\r\\n` or `\\r` (LSP's rule, not `str.splitlines`,
which also breaks at form feeds and other separators). The last line has
no terminator and may be empty, so "a\\n" has two lines.

Columns inside the server are Python string indexes (code points); the
client counts in UTF-16 units unless it negotiated otherwise
(`PositionCodec`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stackmark.markup.diagnostics import Diagnostic
    from stackmark.markup.parser import Pending
    from stackmark_lsp.epochs import Epoch

CHUNK_TARGET = 32 * 1024  # characters per chunk when cutting a text
CHUNK_LIMIT = 4 * CHUNK_TARGET  # an edited chunk larger than this is cut again
_LINES_CACHED = 256  # chunks whose split lines are kept

_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> tuple[list[str], list[int] | None]:
    """(line contents, terminator lengths or None when every terminator is '\\n').

    The last entry is what follows the last terminator (possibly "").
    """
    if "\r" not in text:
        return text.split("\n"), None
    lines: list[str] = []
    eols: list[int] = []
    pos = 0
    for match in _BREAK.finditer(text):
        lines.append(text[pos : match.start()])
        eols.append(match.end() - match.start())
        pos = match.end()
    lines.append(text[pos:])
    eols.append(0)
    return lines, eols


def count_breaks(text: str) -> int:
    """Number of line terminators in `text`."""
    newlines = text.count("\n")
    if "\r" not in text:
        return newlines
    return newlines + text.count("\r") - text.count("\r\n")


class Chunk:
    """A run of whole lines, and what the index knows about them.

    Every chunk but the last ends with a terminator; `count` is the number
    of lines that start in it. `start` is the document line of its first
    line (kept up to date by `Document`).
    """

    __slots__ = ("count", "entry", "epochs", "infos", "lazy", "problems", "start", "text")

    def __init__(self, text: str, last: bool) -> None:
        self.text = text
        self.count = count_breaks(text) + (1 if last else 0)
        self.start = 0
        self.infos: dict[int, LineInfo | int] = {}  # see index.py: entries by line
        # Set when the entries of plain frame lines are left out (index.py fills them on
        # first use): `infos` then holds only the lines that need more than an int.
        self.lazy = False
        self.problems: list[LineInfo] | None = None  # infos with diagnostics (None: not known)
        self.epochs: list[Epoch] = []  # epochs whose reset lies in this chunk, in order
        self.entry: Epoch | None = None  # the epoch in force where this chunk begins

    def __repr__(self) -> str:
        return f"<Chunk lines {self.start}+{self.count}>"


class LineInfo:
    """What is known about one line with markup (when an int does not say it all).

    `rel` is the line number the parser was given for this line: 0, or
    for a line inside a multi-line element its distance from the line the
    element opened on. Diagnostics are numbered that way; `Index.absolute` (index.py)
    turns them into document lines.
    """

    __slots__ = ("chunk", "diags", "flags", "frame", "local", "pending", "rel")

    def __init__(self, chunk: Chunk, local: int) -> None:
        self.chunk = chunk
        self.local = local
        self.flags = 0
        self.rel = 0
        self.frame = -1  # the first bt frame number on the line
        self.pending: Pending | None = None  # open multi-line element after this line
        self.diags: tuple[Diagnostic, ...] = ()

    @property
    def line(self) -> int:
        return self.chunk.start + self.local

    def __repr__(self) -> str:
        return f"<LineInfo {self.line} flags=0x{self.flags:x}>"


def cut(text: str, target: int | None = None, start: int = 0, stop: int | None = None) -> list[str]:
    """`text[start:stop]` cut into pieces of about `target` characters (`CHUNK_TARGET`),
    each ending with a terminator (except possibly the last). Cuts fall after '\\n', or
    after a lone '\\r'."""
    target = CHUNK_TARGET if target is None else target
    pieces: list[str] = []
    pos = start
    size = len(text) if stop is None else stop
    while size - pos > target:
        at = text.find("\n", pos + target, size)
        if at < 0:
            at = text.find("\r", pos + target, size)
            while at >= 0 and text.startswith("\n", at + 1):
                at = text.find("\r", at + 2)
            if at < 0:
                break
        pieces.append(text[pos : at + 1])
        pos = at + 1
    pieces.append(text[pos:size])
    return pieces


@dataclass(frozen=True, slots=True)
class Edit:
    """What an edit did to the lines: in `chunk`, lines `first`..`first+old_count-1`
    (chunk-relative) became `new_count` lines. `whole` is set when the whole
    text was replaced (the index then starts over)."""

    chunk: Chunk
    first: int
    old_count: int
    new_count: int
    whole: bool = False


class PositionCodec:
    """Client columns (UTF-16 units by default) <-> Python string indexes.

    A line's conversion table (where its wide characters are) is built once and
    kept for the last few lines: semantic tokens convert thousands of columns
    on one long line, and summing widths from the line start each time made
    that quadratic (a 90 KB line of emoji and elements took a minute).
    """

    def __init__(self, encoding: str = "utf-16") -> None:
        self.encoding = encoding
        self._tables: OrderedDict[str, _WideCharacters] = OrderedDict()

    def to_index(self, line: str, column: int) -> int:
        """The string index of client column `column` in `line` (clamped to the line)."""
        if column <= 0:
            return 0
        if self.encoding == "utf-32" or line.isascii():
            return min(column, len(line))
        return self._table(line).to_index(column, len(line))

    def to_client(self, line: str, index: int) -> int:
        """The client column of string index `index` in `line`."""
        if self.encoding == "utf-32" or line.isascii():
            return index
        return self._table(line).to_client(min(max(index, 0), len(line)))

    def _table(self, line: str) -> _WideCharacters:
        table = self._tables.get(line)
        if table is None:
            table = _WideCharacters(line, self._width)
            self._tables[line] = table
            if len(self._tables) > _KEPT_LINE_TABLES:
                self._tables.popitem(last=False)
        else:
            self._tables.move_to_end(line)
        return table

    def _width(self, char: str) -> int:
        code = ord(char)
        if self.encoding == "utf-16":
            return 2 if code > 0xFFFF else 1
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            return 1
        return len(char.encode("utf-8", "surrogatepass"))


_KEPT_LINE_TABLES = 16


class _WideCharacters:
    """The characters of one line that take more than one client unit: their
    string indexes and the extra units counted up to and including each, so a
    column converts by bisection."""

    __slots__ = ("columns", "extra", "indexes")

    def __init__(self, line: str, width: Callable[[str], int]) -> None:
        self.indexes: list[int] = []
        self.extra: list[int] = []  # extra units of the wide characters 0..k
        self.columns: list[int] = []  # client column where wide character k starts
        total = 0
        for index, char in enumerate(line):
            if char.isascii():
                continue
            units = width(char)
            if units > 1:
                self.indexes.append(index)
                self.columns.append(index + total)
                total += units - 1
                self.extra.append(total)

    def to_client(self, index: int) -> int:
        before = bisect.bisect_left(self.indexes, index)  # wide characters before `index`
        return index + (self.extra[before - 1] if before else 0)

    def to_index(self, column: int, length: int) -> int:
        """A column inside a wide character gives the index of that character."""
        k = bisect.bisect_left(self.columns, column) - 1  # the last wide char starting before
        if k < 0:
            return min(column, length)
        char_start = self.columns[k]
        units = self.extra[k] - (self.extra[k - 1] if k else 0) + 1
        if column < char_start + units:
            return self.indexes[k]
        return min(column - self.extra[k], length)


class Document:
    """The text of one open log, as chunks."""

    def __init__(
        self,
        uri: str,
        text: str,
        version: int = 0,
        language_id: str = "",
        *,
        start: int = 0,
        stop: int | None = None,
    ) -> None:
        """The document of `text[start:stop]` (a log opened in halves: see split.py)."""
        self.uri = uri
        self.version = version
        self.language_id = language_id
        self.chunks: list[Chunk] = []
        self._starts: list[int] = []
        self._lines: OrderedDict[int, tuple[list[str], list[int] | None]] = OrderedDict()
        # Completes a lazy chunk's entries before its text changes (set by the index).
        self.prepare: Callable[[Chunk], None] | None = None
        self.set_text(text, start, stop)

    # -- whole text -------------------------------------------------------------

    def set_text(self, text: str, start: int = 0, stop: int | None = None) -> None:
        pieces = cut(text, start=start, stop=stop)
        self.chunks = [Chunk(p, i == len(pieces) - 1) for i, p in enumerate(pieces)]
        self._lines.clear()
        self.renumber()

    def extend(self, text: str, start: int = 0) -> None:
        """Append `text[start:]` as the document's last line and the lines after it.

        The document must end with a terminator: its last line, empty, becomes the
        first line of the text appended (so a document of `a[:k]` extended with `a`
        from `k` is the document of `a`, for `k` just after a terminator). That empty
        line loses whatever entry the index gave it."""
        last = self.chunks[-1]
        if not last.text.endswith(("\n", "\r")) and last.text:
            raise ValueError("extend: the document does not end with a line terminator")
        last.count -= 1
        last.infos.pop(last.count, None)
        last.problems = None
        self._lines.pop(id(last), None)
        if last.count == 0:
            self.chunks.pop()
        pieces = cut(text, start=start)
        self.chunks.extend(Chunk(p, i == len(pieces) - 1) for i, p in enumerate(pieces))
        self.renumber()

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.chunks)

    def __len__(self) -> int:
        """Number of lines."""
        last = self.chunks[-1]
        return last.start + last.count

    @property
    def size(self) -> int:
        """Number of characters."""
        return sum(len(c.text) for c in self.chunks)

    def renumber(self) -> None:
        """Recompute each chunk's first line (after edits changed line counts)."""
        line = 0
        starts = []
        for chunk in self.chunks:
            chunk.start = line
            starts.append(line)
            line += chunk.count
        self._starts = starts

    # -- lines --------------------------------------------------------------------

    def chunk_index(self, line: int) -> int:
        """Index of the chunk holding document line `line` (clamped)."""
        index = bisect.bisect_right(self._starts, line) - 1
        return max(0, min(index, len(self.chunks) - 1))

    def locate(self, line: int) -> tuple[Chunk, int]:
        """(chunk, line within it) for document line `line`."""
        chunk = self.chunks[self.chunk_index(line)]
        return chunk, line - chunk.start

    def chunk_lines(self, chunk: Chunk) -> list[str]:
        return self._split(chunk)[0]

    def _split(self, chunk: Chunk) -> tuple[list[str], list[int] | None]:
        key = id(chunk)
        found = self._lines.get(key)
        if found is not None:
            self._lines.move_to_end(key)
            return found
        lines, eols = split_lines(chunk.text)
        if len(lines) > chunk.count:  # a chunk that ends with a terminator
            del lines[chunk.count :]
            if eols is not None:
                del eols[chunk.count :]
        found = (lines, eols)
        self._lines[key] = found
        if len(self._lines) > _LINES_CACHED:
            self._lines.popitem(last=False)
        return found

    def _forget(self, chunk: Chunk) -> None:
        self._lines.pop(id(chunk), None)

    def line(self, line: int) -> str:
        """The text of document line `line` (without terminator); "" past the end."""
        if line < 0 or line >= len(self):
            return ""
        chunk, local = self.locate(line)
        return self.chunk_lines(chunk)[local]

    def lines(self, first: int, stop: int) -> Iterator[tuple[int, str]]:
        """(line number, text) for lines first..stop-1 (clamped)."""
        stop = min(stop, len(self))
        line = max(first, 0)
        while line < stop:
            chunk, local = self.locate(line)
            texts = self.chunk_lines(chunk)
            end = min(chunk.count, local + stop - line)
            for i in range(local, end):
                yield chunk.start + i, texts[i]
            line = chunk.start + end

    def end_position(self) -> tuple[int, int]:
        """(line, index) just past the last character."""
        last = len(self) - 1
        return last, len(self.line(last))

    # -- editing ------------------------------------------------------------------

    def replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> Edit:
        """Replace the text between two (line, string index) positions."""
        (sl, sc), (el, ec) = sorted((start, end))
        sl = max(0, min(sl, len(self) - 1))
        el = max(0, min(el, len(self) - 1))
        first = self.chunk_index(sl)
        last = self.chunk_index(el)
        # A lone '\r' ending the previous chunk may join a '\n' inserted here.
        starts_chunk = sl == self.chunks[first].start and sc == 0
        if first > 0 and starts_chunk and self.chunks[first - 1].text.endswith("\r"):
            first -= 1
        for touched in self.chunks[first : last + 1]:
            self._prepare(touched)
        if last > first:
            self._merge(first, last)
        chunk = self.chunks[first]
        lines, eols = self._split(chunk)
        ls, le = sl - chunk.start, el - chunk.start
        sc = min(sc, len(lines[ls]))
        ec = min(ec, len(lines[le]))
        offsets = self._offsets(lines, eols, max(ls, le) + 1)
        begin = offsets[ls] + sc
        finish = offsets[le] + ec
        old_count = chunk.count
        is_last = chunk is self.chunks[-1]
        chunk.text = chunk.text[:begin] + text + chunk.text[finish:]
        chunk.count = count_breaks(chunk.text) + (1 if is_last else 0)
        self._forget(chunk)
        # Lines outside [ls-1, le+1] are untouched; a '\r'/'\n' join can only
        # reach one line beyond the range, so the changed range is widened by one.
        lo = max(ls - 1, 0) if ("\r" in text or "\r" in chunk.text) else ls
        hi = min(le + 1, old_count - 1) if ("\r" in text or "\r" in chunk.text) else le
        unchanged_after = old_count - hi - 1
        new_count = chunk.count - lo - unchanged_after
        self.renumber()
        return Edit(chunk, lo, hi - lo + 1, new_count)

    def _prepare(self, chunk: Chunk) -> None:
        if chunk.lazy and self.prepare is not None:
            self.prepare(chunk)

    @staticmethod
    def _offsets(lines: list[str], eols: list[int] | None, upto: int) -> list[int]:
        offsets = [0]
        pos = 0
        for i in range(min(upto, len(lines))):
            pos += len(lines[i]) + (1 if eols is None else eols[i])
            offsets.append(pos)
        return offsets

    def _merge(self, first: int, last: int) -> None:
        """Fold chunks first+1..last into chunk `first` (their infos and epochs too)."""
        target = self.chunks[first]
        for other in self.chunks[first + 1 : last + 1]:
            base = target.count
            for local, info in other.infos.items():
                if not isinstance(info, int):
                    info.chunk = target
                    info.local = local + base
                target.infos[local + base] = info
            target.epochs.extend(other.epochs)
            target.problems = None
            target.text += other.text
            target.count += other.count
            self._forget(other)
        del self.chunks[first + 1 : last + 1]
        self._forget(target)
        if first == len(self.chunks) - 1:
            target.count = count_breaks(target.text) + 1

    def rebalance(self, chunk: Chunk) -> None:
        """Cut `chunk` again if edits made it too large (call after the index caught up)."""
        if len(chunk.text) > CHUNK_LIMIT:
            self._cut(self.chunks.index(chunk))
            self.renumber()

    def _cut(self, index: int) -> None:
        """Cut an oversized chunk into pieces; its infos and epochs follow their lines."""
        chunk = self.chunks[index]
        pieces = cut(chunk.text)
        if len(pieces) == 1:
            return
        self._prepare(chunk)
        is_last = index == len(self.chunks) - 1
        news = [Chunk(p, is_last and i == len(pieces) - 1) for i, p in enumerate(pieces)]
        bounds = []
        line = 0
        for new in news:
            bounds.append(line)
            line += new.count
        for local, info in chunk.infos.items():
            k = bisect.bisect_right(bounds, local) - 1
            if not isinstance(info, int):
                info.chunk = news[k]
                info.local = local - bounds[k]
            news[k].infos[local - bounds[k]] = info
        for epoch in chunk.epochs:
            assert isinstance(epoch.start, LineInfo)  # an epoch in a chunk starts at a reset
            epoch.start.chunk.epochs.append(epoch)
        chunk.epochs = []
        news[0].entry = chunk.entry
        for before, after in itertools.pairwise(news):
            after.entry = before.epochs[-1] if before.epochs else before.entry
        self._forget(chunk)
        self.chunks[index : index + 1] = news
