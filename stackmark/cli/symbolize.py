"""`stackmark symbolize [FILE...]`: symbolize logs that carry symbolizer markup.

Reads the files (or stdin), writes the log with its markup symbolized to
stdout, diagnostics to stderr. Bytes in, bytes out: every input line comes
out, in order, with its own line ending; bytes that are not UTF-8 pass
through unchanged.

Exit status:
  0  every element was understood and every address placed in a module
     (modules without symbols only warn: their frames are printed best-effort);
  1  some element had an error (malformed markup, an unknown module, an
     overlapping mmap, an address no mmap covers); the output is complete;
  2  usage error, or an input file could not be read.
With --compat=llvm19 the status is 0 whatever the elements, as with llvm.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, BinaryIO, Protocol, cast

from stackmark.cli import scale_args
from stackmark.errors import StackmarkError
from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.report import DiagnosticPrinter, stream_wants_colour
from stackmark.markup.resolve import Resolver
from stackmark.symbols.api import SymbolizerAPI

if TYPE_CHECKING:
    import argparse

    from stackmark.markup.records import Record
    from stackmark.symbols.debuginfod import DebuginfodClient
    from stackmark.symbols.source import ModuleFiles, SourceFactory, SymbolSource

EXIT_OK, EXIT_ELEMENT_ERRORS, EXIT_USAGE = 0, 1, 2


class LineFilter(Protocol):
    @property
    def errors(self) -> int: ...

    @property
    def passes_plain_lines(self) -> bool: ...

    def skip_plain_lines(self, count: int) -> None: ...

    def feed_bt_lines(self, data: bytes, start: int, end: int, out: list[bytes]) -> int: ...

    def feed(self, text: str, eol: str) -> str: ...

    def finish(self) -> str: ...


SYMBOLIZER_ANSWERS = 0
"""Answers the Symbolizer keeps: none, since the Resolver and the bt fast path
above it keep theirs (a cache there would only hold the same frames again)."""

RESOLVER_ANSWERS = 4096
"""Frames the Resolver keeps per address: the bt fast path keeps their text."""

READ_SIZE = 1 << 18
"""Bytes asked of the input at a time (less when less is there: a pipe that
delivers line by line is still answered line by line)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import argparse

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Symbolize a log that carries LLVM symbolizer markup ({{{module}}}, {{{mmap}}},\n"
        "{{{pc}}}, {{{bt}}}, {{{data}}}, {{{symbol}}}, {{{hexdict}}}), like\n"
        "`llvm-symbolizer --filter-markup`, without losing any log text."
    )
    parser.epilog = (
        "symbols are looked up by build ID: in each --debug-file-directory as\n"
        "DIR/.build-id/xx/rest.debug (default /usr/lib/debug), among the --obj files and\n"
        "the ELF files in each --symbol-path directory, next to a stripped binary through\n"
        "its .gnu_debuglink, and last on debuginfod servers (--debuginfod-url,\n"
        "DEBUGINFOD_URLS). The file found must have the build ID asked for. Where none\n"
        "with debug info is found, a GSYM file in a --gsym-path directory answers.\n\n"
        "exit status: 0 ok; 1 some element had an error (output still complete);\n"
        "2 usage error or unreadable input. --compat=llvm19 always exits 0."
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="logs to read (default: stdin)")
    where = parser.add_argument_group("where symbols are found")
    where.add_argument(
        "--debug-file-directory",
        action="append",
        default=[],
        metavar="DIR",
        help="look for DIR/.build-id/xx/rest.debug (repeatable)",
    )
    where.add_argument(
        "--obj",
        "--exe",
        "-e",
        action="append",
        default=[],
        metavar="FILE",
        help="an ELF file to use for the module with its build ID (repeatable)",
    )
    where.add_argument(
        "--symbol-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of ELF files, matched by build ID (repeatable)",
    )
    where.add_argument(
        "--gsym-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory of GSYM files (llvm-gsymutil's or stackmark's), matched by the "
        "build ID in their headers: one answers for a module no ELF file with debug "
        "info is found for (functions, files, lines, inline calls; no columns) "
        "(repeatable)",
    )
    where.add_argument(
        "--gsym-cache",
        choices=["use", "build", "off"],
        default="use",
        help="GSYM cache of symbols per build ID: use entries already built (default), "
        "also build missing ones on first use (about a minute per 30 MB of DWARF), or not",
    )
    where.add_argument(
        "--gsym-cache-dir",
        metavar="DIR",
        help="where the GSYM cache lives (default $XDG_CACHE_HOME/stackmark)",
    )
    out = parser.add_argument_group("output")
    out.add_argument(
        "--color",
        "--colour",
        nargs="?",
        const="always",
        default="auto",
        choices=["always", "never", "auto"],
        help="colour symbolized output (default auto: when stdout is a terminal)",
    )
    out.add_argument(
        "--no-demangle",
        dest="demangle",
        action="store_false",
        help="print function and data names as they are in the binary",
    )
    out.add_argument(
        "--demangle",
        "-C",
        dest="demangle",
        action="store_true",
        default=True,
        help="demangle function and data names (the default)",
    )
    out.add_argument(
        "--functions",
        nargs="?",
        const="linkage",
        default="linkage",
        choices=["linkage", "short", "none"],
        help="function names: demangled linkage names (default), short names, or none",
    )
    paths = out.add_mutually_exclusive_group()
    paths.add_argument(
        "--basenames", "-s", action="store_true", help="print file names without directories"
    )
    paths.add_argument(
        "--relativenames",
        action="store_true",
        help="print file names relative to the compilation directory",
    )
    out.add_argument(
        "--output-style",
        type=str.lower,
        default="llvm",
        choices=["llvm", "json"],
        help="llvm: the log, symbolized (default); json: one JSON record per element",
    )
    out.add_argument(
        "--compat",
        choices=["llvm19"],
        help="reproduce llvm-symbolizer 19's --filter-markup output exactly, "
        "including the text it drops (for side-by-side comparison)",
    )
    out.add_argument(
        "--filter-markup",
        action="store_true",
        help=argparse.SUPPRESS,  # accepted, so that llvm-symbolizer command lines work
    )
    scale_args.add_arguments(parser)


