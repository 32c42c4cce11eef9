"""The options of `symbolize`, declared once: `stackmark symbolize` and the
debuggers' `symbolize` command take the same ones.

    add_arguments(parser)                    # every option, on an argparse parser
    args = parser.parse_args(argv)
    build_symbolizer(settings_from(args))    # where symbols are (stackmark.symbols.setup)
    filter_streams(inputs, out, err_write, filter_settings_from(args), symbolizer,
                   naming_from(args))        # how the log is printed (stackmark.markup.stream)

The groups are public for the commands that take some of them (`stackmark
serve`, `llvm-symbolizer-stackmark`). argparse is imported only when a
parser is built: a plain `stackmark symbolize` parses its common command
lines without it (`stackmark.cli.symbolize.parse_quick`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.stream import UNRESOLVED_HINT, FilterSettings, make_naming
from stackmark.symbols.setup import SymbolSettings

if TYPE_CHECKING:
    import argparse


DASK_CHUNK_SIZE_TEXT = "1M"
DASK_CHUNK_SIZE = 1_000_000
"""Logs larger than this are cut into chunks for the Dask workers: about 0.3 s of
filtering per chunk against tens of ms of overhead per task, and enough chunks
per large log to keep several workers busy (docs/benchmarks.md, "Batches on a
Dask cluster")."""


def add_arguments(
    parser: argparse.ArgumentParser,
    *,
    files_metavar: str = "FILE",
    files_help: str = "logs to read (default: stdin)",
) -> None:
    """Every option of `symbolize`; the positional files as `files_metavar` and
    `files_help` say (the debuggers' command also takes markup text there)."""
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
        "A module's name in the log is a path too: an absolute one is looked at after\n"
        "the local places above (before debuginfod), a relative one under each\n"
        "--symbol-path; the file there must have the build ID too.\n\n"
        "exit status: 0 ok; 1 some element had an error (output still complete);\n"
        "2 usage error or unreadable input; 3 with --fail-on-unresolved, some frame was\n"
        "left without a name (before 1). --compat=llvm19 exits 0 (or 3 when asked)."
    )
    parser.add_argument("files", nargs="*", metavar=files_metavar, help=files_help)
    add_symbol_source_arguments(parser)
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
    add_naming_arguments(out)
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
        "--fail-on-unresolved",
        action="store_true",
        help="exit with status 3 when a pc, bt or data element was left without a name "
        "(its module's symbols not found, or silent about the address); the output is "
        "complete all the same",
    )
    out.add_argument(
        "--filter-markup",
        action="store_true",
        help=argparse.SUPPRESS,  # accepted, so that llvm-symbolizer command lines work
    )
    add_debuginfod_arguments(parser)
    add_batch_arguments(parser)


def add_symbol_source_arguments(
    parser: argparse.ArgumentParser, *, objects: bool = True
) -> argparse._ArgumentGroup:
    """The options that say where symbols are (shared with `stackmark serve` and
    `llvm-symbolizer-stackmark`, which declares its own `--obj`: without `objects`)."""
    where = parser.add_argument_group("where symbols are found")
    where.add_argument(
        "--debug-file-directory",
        action="append",
        default=[],
        metavar="DIR",
        help="look for DIR/.build-id/xx/rest.debug (repeatable)",
    )
    if objects:
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
    return where


def add_naming_arguments(out: argparse._ArgumentGroup, *, short_functions: bool = False) -> None:
    """The options that say how functions and files are named (shared with `serve` and
    `llvm-symbolizer-stackmark`, which also takes llvm-symbolizer's `-f`: `short_functions`)."""
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
        *(("--functions", "-f") if short_functions else ("--functions",)),
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


