"""What the server knows about each line of a log, kept up to date edit by edit.

For every line that holds markup the index keeps an *entry*: which kinds
of element are there, the first `bt` frame number, the multi-line element
still open after it, and its diagnostics. Plain lines cost nothing; a line
of plain frames that resolve (the bulk of a crash log) costs one int
(`flags | (frame + 1) << 16`); anything else gets a `LineInfo`.

The process layout is kept per *epoch*: the stretch of log from one
`{{{reset}}}` to the next. Each epoch replays its `module`/`mmap` elements
into a core `MarkupContext` and remembers where each mapping and module
was declared, so that "which mapping covers this address *here*" can be
answered for a line anywhere in the epoch without replaying (a mapping
declared after the line does not count, as in a one-pass filter).

An edit re-reads only the lines it touched, with the epoch in force there.
When it adds or removes contextual elements, the epochs around it are
replayed: from the reset that starts the epoch of the edit to the next
reset after it (the lines in between are re-read, since what covers their
addresses may have changed). Nothing before or after moves, because lines
are numbered within their chunk (see document.py).

Parsing and decoding are the core's (`stackmark.markup`); `scan.py` only
recognises the common well-formed shapes quickly and hands everything
else to the core.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import assert_never

from stackmark._native import load
from stackmark.markup.context import lookup_address
from stackmark.markup.diagnostics import Diagnostic, Severity
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    HexdictElement,
    MmapElement,
    ModuleElement,
    OtherElement,
    PcElement,
    ResetElement,
    SymbolElement,
    TypedElement,
    decode,
)
from stackmark.markup.parser import MarkupParser, ParsedLine, Pending
from stackmark.markup.syntax import MULTILINE_TAGS, Element, Field
from stackmark_lsp import scan
from stackmark_lsp.document import Chunk, Document, Edit, LineInfo
from stackmark_lsp.epochs import MASK64, Epoch

_native = load("_logindex")  # `_check_frames`' address scan, `_read_context`'s rows; or None

# Entry flags
F_CTX = 1 << 0  # a contextual element (reset, module, mmap)
F_RESET = 1 << 1
F_RESET_FIRST = 1 << 2  # the line's first element is a reset: an epoch starts cleanly here
F_BT = 1 << 3
F_PC = 1 << 4
F_DATA = 1 << 5
F_SYMBOL = 1 << 6
F_DUMPFILE = 1 << 7
F_HEXDICT = 1 << 8
F_OTHER = 1 << 9  # an element with a tag the spec does not define
F_BAD = 1 << 10  # an element with an error
F_SLOW = 1 << 11  # read by the core parser
F_CONT = 1 << 12  # a multi-line element was open when the line began
FLAG_BITS = 0xFFFF

_CONTEXT_TAGS = ("{{{reset", "{{{module", "{{{mmap")
NO_MMAP = "no mmap covers address"


Entry = LineInfo | int


def flags_of(entry: Entry) -> int:
    return entry & FLAG_BITS if isinstance(entry, int) else entry.flags


def frame_of(entry: Entry) -> int:
    """The first bt frame number of the line (-1: none)."""
    return (entry >> 16) - 1 if isinstance(entry, int) else entry.frame


def pending_of(entry: Entry | None) -> Pending | None:
    return entry.pending if isinstance(entry, LineInfo) else None


@dataclass(frozen=True, slots=True)
class LineElements:
    """A line re-read by the core, with document line numbers: each element and its decoding."""

    line: int
    text: str
    elements: tuple[tuple[Element, TypedElement], ...]


def no_mmap(field: Field) -> Diagnostic:
    """The diagnostic for an address no mmap covers (llvm's wording), on the address field."""
    return Diagnostic(Severity.ERROR, NO_MMAP, field.line, field.start, field.end, "no-mmap")


class Index:
    """Line entries and epochs of one document (see the module docstring)."""

    def __init__(self, document: Document, *, read: bool = True) -> None:
        self.document = document
        self.parser = MarkupParser(MULTILINE_TAGS)
        self._live: Epoch = Epoch(None, 0)
        self._reread: OrderedDict[int, LineElements] = OrderedDict()
        self.generation = 0  # bumped whenever epochs are replayed (caches of them expire)
        # How many module elements declare each build ID (kept as epochs come and go).
        self.build_ids: Counter[str] = Counter()
        self._added: list[Epoch] = []
        self._dropped: list[Epoch] = []
        document.prepare = self._complete
        if read:
            self.rebuild()

    # -- building -------------------------------------------------------------------

    def rebuild(self) -> None:
        """Read the whole document."""
        for chunk in self.document.chunks:
            chunk.infos = {}
            chunk.problems = None
            chunk.epochs = []
            chunk.entry = None
        self._reread.clear()
        self.build_ids.clear()
        self._dropped.clear()
        self._pass(0, None, Epoch(None, 0))

    def opens_cleanly(self, line: int) -> bool:
        """True when no multi-line element is open where `line` begins."""
        return self._pending_before(line) is None

    def read_on(self, line: int) -> None:
        """Read the document from `line` on, the lines before it being read and the
        document having grown after them (`Document.extend`: see split.py)."""
        chunk, local = self.document.locate(line)
        if local == 0:
            chunk.entry = self._live
        self._pass(line, None, self._live)

    def _settle(self) -> None:
        """Count the modules of the epochs a pass made, uncount those it dropped."""
        for epoch in self._dropped:
            for _, _, build_id in epoch.modules.values():
                self.build_ids[build_id] -= 1
                if self.build_ids[build_id] <= 0:
                    del self.build_ids[build_id]
        for epoch in self._added:
            for _, _, build_id in epoch.modules.values():
                self.build_ids[build_id] += 1
        self._dropped.clear()
        self._added.clear()

    def edit(self, edit: Edit) -> None:
        """Catch up with an edit of the document (`Document.replace`)."""
        self._reread.clear()
        chunk, first, old_count = edit.chunk, edit.first, edit.old_count
        delta = edit.new_count - old_count
        removed: list[tuple[int, Entry]] = []
        kept: dict[int, Entry] = {}
        for local, entry in chunk.infos.items():
            if local < first:
                kept[local] = entry
            elif local < first + old_count:
                removed.append((local, entry))
            else:
                if isinstance(entry, LineInfo):
                    entry.local = local + delta
                kept[local + delta] = entry
        chunk.infos = kept
        chunk.problems = None
        gone = {id(entry) for _, entry in removed}
        self._dropped.extend(e for e in chunk.epochs if id(e.start) in gone)
        chunk.epochs = [e for e in chunk.epochs if id(e.start) not in gone]
        line = chunk.start + first
        old_tail = pending_of(next((e for k, e in removed if k == first + old_count - 1), None))
        context_changed = any(flags_of(e) & F_CTX for _, e in removed) or any(
            tag in text
            for _, text in self.document.lines(line, line + edit.new_count)
            for tag in _CONTEXT_TAGS
        )
        if context_changed:
            self._replay_around(line, line + edit.new_count)
        else:
            self._reread_lines(line, line + edit.new_count, old_tail)
        self._settle()
        self.document.rebalance(chunk)

    def _replay_around(self, first: int, stop: int) -> None:
        """Replay from the clean reset before `first` to the first clean reset after `stop`."""
        start_line, epoch = self._clean_start_before(first)
        self._pass(start_line, max(stop - 1, first), epoch)

    def _clean_start_before(self, line: int) -> tuple[int, Epoch]:
        """(line, epoch to start from): the last line before `line` that begins with a reset
        (and is not inside a multi-line element), or the top of the document."""
        doc = self.document
        index = doc.chunk_index(line)
        while index >= 0:
            chunk = doc.chunks[index]
            for epoch in reversed(chunk.epochs):
                start = epoch.start
                if (
                    start is not None
                    and start.line < line
                    and start.flags & F_RESET_FIRST
                    and not start.flags & F_CONT
                ):
                    return start.line, epoch
            index -= 1
        return 0, Epoch(None, 0)

    def _reread_lines(self, first: int, stop: int, old_tail: Pending | None) -> None:
        """Re-read lines whose context did not change (no contextual element came or went)."""
        doc = self.document
        pending = self._pending_before(first)
        line = first
        total = len(doc)
        while line < total:
            chunk, local = doc.locate(line)
            old = chunk.infos.get(local)
            if line >= stop:
                if pending == old_tail:
                    return
                if old is not None and flags_of(old) & F_CTX:
                    # An open element now swallows (or frees) a contextual line: replay.
                    self._replay_around(first, line + 1)
                    return
                old_tail = pending_of(old)
            text = doc.chunk_lines(chunk)[local]
            info = self._read(chunk, local, text, pending, live=False)
            chunk.problems = None
            if info is None:
                chunk.infos.pop(local, None)
                pending = None
            else:
                chunk.infos[local] = info
                pending = info.pending
            line += 1

    def _pending_before(self, line: int) -> Pending | None:
        """The element left open by the line before `line` (lines inside a multi-line
        element always have an entry, so a lazy chunk need not be completed)."""
        if line <= 0:
            return None
        chunk, local = self.document.locate(line - 1)
        return pending_of(chunk.infos.get(local))

    def _pass(self, start_line: int, stop_after: int | None, epoch: Epoch) -> None:
        """Read lines from `start_line` on, replaying contextual elements from `epoch`; after
        `stop_after`, stop at the first line that starts cleanly with a reset (None: read on
        to the end)."""
        doc = self.document
        self.generation += 1
        self._live = epoch
        index = doc.chunk_index(start_line)
        local = start_line - doc.chunks[index].start
        pending = self._pending_before(start_line)
        if start_line == 0 and epoch.start is None:  # a new top epoch (before any reset)
            top = doc.chunks[0].entry
            if top is not None and top is not epoch:
                self._dropped.append(top)
            self._added.append(epoch)
            doc.chunks[0].entry = epoch
        while index < len(doc.chunks):
            chunk = doc.chunks[index]
            if local == 0 and chunk.start != start_line:
                chunk.entry = self._live
            stopped, pending = self._pass_chunk(chunk, local, stop_after, pending)
            if stopped:
                break
            index += 1
            local = 0
        self._settle()

    def _pass_chunk(
        self, chunk: Chunk, local: int, stop_after: int | None, pending: Pending | None
    ) -> tuple[bool, Pending | None]:
        """Read one chunk from line `local`; (stopped, pending element after the last line)."""
        old = chunk.infos
        old_epochs = chunk.epochs
        infos = {k: v for k, v in old.items() if k < local} if local else {}
        chunk.epochs = [e for e in old_epochs if e.start is not None and e.start.local < local]
        stop_line = None if stop_after is None else stop_after - chunk.start
        if "\r" in chunk.text:
            stop_at, pending = self._pass_split(chunk, local, stop_line, old, infos, pending)
        else:
            stop_at, pending = self._pass_text(chunk, local, stop_line, old, infos, pending)
            chunk.lazy = True
        chunk.problems = None
        kept = {id(e) for e in chunk.epochs}  # the new ones, and those before `local`
        if stop_at >= 0:
            infos.update((k, v) for k, v in old.items() if k >= stop_at)
            after = [e for e in old_epochs if e.start is not None and e.start.local >= stop_at]
            chunk.epochs.extend(after)
            kept.update(id(e) for e in after)
        self._dropped.extend(e for e in old_epochs if id(e) not in kept)
        chunk.infos = infos
        return (True, None) if stop_at >= 0 else (False, pending)

    @staticmethod
    def _stops_at(line: int, stop_line: int | None, old: dict[int, Entry]) -> bool:
        """After `stop_line`, a line that began cleanly with a reset ends the pass."""
        if stop_line is None or line <= stop_line:
            return False
        entry = old.get(line)
        if entry is None:
            return False
        flags = flags_of(entry)
        return bool(flags & F_RESET_FIRST) and not flags & F_CONT

    def _pass_split(
        self,
        chunk: Chunk,
        local: int,
        stop_line: int | None,
        old: dict[int, Entry],
        infos: dict[int, Entry],
        pending: Pending | None,
    ) -> tuple[int, Pending | None]:
        """The pass over a chunk with '\\r' terminators: line by line."""
        texts = self.document.chunk_lines(chunk)
        for line in range(local, chunk.count):
            text = texts[line]
            if pending is None:
                if "{{{" not in text:
                    continue
                if self._stops_at(line, stop_line, old):
                    return line, None
            info = self._read(chunk, line, text, pending, live=True)
            pending = info.pending if info is not None else None
            if info is not None:
                infos[line] = info
        return -1, pending

    def _pass_text(
        self,
        chunk: Chunk,
        local: int,
        stop_line: int | None,
        old: dict[int, Entry],
        infos: dict[int, Entry],
        pending: Pending | None,
    ) -> tuple[int, Pending | None]:
        """The pass over a chunk with '\\n' terminators only.

        This is the loop a large log spends its opening in, so it works on the chunk's
        text, not line by line: a regular expression finds the elements that are not
        plain frames; the stretches of lines between them hold plain `bt`/`pc`/`data`
        frames only, checked in bulk against the mappings in force (`_check_frames`),
        and their entries are left out (the chunk is *lazy*; `_complete` fills them in
        on first use). A run of lines that each hold one contextual element is read with
        one more regular expression (`_read_context`); any other line goes through
        `_read` (the scanner, else the core).
        """
        text = chunk.text
        size = len(text)
        count = chunk.count
        pos = 0
        for _ in range(local):
            pos = text.index("\n", pos) + 1
        line = local
        pos, line = self._read_open(chunk, text, pos, line, infos, pending)
        context_row = scan.CONTEXT_ROW.match
        search = scan.SPECIAL.search
        while (special := search(text, pos)) is not None:
            at = special.start()
            start = text.rfind("\n", pos, at) + 1 or pos
            if start > pos:
                self._check_frames(chunk, text, pos, start, line, infos)
                line += text.count("\n", pos, start)
            if context_row(text, start) is not None:
                pos, line = self._read_context(chunk, text, start, line, infos, stop_line, old)
                if pos < 0:
                    return line, None
                continue
            if stop_line is not None and self._stops_at(line, stop_line, old):
                return line, None
            end = text.find("\n", at)
            if end < 0:
                end = size
            pos = end + 1
            found = self._read(chunk, line, text[start:end], None, live=True)
            line += 1
            if found is not None:
                infos[line - 1] = found
                pos, line = self._read_open(chunk, text, pos, line, infos, found.pending)
        if pos < size:
            self._check_frames(chunk, text, pos, size, line, infos)
        return -1, pending_of(infos.get(count - 1))  # an element still open at the end

    def _read_context(
        self,
        chunk: Chunk,
        text: str,
        pos: int,
        line: int,
        infos: dict[int, Entry],
        stop_line: int | None,
        old: dict[int, Entry],
    ) -> tuple[int, int]:
        """Read the run of contextual lines from `pos` (line `line`), one `scan.CONTEXT_ROW`
        each, as `scan.context_rows` reads them (in C when built): the records take each
        element the core's rules accept; one they refuse is read again by `_read`, which
        asks the core for the error. (position and line after the run), or (-1, the line
        the pass stops at)."""
        rows = _native.context_rows(text, pos) if _native is not None else None
        end, rows = rows if rows is not None else scan.context_rows(text, pos)
        epoch = self._live
        checking = stop_line is not None
        for row in rows:
            if checking and self._stops_at(line, stop_line, old):
                return -1, line
            info = LineInfo(chunk, line)
            match row:
                case (column,):
                    epoch = self._new_epoch(info, column)
                    info.flags = F_CTX | F_RESET | F_RESET_FIRST
                    accepted = True
                case (column, module_id, name, build_id):
                    info.flags = F_CTX
                    accepted = epoch.declare(module_id, name, build_id, (info, column))
                case (column, start, size, module_id, mode, relative):
                    info.flags = F_CTX
                    accepted = epoch.map(start, size, module_id, mode, relative, (info, column))
            if accepted:
                infos[line] = info
            else:
                refused = self._read(
                    chunk, line, self.document.chunk_lines(chunk)[line], None, live=True
                )
                assert refused is not None
                infos[line] = refused
            line += 1
        return end, line

    def _check_frames(
        self, chunk: Chunk, text: str, begin: int, end: int, line: int, infos: dict[int, Entry]
    ) -> None:
        """Check the plain frames of `text[begin:end]` (whole lines, the first being line
        `line`) against the mappings in force, all at once; when an address is not well
        inside a mapping, the lines are read one by one (those with a frame no mapping
        covers get an entry and a diagnostic).

        An address strictly inside a run of mapped addresses is mapped whether it is
        looked up as written or one below (llvm's -1 table), so the bulk test needs no
        frame's type.
        """
        bounds = self._live.bounds()
        span = None
        if _native is not None and len(bounds) == 2:  # one run of mapped addresses (usual)
            span = _native.frame_span(text, begin, end)  # (count, lowest, highest) or None
        if span is not None:
            count, lowest, highest = span
            if not count or (bounds[0] < lowest and highest < bounds[1]):
                return
        else:
            found = scan.FRAME_ADDRESS.findall(text, begin, end)
            if not found:
                return
            addresses = list(map(int, found, repeat(16, len(found))))
            if len(bounds) == 2:
                if bounds[0] < min(addresses) and max(addresses) < bounds[1]:
                    return
            elif all(bisect_left(bounds, a) & 1 and bisect_right(bounds, a) & 1 for a in addresses):
                return
        pos = begin
        while pos < end:
            stop = text.find("\n", pos, end)
            if stop < 0:
                stop = end
            if text.find("{{{", pos, stop) >= 0:
                read = self._read(chunk, line, text[pos:stop], None, live=True)
                if read is not None and read.diags:
                    infos[line] = read
            pos = stop + 1
            line += 1

    def _read_open(
        self,
        chunk: Chunk,
        text: str,
        pos: int,
        line: int,
        infos: dict[int, Entry],
        pending: Pending | None,
    ) -> tuple[int, int]:
        """Read the lines of a multi-line element still open at `line` (which starts at
        `pos` in the chunk's text), one by one with the core, until it closes (or the
        chunk ends); (position, line) of the first line after them."""
        count = chunk.count
        while pending is not None and line < count:
            stop = text.find("\n", pos)
            if stop < 0:
                stop = len(text)
            info = self._read(chunk, line, text[pos:stop], pending, live=True)
            pending = info.pending if info is not None else None
            if info is not None:
                infos[line] = info
            pos = stop + 1
            line += 1
        return pos, line

    def _complete(self, chunk: Chunk) -> None:
        """Fill in the entries a lazy chunk left out: its plain frame lines, which the pass
        found mapped (`_check_frames`), so they carry no diagnostic."""
        chunk.lazy = False
        infos = chunk.infos
        for local, text in enumerate(self.document.chunk_lines(chunk)):
            if "{{{" not in text or local in infos:
                continue
            scanned = scan.scan_line(text)
            if not scanned:
                continue
            flags, frame = 0, -1
            for m in scanned:
                kind = m.lastindex
                if kind == scan.BT:
                    flags |= F_BT
                    if frame < 0:
                        frame = int(m[2])
                elif kind == scan.PC:
                    flags |= F_PC
                elif kind == scan.DATA:
                    flags |= F_DATA
                else:
                    raise AssertionError(f"line {chunk.start + local} was left out unread")
            if len(scanned) == 1:
                infos[local] = flags | (frame + 1) << 16
            else:
                info = LineInfo(chunk, local)
                info.flags, info.frame = flags, frame
                infos[local] = info

    def complete(self, chunks: int) -> bool:
        """Fill in the entries of up to `chunks` lazy chunks; False when none is left."""
        for chunk in self.document.chunks:
            if chunk.lazy:
                self._complete(chunk)
                chunks -= 1
                if chunks <= 0:
                    break
        return any(chunk.lazy for chunk in self.document.chunks)

    # -- reading one line ---------------------------------------------------------

    def _read(
        self, chunk: Chunk, local: int, text: str, pending: Pending | None, *, live: bool
    ) -> LineInfo | None:
        """Read one line: parse, replay contextual elements (`live`) or check addresses
        against the epoch in force (not `live`); None for a line with nothing to keep."""
        if pending is None:
            scanned = scan.scan_line(text)
            if scanned is not None:
                if not scanned:
                    return None
                info = LineInfo(chunk, local)
                self._read_scanned(info, scanned, live, 0)
                return info
        info = LineInfo(chunk, local)
        self._read_parsed(info, text, pending, live)
        if not info.flags & ~F_SLOW and not info.diags and info.pending is None:
            return None
        return info

    def _new_epoch(self, info: LineInfo, column: int) -> Epoch:
        epoch = Epoch(info, column)
        info.chunk.epochs.append(epoch)
        self._added.append(epoch)
        self._live = epoch
        return epoch

    def _read_scanned(
        self, info: LineInfo, scanned: list[scan.Scanned], live: bool, base: int
    ) -> None:
        """Read a line the scanner matched; `base` is where the line starts in the
        matched text (columns are match positions minus `base`)."""
        flags = 0
        diags: list[Diagnostic] | None = None
        epoch = self._live if live else self.epoch_at(info.chunk.start + info.local, 0)
        for m in scanned:
            kind = m.lastindex
            if kind == scan.BT:
                flags |= F_BT
                if info.frame < 0:
                    info.frame = int(m.group(2))
                address = int(m.group(3), 16)
                if m.group(4) != "pc":  # llvm's -1 table (see scan.lookup_address)
                    address = (address - 1) & MASK64
            elif kind == scan.PC:
                flags |= F_PC
                address = int(m.group(6), 16)
                if m.group(7) == "ra":
                    address = (address - 1) & MASK64
            elif kind == scan.DATA:
                flags |= F_DATA
                address = int(m.group(9), 16)
            else:
                column = m.start() - base
                if kind == scan.MMAP:
                    flags |= F_CTX
                    if live and not self._mmap(epoch, info, m, column):
                        diags = [*(diags or ()), self._core_error(info, column)]
                elif kind == scan.MODULE:
                    flags |= F_CTX
                    if live and not self._module(epoch, info, m, column):
                        diags = [*(diags or ()), self._core_error(info, column)]
                elif kind == scan.RESET:
                    flags |= F_CTX | F_RESET | (F_RESET_FIRST if m is scanned[0] else 0)
                    if live:
                        epoch = self._new_epoch(info, column)
                elif kind == scan.SYMBOL:
                    flags |= F_SYMBOL
                else:
                    flags |= F_DUMPFILE
                continue
            if live:
                found = epoch.covering(address) >= 0
            else:
                here = (info.chunk.start + info.local, m.start() - base)
                found = epoch.mapping_at(address, here) is not None
            if not found:
                field_start, field_end = m.span(scan.ADDRESS_GROUP[kind])
                diag = Diagnostic(
                    Severity.ERROR, NO_MMAP, 0, field_start - base, field_end - base, "no-mmap"
                )
                diags = [*(diags or ()), diag]
        info.flags = flags
        if diags:
            info.diags = tuple(diags)

    @staticmethod
    def _module(epoch: Epoch, info: LineInfo, m: scan.Scanned, column: int) -> bool:
        """Declare a scanned module; False when the core refuses it (a duplicate ID)."""
        module_id = scan.parse_id(m.group(17))
        return epoch.declare(module_id, m.group(18), scan.build_id(m.group(19)), (info, column))

    @staticmethod
    def _mmap(epoch: Epoch, info: LineInfo, m: scan.Scanned, column: int) -> bool:
        """Map a scanned segment; False when the core refuses it (unknown module, overlap)."""
        return epoch.map(
            int(m.group(11), 16),
            scan.parse_id(m.group(12)),
            scan.parse_id(m.group(13)),
            m.group(14).lower(),
            int(m.group(15), 16),
            (info, column),
        )

    def _core_error(self, info: LineInfo, column: int) -> Diagnostic:
        """Replay the contextual element at `column` with the core to get its error."""
        text = self.document.chunk_lines(info.chunk)[info.local]
        for element in self.parser.parse(text, 0).elements:
            if element.start == column:
                typed = decode(element)
                context = self._live.context
                result: object
                match typed:
                    case ModuleElement():
                        result = context.declare_module(typed)
                    case MmapElement():
                        result = context.map_segment(typed)
                    case _:
                        raise AssertionError(f"not a contextual element: {typed!r}")
                assert isinstance(result, Diagnostic), "the scanner and the core disagree"
                return result
        raise AssertionError(f"no element at column {column}")

    def _read_parsed(self, info: LineInfo, text: str, pending: Pending | None, live: bool) -> None:
        rel = pending.line + len(pending.pieces) if pending is not None else 0
        parsed = self.parser.parse(text, rel, pending)
        info.rel = rel
        info.pending = parsed.pending
        flags = F_SLOW | (F_CONT if pending is not None else 0)
        diags: list[Diagnostic] = []
        epoch = self._live if live else self.epoch_at(info.chunk.start + info.local, 0)
        first = True
        for element in parsed.elements:
            typed = decode(element)
            diags.extend(typed.diagnostics)
            if not typed.ok:
                flags |= F_BAD
                first = False
                continue
            placed: PcElement | BtElement | DataElement | None = None
            match typed:
                case ResetElement():
                    flags |= F_CTX | F_RESET | (F_RESET_FIRST if first else 0)
                    if live:
                        epoch = self._new_epoch(info, element.start)
                case ModuleElement():
                    flags |= F_CTX
                    where = (info, element.start)
                    if live and not epoch.declare(
                        typed.module_id, typed.name, typed.build_id, where
                    ):
                        refused = epoch.context.declare_module(typed)
                        assert isinstance(refused, Diagnostic), "the index and the core disagree"
                        diags.append(refused)
                case MmapElement():
                    flags |= F_CTX
                    if live and (
                        typed.module_relative_error is not None
                        or not epoch.map(
                            typed.start,
                            typed.size,
                            typed.module_id,
                            typed.mode,
                            typed.module_relative,
                            (info, element.start),
                        )
                    ):
                        unmapped = epoch.context.map_segment(typed)
                        assert isinstance(unmapped, Diagnostic), "the index and the core disagree"
                        diags.append(unmapped)
                case BtElement():
                    flags |= F_BT
                    if info.frame < 0:
                        info.frame = typed.frame
                    placed, field = typed, element.fields[1]
                case PcElement():
                    flags |= F_PC
                    placed, field = typed, element.fields[0]
                case DataElement():
                    flags |= F_DATA
                    placed, field = typed, element.fields[0]
                case SymbolElement():
                    flags |= F_SYMBOL
                case HexdictElement():
                    flags |= F_HEXDICT
                case DumpfileElement():
                    flags |= F_DUMPFILE
                case OtherElement():
                    flags |= F_OTHER
                case _:
                    assert_never(typed)
            if placed is not None:
                address = lookup_address(placed)
                here = None if live else (info.chunk.start + info.local, element.start)
                if epoch.mapping_at(address, here) is None:
                    diags.append(no_mmap(field))
            first = False
        info.flags = flags
        if diags:
            info.diags = tuple(diags)

    # -- questions ------------------------------------------------------------------

    def entry(self, line: int) -> Entry | None:
        """What is known about document line `line` (None: a plain line)."""
        if line < 0 or line >= len(self.document):
            return None
        chunk, local = self.document.locate(line)
        if chunk.lazy:
            self._complete(chunk)
        return chunk.infos.get(local)

    def flags(self, line: int) -> int:
        entry = self.entry(line)
        return flags_of(entry) if entry is not None else 0

    def epoch_at(self, line: int, column: int) -> Epoch:
        """The epoch in force at (line, column): the last reset at or before it."""
        doc = self.document
        index = doc.chunk_index(line)
        chunk = doc.chunks[index]
        local = line - chunk.start
        for epoch in reversed(chunk.epochs):
            start = epoch.start
            if start is not None and (start.local, epoch.column) <= (local, column):
                return epoch
        while index > 0 and chunk.entry is None:  # only before the first pass reached it
            index -= 1
            chunk = doc.chunks[index]
        return chunk.entry if chunk.entry is not None else Epoch(None, 0)

    def epochs(self) -> Iterator[Epoch]:
        """Every epoch in document order (the top one first)."""
        first = self.document.chunks[0].entry
        if first is not None:
            yield first
        for chunk in self.document.chunks:
            yield from chunk.epochs

    def entries(self, first: int = 0, stop: int | None = None) -> Iterator[tuple[int, Entry]]:
        """(document line, entry) for the lines with markup among first..stop-1, in order."""
        doc = self.document
        stop = len(doc) if stop is None else min(stop, len(doc))
        if first >= stop:
            return
        index = doc.chunk_index(first)
        while index < len(doc.chunks):
            chunk = doc.chunks[index]
            if chunk.start >= stop:
                return
            low, high = first - chunk.start, stop - chunk.start
            base = chunk.start
            if chunk.lazy:
                self._complete(chunk)
            infos = chunk.infos
            for local in sorted(infos):
                if low <= local < high:
                    yield base + local, infos[local]
            index += 1

    def diagnostics(self) -> Iterator[tuple[int, Diagnostic]]:
        """(document line, diagnostic) for every problem the markup itself has."""
        for chunk in self.document.chunks:
            problems = chunk.problems
            if problems is None:
                problems = chunk.problems = [
                    entry
                    for entry in chunk.infos.values()
                    if isinstance(entry, LineInfo) and entry.diags
                ]
            for info in problems:
                base = chunk.start + info.local - info.rel
                for diag in info.diags:
                    yield base + diag.line, diag

    def elements(self, line: int) -> LineElements:
        """The elements of a line, re-read by the core with document line numbers.

        A multi-line element is listed on the line where it closes, as the
        parser reports it; its fields carry their own lines.
        """
        found = self._reread.get(line)
        if found is not None:
            self._reread.move_to_end(line)
            return found
        doc = self.document
        first = line
        while first > 0 and self.flags(first) & F_CONT:
            first -= 1
        pending: Pending | None = None
        parsed: ParsedLine | None = None
        for number, text in doc.lines(first, line + 1):
            parsed = self.parser.parse(text, number, pending)
            pending = parsed.pending
        pairs = tuple((e, decode(e)) for e in parsed.elements) if parsed is not None else ()
        found = LineElements(line, doc.line(line), pairs)
        self._reread[line] = found
        if len(self._reread) > 512:
            self._reread.popitem(last=False)
        return found

    def element_at(self, line: int, column: int) -> tuple[Element, TypedElement] | None:
        """The element under (line, column), including a multi-line one that covers it."""
        candidates: list[int] = [line]
        if pending_of(self.entry(line)) is not None:
            # inside an open multi-line element: it is reported where it closes
            probe = line + 1
            while probe < len(self.document):
                candidates.append(probe)
                if pending_of(self.entry(probe)) is None:
                    break
                probe += 1
        for number in candidates:
            for element, typed in self.elements(number).elements:
                if _covers(element, line, column):
                    return element, typed
        return None


def _covers(element: Element, line: int, column: int) -> bool:
    start = (element.line, element.start)
    end = (element.end_line, element.end)
    return start <= (line, column) < end