# --- the common command lines, without argparse ------------------------------------

_DEFAULTS: dict[str, object] = {
    "files": [],
    "debug_file_directory": [],
    "obj": [],
    "symbol_path": [],
    "gsym_path": [],
    "gsym_cache": "use",
    "gsym_cache_dir": None,
    "color": "auto",
    "demangle": True,
    "functions": "linkage",
    "basenames": False,
    "relativenames": False,
    "output_style": "llvm",
    "compat": None,
    "filter_markup": False,
    **scale_args.DEFAULTS,
}
"""What argparse gives for an empty command line (a test checks that it still does)."""

# option -> (dest, how): "append" and "store" take a value; a tuple of
# choices is a value among them; "optional:<const>" may go without one; a
# flag stores its value (True, or False for --no-demangle).
_OPTIONS: dict[str, tuple[str, object]] = {
    "--debug-file-directory": ("debug_file_directory", "append"),
    "--obj": ("obj", "append"),
    "--exe": ("obj", "append"),
    "--symbol-path": ("symbol_path", "append"),
    "--gsym-path": ("gsym_path", "append"),
    "--gsym-cache": ("gsym_cache", ("use", "build", "off")),
    "--gsym-cache-dir": ("gsym_cache_dir", "store"),
    "--color": ("color", ("always", "never", "auto")),
    "--colour": ("color", ("always", "never", "auto")),
    "--no-demangle": ("demangle", False),
    "--demangle": ("demangle", True),
    "-C": ("demangle", True),
    "--functions": ("functions", ("linkage", "short", "none")),
    "--basenames": ("basenames", True),
    "-s": ("basenames", True),
    "--relativenames": ("relativenames", True),
    "--output-style": ("output_style", ("llvm", "json")),
    "--compat": ("compat", ("llvm19",)),
    "--filter-markup": ("filter_markup", True),
    **scale_args.QUICK_OPTIONS,
}
_BARE_VALUE = {"--color": "always", "--colour": "always", "--functions": "linkage"}
"""Options with an optional value (`nargs="?"`): what they mean alone."""


