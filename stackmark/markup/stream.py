"""Filtering logs with symbolizer markup: bytes in, the symbolized log out.

    settings = FilterSettings(json=False, color="never")
    status = filter_streams([("app.log", stream)], out, err_write, settings, symbolizer, naming)

What `stackmark symbolize` prints for a log, shared by every front end
that must print the same (the CLI, the symbolication service's
`/symbolize`, batch and Dask workers). Every input line comes out, in
order, with its own line ending; bytes that are not UTF-8 pass through
unchanged. Lines without markup are copied as bytes, never decoded
(`_pump`), which is most of a log.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, BinaryIO, Protocol, cast

from stackmark.errors import StackmarkError
from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.report import DiagnosticPrinter, stream_wants_colour
from stackmark.markup.resolve import Resolver
from stackmark.plain import FrozenRecord

if TYPE_CHECKING:
    from stackmark.markup.records import Record
    from stackmark.symbols.api import SymbolizerAPI

EXIT_OK, EXIT_ELEMENT_ERRORS, EXIT_USAGE, EXIT_UNRESOLVED = 0, 1, 2, 3

_SEVERITY = {EXIT_OK: 0, EXIT_ELEMENT_ERRORS: 1, EXIT_UNRESOLVED: 2, EXIT_USAGE: 3}


def worst_status(statuses: Iterable[int]) -> int:
    """The status that says most: usage or unreadable input, then unresolved
    frames (asked for), then element errors, then success."""
    return max(statuses, key=lambda status: _SEVERITY.get(status, 4), default=EXIT_OK)


UNRESOLVED_HINT = (
    "give the module's file with --obj FILE, or a directory holding it with --symbol-path DIR"
)
"""What to do when a module's symbols are not found (said once per module)."""

COLOR_CHOICES = ("always", "never", "auto")


class FilterSettings(FrozenRecord):
    """How a log is printed: `json` records instead of the log; `color` always,
    never or auto (when the output is a terminal); `llvm19` reproduces
    llvm-symbolizer 19's --filter-markup output exactly; `fail_on_unresolved`
    makes a frame left without a name exit status 3 (EXIT_UNRESOLVED);
    `unresolved_hint` is added to the warning about a module whose symbols are
    not found (what the front end's user can do about it)."""

    __slots__ = _fields = ("json", "color", "llvm19", "fail_on_unresolved", "unresolved_hint")
    json: bool
    color: str
    llvm19: bool
    fail_on_unresolved: bool
    unresolved_hint: str | None

    def __init__(
        self,
        json: bool = False,
        color: str = "auto",
        llvm19: bool = False,
        fail_on_unresolved: bool = False,
        unresolved_hint: str | None = None,
    ) -> None:
        object.__setattr__(self, "json", json)
        object.__setattr__(self, "color", color)
        object.__setattr__(self, "llvm19", llvm19)
        object.__setattr__(self, "fail_on_unresolved", fail_on_unresolved)
        object.__setattr__(self, "unresolved_hint", unresolved_hint)


def make_naming(options: NameOptions) -> Naming:
    """The naming `options` describe, with stackmark's demanglers."""
    from stackmark.demangle import demangle, demangle_symbol

    return Naming(options, demangle_name=demangle_symbol, demangle_symbol=demangle)


class LineFilter(Protocol):
    @property
    def errors(self) -> int: ...

    @property
    def unresolved(self) -> int: ...

    @property
    def passes_plain_lines(self) -> bool: ...

    def skip_plain_lines(self, count: int) -> None: ...

    def feed_bt_lines(self, data: bytes, start: int, end: int, out: list[bytes]) -> int: ...

    def feed(self, text: str, eol: str) -> str: ...

    def finish(self) -> str: ...


RESOLVER_ANSWERS = 4096
"""Frames the Resolver keeps per address: the bt fast path keeps their text."""

READ_SIZE = 1 << 18
"""Bytes asked of the input at a time (less when less is there: a pipe that
delivers line by line is still answered line by line)."""


def _lines(stream: BinaryIO) -> Iterator[tuple[str, str]]:
    """(text, line ending) for each line; invalid UTF-8 survives via surrogateescape."""
    for raw in stream:
        if raw.endswith(b"\r\n"):
            body, eol = raw[:-2], "\r\n"
        elif raw.endswith(b"\n"):
            body, eol = raw[:-1], "\n"
        else:
            body, eol = raw, ""
        yield body.decode("utf-8", "surrogateescape"), eol


class OutputError(StackmarkError):
    """Writing the filtered log failed (a full disk, a closed file): said as such,
    not blamed on the input being read."""


