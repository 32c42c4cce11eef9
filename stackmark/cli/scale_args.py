"""Command-line options for symbolizing at scale: debuginfod servers and many logs.

Shared by `stackmark symbolize` (and any command that finds files by build
ID): the options, turning them plus the environment into a
`DebuginfodClient`, and telling whether a run is a batch. This module is
light on purpose: the client (with urllib) and the batch machinery (with
multiprocessing) are imported only when used, so a plain run starts as
fast as before.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from stackmark.cli.progress import StatusLine
    from stackmark.symbols.debuginfod import DebuginfodClient

SEED_ATTRIBUTE = "debuginfod_seed"
"""A batch's parent puts its client's `snapshot()` on the workers' copy of
the arguments under this name; `make_client` seeds the worker's client."""


DASK_CHUNK_SIZE_TEXT = "1M"
DASK_CHUNK_SIZE = 1_000_000
"""Logs larger than this are cut into chunks for the Dask workers: about 0.3 s of
filtering per chunk against tens of ms of overhead per task, and enough chunks
per large log to keep several workers busy (docs/benchmarks.md, "Batches on a
Dask cluster")."""


DEFAULTS: dict[str, object] = {
    "debuginfod_url": [],
    "no_debuginfod": False,
    "debuginfod": False,
    "offline": False,
    "debuginfod_timeout": None,
    "debuginfod_cache": None,
    "output_dir": None,
    "jobs": None,
    "dask_scheduler": None,
    "dask_chunk_size": None,
}
"""What `add_arguments` gives when none of its options is used (for commands
that parse their common command lines without argparse)."""

QUICK_OPTIONS: dict[str, tuple[str, object]] = {
    "--debuginfod-url": ("debuginfod_url", "append"),
    "--no-debuginfod": ("no_debuginfod", True),
    "--debuginfod": ("debuginfod", True),
    "--offline": ("offline", True),
    "--debuginfod-cache": ("debuginfod_cache", "store"),
    "--output-dir": ("output_dir", "store"),
}
"""The options of `add_arguments` a quick parser may take (see
`stackmark.cli.symbolize.parse_quick`): (dest, "append" | "store" | flag value)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--debuginfod-url` and friends, and the batch options `-o` and `-j`."""
    add_debuginfod_arguments(parser)
    add_batch_arguments(parser)


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


def _seconds(text: str) -> float:
    import argparse

    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None


def _size(text: str) -> int:
    import argparse

    from stackmark.symbols.cache_admin import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def batch_wanted(args: argparse.Namespace) -> bool:
    """Batch mode: an output directory, a directory input, several files, or a cluster."""
    files = [f for f in args.files if f != "-"]
    return (
        args.output_dir is not None
        or getattr(args, "dask_scheduler", None) is not None
        or len(files) > 1
        or any(os.path.isdir(f) for f in files)
    )


def debuginfod_wanted(args: argparse.Namespace) -> bool:
    """Whether the options or environment ask for debuginfod at all."""
    if args.no_debuginfod:
        return False
    return bool(
        args.debuginfod_url
        or os.environ.get("DEBUGINFOD_URLS", "").strip()
        or args.offline
        or args.debuginfod_cache
    )


def make_client(
    args: argparse.Namespace,
    *,
    status: StatusLine | None = None,
    report_failures: bool = False,
) -> DebuginfodClient | None:
    """The client the options and environment describe, or None when none is wanted.

    Progress and reports go to `status` (a new stderr status line if None).
    By default only wrong files are reported: the markup filter already
    tells about modules it cannot find, listing what each server said.
    """
    if not debuginfod_wanted(args):
        return None
    from stackmark.cli.progress import StatusLine
    from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings

    settings = DebuginfodSettings.from_environment(
        urls=args.debuginfod_url or None,
        timeout=args.debuginfod_timeout,
        cache_path=args.debuginfod_cache,
        offline=args.offline,
    )
    line = status if status is not None else StatusLine(sys.stderr)
    client = DebuginfodClient(
        settings,
        progress=line.download,
        report=lambda message: line.print(f"stackmark: {message}"),
        report_failures=report_failures,
        # llvm-symbolizer asks servers for debuginfo only; its compatibility mode too.
        executables=getattr(args, "compat", None) is None,
    )
    seed: Any = getattr(args, SEED_ATTRIBUTE, None)
    if seed:
        client.seed(seed)
    return client
