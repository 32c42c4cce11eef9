"""`stackmark symbolize` over many logs: the CLI side of `stackmark.batch`.

    stackmark symbolize logs/ -o symbolized/       one output per input
    stackmark symbolize a.log b.log > all.txt      outputs one after the other

Steps: plan the inputs; find each build ID the logs name once, for the
whole batch, in this process (local places, then debuginfod, downloads in
parallel), and with `--gsym-cache build` make the missing GSYM entries
here too, with every core, rather than in one worker while the other
waits for it; start the workers, each with a symbolizer whose debuginfod
client is seeded with those answers (so no worker asks a server again, or
reports a failure again); print each file's diagnostics (and output, when
there is no `-o`) in input order; list the files that failed at the end.
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from stackmark import batch
from stackmark.cli import scale_args
from stackmark.cli.progress import StatusLine
from stackmark.model import Module
from stackmark.symbols.api import ModuleResolution

PREFETCH_THREADS = 4
"""Build IDs resolved at once before the batch: downloads overlap, local lookups are quick."""

EXIT_BAD_FILE = 2


def run(args: argparse.Namespace) -> int:
    if "-" in args.files:
        print(
            "stackmark symbolize: error: stdin (-) cannot be one of many inputs; "
            "give it alone, or save it to a file",
            file=sys.stderr,
        )
        return EXIT_BAD_FILE
    output_dir = Path(args.output_dir) if args.output_dir is not None else None
    if not args.files:
        print("stackmark symbolize: error: --output-dir needs input files", file=sys.stderr)
        return EXIT_BAD_FILE
    if output_dir is not None and output_dir.exists() and not output_dir.is_dir():
        print(f"stackmark symbolize: error: {output_dir} is not a directory", file=sys.stderr)
        return EXIT_BAD_FILE
    status = StatusLine(sys.stderr)
    items, unusable = batch.plan(args.files, output_dir)
    worker_args = copy.copy(args)
    jobs = args.jobs or os.cpu_count() or 1
    seed = _resolve_once(items, args, status, jobs)
    setattr(worker_args, scale_args.SEED_ATTRIBUTE, seed)
    factory = functools.partial(_make_processor, worker_args)

    def deliver(result: batch.ItemResult) -> None:
        if result.diagnostics:
            status.print(result.diagnostics.rstrip("\n"))
        if result.item.output is None and result.output is not None:
            with open(result.output, "rb") as produced:
                shutil.copyfileobj(produced, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            os.unlink(result.output)

    def show(done: int, total: int, failed: int) -> None:
        text = f"symbolizing: {done} of {total} files"
        status.show(text + (f", {failed} failed" if failed else ""), force=done == total)

    with tempfile.TemporaryDirectory(prefix="stackmark-batch-") as temp:
        results = batch.run(
            items, factory, jobs=jobs, temp_dir=Path(temp), on_result=deliver, progress=show
        )
    status.clear()
    return _summarise(results + unusable, status)


def _resolve_once(
    items: list[batch.BatchItem], args: argparse.Namespace, status: StatusLine, jobs: int
) -> object:
    """Find the files of every build ID the logs name, once, in this process
    (and build their GSYM entries when asked to).

    Returns the debuginfod client's answers for the workers (None when no
    server or download cache is in use: local lookups are cheap enough to
    repeat in each worker).
    """
    client = scale_args.make_client(args, status=status, report_failures=True)
    build_gsym = getattr(args, "gsym_cache", "off") == "build"
    if client is None and not build_gsym:
        return None
    build_ids: set[str] = set()
    for item in items:
        build_ids |= batch.scan_build_ids(item.source)
    if build_ids:
        status.show(f"looking up {len(build_ids)} build IDs", force=True)
        symbolizer = scale_args.make_symbolizer(args, client)
        with ThreadPoolExecutor(max_workers=PREFETCH_THREADS) as pool:
            resolutions = list(
                pool.map(lambda b: symbolizer.resolve(Module(0, "", b)), sorted(build_ids))
            )
        if build_gsym:
            from stackmark.symbolize_options import settings_from

            directories = settings_from(args).debug_file_directories
            _build_gsym_entries(resolutions, args.gsym_cache_dir, directories, jobs, status)
    return client.snapshot() if client is not None else None


def _build_gsym_entries(
    resolutions: list[ModuleResolution],
    cache_dir: str | None,
    debug_file_directories: list[str],
    jobs: int,
    status: StatusLine,
) -> None:
    """Make the GSYM cache entries the workers will read (one conversion per build ID;
    dwz supplementary files are found in `debug_file_directories`, and split DWARF's
    files where llvm looks, as the symbolizer finds them)."""
    from stackmark.dwarf.split_files import SplitDwarfFinder
    from stackmark.dwarf.supplementary import supplementary_finder
    from stackmark.errors import StackmarkError
    from stackmark.symbols.cache import GsymCache

    cache = GsymCache(cache_dir, jobs=jobs)
    load_supplementary = supplementary_finder(debug_file_directories)
    wanted = [r for r in resolutions if r.binary is not None and r.has_debug_info]
    for number, resolution in enumerate(wanted, 1):
        assert resolution.binary is not None
        if cache.validate(resolution.build_id) is not None:
            continue
        status.show(
            f"building GSYM {number} of {len(wanted)}: {os.path.basename(resolution.binary)}",
            force=True,
        )
        try:
            cache.get_or_build(
                resolution.build_id,
                resolution.binary,
                load_supplementary=load_supplementary,
                load_split=SplitDwarfFinder(),
            )
        except (StackmarkError, OSError) as exc:
            # The workers read DWARF for this module instead.
            status.print(f"stackmark: cannot build GSYM for {resolution.build_id}: {exc}")


def _make_processor(args: argparse.Namespace) -> batch.FileProcessor:
    """Runs in each worker: one symbolizer for every file the worker gets."""
    from stackmark.markup.stream import filter_streams
    from stackmark.symbolize_options import filter_settings_from, naming_from

    symbolizer = scale_args.make_symbolizer(args)
    naming = naming_from(args)
    settings = filter_settings_from(args)

    def process(name: str, source: BinaryIO, output: BinaryIO, err_write: batch.Writer) -> int:
        return filter_streams([(name, source)], output, err_write, settings, symbolizer, naming)

    return process


def _summarise(results: list[batch.ItemResult], status: StatusLine) -> int:
    """List the failed files; the exit status is the worst of all files'."""
    failed = [r for r in results if r.failure is not None]
    if failed:
        status.print(f"stackmark symbolize: {len(failed)} of {len(results)} inputs failed:")
        for result in sorted(failed, key=lambda r: r.item.name):
            status.print(f"  {result.item.name}: {result.failure}")
    from stackmark.markup.stream import worst_status

    return worst_status([*(r.status for r in results), EXIT_BAD_FILE if failed else 0])