class _Output:
    """`out`, with a failed write or flush raised as an OutputError (an OSError
    from `out` would look like the input's)."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out

    def write(self, data: bytes) -> int:
        try:
            return self._out.write(data)
        except BrokenPipeError:
            raise  # the reader went away: main() ends quietly
        except OSError as exc:
            raise OutputError(f"writing the output: {exc.strerror or exc}") from None

    def flush(self) -> None:
        try:
            self._out.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"writing the output: {exc.strerror or exc}") from None

    def isatty(self) -> bool:
        return self._out.isatty()


def filter_streams(
    inputs: Iterable[tuple[str, BinaryIO]],
    out: BinaryIO,
    err_write: Callable[[str], None],
    settings: FilterSettings,
    symbolizer: SymbolizerAPI,
    naming: Naming,
    *,
    first_line: int = 0,
) -> int:
    """Filter each input (a separate log: the context starts empty) to `out`;
    diagnostics go to `err_write`. Returns the exit status `stackmark symbolize`
    gives (EXIT_OK, EXIT_ELEMENT_ERRORS, EXIT_UNRESOLVED or EXIT_USAGE).

    `first_line` is the 0-based line number, in the whole log, of each input's
    first line: a chunk of a log (`stackmark.markup.chunks`) is filtered with its
    diagnostics and records naming the lines a run over the whole log names."""
    compat = settings.llvm19
    colour = not settings.json and (
        settings.color == "always"
        or (settings.color == "auto" and _is_tty(out) and stream_wants_colour(1))
    )
    err_colour = stream_wants_colour(2)
    flush_each_line = _is_tty(out)
    out = cast("BinaryIO", _Output(out))
    resolver = Resolver(symbolizer, cache_size=RESOLVER_ANSWERS)
    status = EXIT_OK
    for source, stream in inputs:
        printer = DiagnosticPrinter(err_write, colour=err_colour, llvm_style=compat, source=source)
        records: list[Record] | None = [] if settings.json else None
        line_filter: LineFilter
        if compat:
            from stackmark.markup.llvm19 import Llvm19Filter

            line_filter = Llvm19Filter(
                resolver, naming, printer, colour=colour, first_line=first_line
            )
        else:
            from stackmark.markup.filter import StackmarkFilter

            line_filter = StackmarkFilter(
                resolver,
                naming,
                printer,
                colour=colour,
                records=records,
                unresolved_hint=settings.unresolved_hint,
                first_line=first_line,
            )
        try:
            if records is not None:
                for text, eol in _lines(stream):
                    line_filter.feed(text, eol)
                    _write_records(out, records)
            else:
                _pump(line_filter, stream, out, flush_each_line)
        except BrokenPipeError:
            raise  # the reader went away: main() ends quietly
        except OSError as exc:
            err_write(f"stackmark symbolize: error: {source}: {exc.strerror or exc}\n")
            status = EXIT_USAGE
        tail = line_filter.finish()
        if records is not None:
            _write_records(out, records)
        else:
            out.write(tail.encode("utf-8", "surrogateescape"))
        if line_filter.errors and not compat:
            status = worst_status((status, EXIT_ELEMENT_ERRORS))
        if line_filter.unresolved and settings.fail_on_unresolved:
            status = worst_status((status, EXIT_UNRESOLVED))
    out.flush()
    return status


def _pump(line_filter: LineFilter, stream: BinaryIO, out: BinaryIO, flush: bool) -> None:
    """Filter `stream` to `out` a block at a time.

    Lines without `{{{` or ESC (most of a log) are copied as bytes, never
    decoded, whenever the filter says it would print them unchanged; every
    other line is decoded and fed to the filter. Output is written once
    per block read (and flushed then when `flush`)."""
    read = getattr(stream, "read1", None) or stream.read
    held: list[bytes] = []  # the start of a line not ended yet
    while True:
        chunk = read(READ_SIZE)
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            held.append(chunk)
            continue
        if held:
            held.append(chunk)
            chunk = b"".join(held)
            cut = chunk.rfind(b"\n") + 1
            held = []
        if cut < len(chunk):
            held.append(chunk[cut:])
        out.write(_filter_block(line_filter, chunk, cut))
        if flush:
            out.flush()
    if held:
        last = b"".join(held)  # the last line, without a line feed
        produced = line_filter.feed(last.decode("utf-8", "surrogateescape"), "")
        out.write(produced.encode("utf-8", "surrogateescape"))


def _filter_block(line_filter: LineFilter, data: bytes, end: int) -> bytes:
    """The output for `data[:end]`, whole lines each ending in a line feed."""
    parts: list[bytes] = []
    find = data.find
    escape = -1  # where the next ESC is (end: none), found once for many lines
    pos = 0
    produced: list[str] = []  # decoded lines' output, not yet encoded into `parts`

    def flush() -> None:
        parts.append("".join(produced).encode("utf-8", "surrogateescape"))
        produced.clear()

    while pos < end:
        if line_filter.passes_plain_lines:
            if escape < pos:
                escape = find(b"\x1b", pos, end)
                if escape < 0:
                    escape = end
            brace = find(b"{{{", pos, escape)
            found = escape if brace < 0 else brace
            line_start = end if found >= end else data.rfind(b"\n", pos, found) + 1
            if line_start > pos:
                if produced:
                    flush()
                line_filter.skip_plain_lines(data.count(b"\n", pos, line_start))
                parts.append(data[pos:line_start])
                pos = line_start
                if pos >= end:
                    break
        # A run of lone `bt` lines (not a context line: those start with their
        # element) is answered as bytes.
        if data[pos] != 123 or data.startswith(b"{{{bt:", pos):  # 123: "{"
            if produced:
                flush()
            stop = line_filter.feed_bt_lines(data, pos, end, parts)
            if stop > pos:
                pos = stop
                continue
        newline = data.index(b"\n", pos)
        if newline > pos and data[newline - 1] == 13:  # b"\r"
            text, eol = data[pos : newline - 1], "\r\n"
        else:
            text, eol = data[pos:newline], "\n"
        produced.append(line_filter.feed(text.decode("utf-8", "surrogateescape"), eol))
        pos = newline + 1
    if produced:
        flush()
    return b"".join(parts)


def _write_records(out: BinaryIO, records: list[Record]) -> None:
    import json

    for record in records:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        out.write(line.encode("utf-8", "surrogateescape"))
    records.clear()


def _is_tty(stream: BinaryIO) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (OSError, ValueError):
        return False
