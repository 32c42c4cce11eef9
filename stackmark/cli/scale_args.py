"""Symbolizing at scale from the command line: debuginfod servers and many logs.

Shared by `stackmark symbolize`, its batches (local or on Dask) and any
command that finds files by build ID: turning the options (declared in
`stackmark.symbolize_options`) plus the environment into a
`DebuginfodClient` and a symbolizer, and telling whether a run is a batch.
This module is light on purpose: the client (with urllib) and the batch
machinery (with multiprocessing) are imported only when used, so a plain
run starts as fast as before.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from stackmark.cli.progress import StatusLine
    from stackmark.symbols.api import SymbolizerAPI
    from stackmark.symbols.debuginfod import DebuginfodClient

SEED_ATTRIBUTE = "debuginfod_seed"
"""A batch's parent puts its client's `snapshot()` on the workers' copy of
the arguments under this name; `make_client` seeds the worker's client."""


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
"""What the debuginfod and batch options (`stackmark.symbolize_options`)
give when none is used (for commands that parse their common command lines
without argparse)."""

QUICK_OPTIONS: dict[str, tuple[str, object]] = {
    "--debuginfod-url": ("debuginfod_url", "append"),
    "--no-debuginfod": ("no_debuginfod", True),
    "--debuginfod": ("debuginfod", True),
    "--offline": ("offline", True),
    "--debuginfod-cache": ("debuginfod_cache", "store"),
    "--output-dir": ("output_dir", "store"),
}
"""The debuginfod and batch options a quick parser may take (see
`stackmark.cli.symbolize.parse_quick`): (dest, "append" | "store" | flag value)."""


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


def make_symbolizer(
    args: argparse.Namespace, debuginfod: DebuginfodClient | None = None
) -> SymbolizerAPI:
    """The symbolizer the options describe, looking where they say; with
    `debuginfod` or the client they ask for (`make_client`)."""
    from stackmark.symbolize_options import settings_from
    from stackmark.symbols.setup import build_symbolizer

    return build_symbolizer(settings_from(args), debuginfod or make_client(args))