def parse_quick(argv: Sequence[str]) -> argparse.Namespace | None:
    """The arguments argparse would give for `argv`, when that is certain without
    it: long options spelled out, values that do not start with '-', files in
    one run. None for anything else (help, errors, abbreviations, `--`, short
    options with attached values...): argparse then parses the command line."""
    values: dict[str, object] = {
        key: list(value) if isinstance(value, list) else value for key, value in _DEFAULTS.items()
    }
    files: list[str] = []
    files_done = False
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if token == "-" or not token.startswith("-"):
            if files_done:
                return None  # files on both sides of an option: argparse refuses them
            files.append(token)
            continue
        if files:
            files_done = True
        name, equals, value = token.partition("=")
        spec = _OPTIONS.get(name)
        if spec is None:
            return None
        dest, how = spec
        if isinstance(how, bool):
            if equals:
                return None
            values[dest] = how
            continue
        if not equals:
            following = argv[i] if i < len(argv) else None
            if name in _BARE_VALUE and (
                following is None or (following.startswith("--") and following != "--")
            ):
                values[dest] = _BARE_VALUE[name]
                continue
            if following is None or following.startswith("-"):
                return None
            value = following
            i += 1
        if how == "append":
            cast("list[str]", values[dest]).append(value)
        elif how == "store":
            values[dest] = value
        else:
            if dest == "output_style":
                value = value.lower()
            if value not in cast("tuple[str, ...]", how):
                return None
            values[dest] = value
    if values["basenames"] and values["relativenames"]:
        return None  # mutually exclusive: argparse says so
    values["files"] = files
    return cast("argparse.Namespace", SimpleNamespace(**values))


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


def _make_symbolizer(
    args: argparse.Namespace, debuginfod: DebuginfodClient | None = None
) -> SymbolizerAPI:
    """The real symbolizer, looking where the options say (llvm 19 ignores --obj and
    reads no GSYM file and trusts the file at a `.build-id` path, so --compat=llvm19
    does the same)."""
    from stackmark.symbols.elf_source import elf_source_factory
    from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES
    from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions

    compat = args.compat is not None
    options = SymbolizerOptions(
        debug_file_directories=args.debug_file_directory or list(DEFAULT_DEBUG_FILE_DIRECTORIES),
        objects=[] if compat else list(args.obj),
        symbol_paths=list(args.symbol_path),
        gsym_paths=[] if compat else list(args.gsym_path),  # llvm 19 reads no GSYM
        trust_build_id_paths=compat,
        debuginfod=debuginfod or scale_args.make_client(args),
        # The markup layer remembers each answer (and its text) itself.
        cache_size=SYMBOLIZER_ANSWERS,
    )
    if args.relativenames:
        # GSYM keeps absolute paths only: relative names come from the DWARF.
        from stackmark.symbols.elf_source import relative_elf_source_factory

        options.source_factories = [relative_elf_source_factory]
    elif args.gsym_cache != "off":
        options.source_factories = [
            _gsym_factory(args.gsym_cache_dir, build=args.gsym_cache == "build"),
            elf_source_factory,
        ]
    return Symbolizer(options)


def _gsym_factory(cache_dir: str | None, *, build: bool) -> SourceFactory:
    """Answers from the GSYM cache: entries already built, or (`build`) built on first use.

    Imports the GSYM code only when a module is looked up."""

    def factory(files: ModuleFiles) -> SymbolSource | None:
        from stackmark.symbols.cache import GsymCache
        from stackmark.symbols.gsym_source import GsymSource, gsym_source_factory

        cache = GsymCache(cache_dir)
        if build:
            try:
                missing = files.build_id and not all(
                    p.is_file() for p in cache.entry_paths(files.build_id)[:2]
                )
            except StackmarkError:
                missing = False  # not a build ID the cache takes: the factory declines
            if missing:
                # Long work: say so (the cache entry is made once per build ID).
                print(
                    f"stackmark symbolize: building the GSYM cache entry for {files.dwarf_file} "
                    f"in {cache.root} (once per build ID)...",
                    file=sys.stderr,
                    flush=True,
                )
            from stackmark.formats.gsym.progress import Progress

            # On a terminal, how the conversion goes (tens of seconds for a large binary).
            return gsym_source_factory(cache, Progress(sys.stderr))(files)
        if not files.build_id:
            return None
        try:
            # Validation checks the entry (the extras belong to the GSYM, whose UUID,
            # when it has one, is the build ID; CRC-32s unless this very pair passed
            # them before); the source then opens it without checking again.
            entry = cache.validate(files.build_id)
            if entry is None:
                return None
            return GsymSource(str(entry.gsym), str(entry.extras), files, entry.identity)
        except (StackmarkError, OSError):
            return None

    return factory