def add_debuginfod_arguments(parser: argparse.ArgumentParser) -> None:
    """`--debuginfod-url`, `--offline`, the timeout and the download cache."""
    import argparse

    group = parser.add_argument_group(
        "debuginfod",
        "Servers that hand out debug files by build ID, asked after every local place "
        "and only for modules no local file gave debug info for. Downloads are checked "
        "(their build ID must match) and kept in a cache.",
    )
    group.add_argument(
        "--debuginfod-url",
        action="append",
        default=[],
        metavar="URL",
        help="a server to ask, in the order given (repeatable; replaces DEBUGINFOD_URLS)",
    )
    group.add_argument(
        "--no-debuginfod",
        action="store_true",
        help="ask no server and ignore the download cache, even if DEBUGINFOD_URLS is set",
    )
    group.add_argument(
        "--debuginfod",
        action="store_true",
        help=argparse.SUPPRESS,  # llvm-symbolizer's switch; servers come from the URLs
    )
    group.add_argument(
        "--offline",
        action="store_true",
        help="use only files downloaded before (no network)",
    )
    group.add_argument(
        "--debuginfod-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="give up on a server that sent under 100 KiB in this time "
        "(default: DEBUGINFOD_TIMEOUT, else 90; 0: never)",
    )
    group.add_argument(
        "--debuginfod-cache",
        metavar="DIR",
        help="where downloads are kept (default: DEBUGINFOD_CACHE_PATH, "
        "else ~/.cache/stackmark/debuginfod)",
    )


def add_batch_arguments(parser: argparse.ArgumentParser) -> None:
    """`-o DIR` and `-j N`, for many logs."""
    many = parser.add_argument_group(
        "many logs",
        "Several FILEs or a directory are symbolized in parallel processes that share "
        "the caches; each build ID is looked up once for the whole batch. A file that "
        "cannot be read or written is skipped and listed at the end (exit status 2).",
    )
    many.add_argument(
        "-o",
        "--output-dir",
        metavar="DIR",
        help="write one output per input under DIR (a directory's files keep their "
        "relative paths); without it, outputs follow each other on stdout",
    )
    many.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        metavar="N",
        help="worker processes for many logs (default: the number of CPUs)",
    )
    many.add_argument(
        "--dask-scheduler",
        metavar="tcp://HOST:PORT",
        help="run the batch on this Dask cluster's workers instead of local processes "
        "(one task per log, or per chunk of a large log; the workers read symbols where "
        "the options say, on their machines; needs pip install 'stackmark[dask]')",
    )
    many.add_argument(
        "--dask-chunk-size",
        type=_size,
        metavar="SIZE",
        help="with --dask-scheduler, a log larger than SIZE is cut into chunks of at least "
        "SIZE at the lines where a crash report starts ({{{reset}}}), one task each "
        f"(default {DASK_CHUNK_SIZE_TEXT}; 0: never cut; 500K, 4M, 1MiB...)",
    )


def _size(text: str) -> int:
    import argparse

    from stackmark.symbols.cache_admin import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    import argparse

    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def settings_from(args: argparse.Namespace) -> SymbolSettings:
    """Where the options say symbols are (for `build_symbolizer`)."""
    return SymbolSettings(
        debug_file_directories=list(args.debug_file_directory),
        objects=list(args.obj),
        symbol_paths=list(args.symbol_path),
        gsym_paths=list(args.gsym_path),
        gsym_cache=args.gsym_cache,
        gsym_cache_dir=args.gsym_cache_dir,
        relative_names=args.relativenames,
        llvm19=args.compat is not None,
        module_names=True,  # on the machine that crashed, a module's name is its path
    )


def filter_settings_from(args: argparse.Namespace) -> FilterSettings:
    """How the options say the log is printed."""
    return FilterSettings(
        json=args.output_style == "json",
        color=args.color,
        llvm19=args.compat is not None,
        fail_on_unresolved=args.fail_on_unresolved,
        unresolved_hint=UNRESOLVED_HINT,
    )


def name_options_from(args: argparse.Namespace) -> NameOptions:
    paths = "basename" if args.basenames else "relative" if args.relativenames else "absolute"
    return NameOptions(functions=args.functions, demangle=args.demangle, paths=paths)


def naming_from(args: argparse.Namespace) -> Naming:
    """The naming the options describe (with stackmark's demanglers)."""
    return make_naming(name_options_from(args))
