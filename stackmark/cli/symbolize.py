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
  2  usage error, an input file could not be read, or the output could not
     be written (a full disk);
  3  only with --fail-on-unresolved: some pc, bt or data element was left
     without a name (its module's symbols were not found, or they say
     nothing about the address); takes precedence over 1.
With --compat=llvm19 the status is 0 whatever the elements, as with llvm
(3 still, when --fail-on-unresolved asks for it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, BinaryIO, cast

from stackmark.cli import scale_args
from stackmark.markup.naming import Naming
from stackmark.markup.stream import EXIT_USAGE, OutputError, filter_streams
from stackmark.symbolize_options import (
    add_arguments as add_arguments,  # the command's options (stackmark.cli.main asks here)
)
from stackmark.symbolize_options import (
    filter_settings_from,
    naming_from,
)
from stackmark.symbols.api import SymbolizerAPI

if TYPE_CHECKING:
    import argparse


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
    "fail_on_unresolved": False,
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
    "--fail-on-unresolved": ("fail_on_unresolved", True),
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


_make_symbolizer = scale_args.make_symbolizer
_make_naming = naming_from
# (The names stackmark.cli.cbf, the benchmarks and the tests call them by.)


def run_streams(
    inputs: Iterable[tuple[str, BinaryIO]],
    out: BinaryIO,
    err_write: Callable[[str], None],
    args: argparse.Namespace,
    symbolizer: SymbolizerAPI,
    naming: Naming,
) -> int:
    """Filter each input (a separate log: the context starts empty) to `out`."""
    return filter_streams(inputs, out, err_write, filter_settings_from(args), symbolizer, naming)


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


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that what its buffer still holds is not written
    (and reported) again when the process ends."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
    if getattr(args, "dask_chunk_size", None) is not None and args.dask_scheduler is None:
        print(
            "stackmark symbolize: error: --dask-chunk-size needs --dask-scheduler",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if scale_args.batch_wanted(args):
        if getattr(args, "dask_scheduler", None) is not None:
            from stackmark.cli import symbolize_dask

            return symbolize_dask.run(args)
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
    except OutputError as exc:  # a full disk: said once, and nothing more is tried
        err_write(f"stackmark symbolize: error: {exc}\n")
        _silence_stdout()
        return EXIT_USAGE
    finally:
        for _name, stream in inputs:
            if stream is not sys.stdin.buffer:
                stream.close()
    return status if opened_all else EXIT_USAGE