def _make_naming(args: argparse.Namespace) -> Naming:
    from stackmark.demangle import demangle, demangle_symbol

    paths = "basename" if args.basenames else "relative" if args.relativenames else "absolute"
    options = NameOptions(functions=args.functions, demangle=args.demangle, paths=paths)
    return Naming(options, demangle_name=demangle_symbol, demangle_symbol=demangle)


def run_streams(
    inputs: Iterable[tuple[str, BinaryIO]],
    out: BinaryIO,
    err_write: Callable[[str], None],
    args: argparse.Namespace,
    symbolizer: SymbolizerAPI,
    naming: Naming,
) -> int:
    """Filter each input (a separate log: the context starts empty) to `out`."""
    compat = args.compat is not None
    colour = args.output_style == "llvm" and (
        args.color == "always" or (args.color == "auto" and _is_tty(out) and stream_wants_colour(1))
    )
    err_colour = stream_wants_colour(2)
    flush_each_line = _is_tty(out)
    resolver = Resolver(symbolizer, cache_size=RESOLVER_ANSWERS)
    status = EXIT_OK
    for source, stream in inputs:
        printer = DiagnosticPrinter(err_write, colour=err_colour, llvm_style=compat, source=source)
        records: list[Record] | None = [] if args.output_style == "json" else None
        line_filter: LineFilter
        if compat:
            from stackmark.markup.llvm19 import Llvm19Filter

            line_filter = Llvm19Filter(resolver, naming, printer, colour=colour)
        else:
            from stackmark.markup.filter import StackmarkFilter

            line_filter = StackmarkFilter(resolver, naming, printer, colour=colour, records=records)
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
        if line_filter.errors and not compat and status == EXIT_OK:
            status = EXIT_ELEMENT_ERRORS
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


def _open_inputs(
    files: list[str], err_write: Callable[[str], None]
) -> tuple[list[tuple[str, BinaryIO]], bool]:
    if not files:
        return [("<stdin>", sys.stdin.buffer)], True
    inputs: list[tuple[str, BinaryIO]] = []
    ok = True
    for name in files:
        if name == "-":
            inputs.append(("<stdin>", sys.stdin.buffer))
            continue
        try:
            inputs.append((name, open(name, "rb")))  # noqa: SIM115 - closed by the caller
        except OSError as exc:
            err_write(f"stackmark symbolize: error: {name}: {exc.strerror or exc}\n")
            ok = False
    return inputs, ok


GC_YOUNG_THRESHOLD = 100_000
"""Container objects allocated (net) between two young-generation collections in
the filter's process: Python's default (700) ran ~180 collections over a
100,000-line log, 6% of a warm run, all scanning answers that are kept for the
whole run anyway (frame texts, names). Cycles are still collected, only later."""


def _collect_garbage_rarely() -> None:
    import gc

    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def run(args: argparse.Namespace) -> int:
    if args.compat is not None and args.output_style == "json":
        print(
            "stackmark symbolize: error: --output-style=json has no llvm 19 equivalent; "
            "drop --compat=llvm19",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if scale_args.batch_wanted(args):
        from stackmark.cli import symbolize_batch

        return symbolize_batch.run(args)

    def err_write(text: str) -> None:
        sys.stderr.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stderr.buffer.flush()

    inputs, opened_all = _open_inputs(args.files, err_write)
    _collect_garbage_rarely()
    try:
        status = run_streams(
            inputs, sys.stdout.buffer, err_write, args, _make_symbolizer(args), _make_naming(args)
        )
    finally:
        for _name, stream in inputs:
            if stream is not sys.stdin.buffer:
                stream.close()
    return status if opened_all else EXIT_USAGE
