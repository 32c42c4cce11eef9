"""`stackmark cache [info | prune --max-size SIZE | clear]`: the on-disk caches.

Two caches, looked after together (stackmark.symbols.cache_admin):
downloads from debuginfod servers, and GSYM files made from DWARF.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from stackmark.symbols.cache_admin import (
    DOWNLOADS,
    GSYM,
    Caches,
    CacheSummary,
    format_size,
    parse_size,
)

TITLES = {DOWNLOADS: "downloads (debuginfod)", GSYM: "GSYM"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "where the caches are:\n"
        "  downloads: --debuginfod-cache, else DEBUGINFOD_CACHE_PATH,\n"
        "             else $XDG_CACHE_HOME/stackmark/debuginfod (~/.cache/...)\n"
        "  GSYM:      --gsym-cache-dir/gsym-v1, else $XDG_CACHE_HOME/stackmark/gsym-v1\n\n"
        "sizes: K, M, G, T are powers of 1000; Ki, Mi, Gi, Ti powers of 1024."
    )
    parser.add_argument(
        "--debuginfod-cache", metavar="DIR", help="the download cache to look after"
    )
    parser.add_argument(
        "--gsym-cache-dir",
        metavar="DIR",
        help="the GSYM cache, as given to `stackmark symbolize` (holds gsym-v1)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    info = actions.add_parser("info", help="where the caches are and how much they hold")
    info.add_argument("--json", action="store_true", help="print a JSON object")
    prune = actions.add_parser(
        "prune", help="delete the least recently used files until both caches fit a size"
    )
    prune.add_argument(
        "--max-size", required=True, type=_size, metavar="SIZE", help="e.g. 500M, 2G, 1GiB"
    )
    clear = actions.add_parser("clear", help="delete everything in the caches")
    which = clear.add_mutually_exclusive_group()
    which.add_argument("--downloads", action="store_true", help="only the downloads")
    which.add_argument("--gsym", action="store_true", help="only the GSYM files")


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _caches(args: argparse.Namespace) -> Caches:
    from stackmark.symbols.cache import default_cache_dir
    from stackmark.symbols.download_cache import default_cache_root

    if args.debuginfod_cache:
        downloads = Path(args.debuginfod_cache)
    elif os.environ.get("DEBUGINFOD_CACHE_PATH"):
        downloads = Path(os.environ["DEBUGINFOD_CACHE_PATH"])
    else:
        downloads = default_cache_root()
    gsym_root = Path(args.gsym_cache_dir) if args.gsym_cache_dir else default_cache_dir()
    return Caches(downloads, gsym_root)


def run(args: argparse.Namespace) -> int:
    caches = _caches(args)
    action = args.action or "info"
    if action == "info":
        summaries = caches.summaries()
        if getattr(args, "json", False):
            print(json.dumps(_as_json(summaries), indent=2))
        else:
            _print_summaries(summaries)
        return 0
    if action == "prune":
        removed = caches.prune(args.max_size)
        freed = sum(i.size for i in removed)
        left = sum(s.size for s in caches.summaries())
        print(
            f"removed {len(removed)} item(s), {format_size(freed)}; "
            f"the caches now hold {format_size(left)} (limit {format_size(args.max_size)})"
        )
        return 0
    kinds = (DOWNLOADS,) if args.downloads else (GSYM,) if args.gsym else (DOWNLOADS, GSYM)
    removed = caches.clear(kinds)
    print(f"removed {len(removed)} item(s), {format_size(sum(i.size for i in removed))}")
    return 0


def _print_summaries(summaries: list[CacheSummary]) -> None:
    for summary in summaries:
        print(f"{TITLES[summary.kind]}: {summary.root}")
        noun = "file(s)" if summary.kind == DOWNLOADS else "GSYM entries"
        line = (
            f"  {summary.items} {noun} for {summary.build_ids} build ID(s), "
            f"{format_size(summary.size)}"
        )
        if summary.kind == DOWNLOADS:
            line += f"; {summary.misses} remembered miss(es)"
        print(line)
    print(f"total: {format_size(sum(s.size for s in summaries))}")
    sys.stdout.flush()


def _as_json(summaries: list[CacheSummary]) -> dict[str, object]:
    return {
        s.kind: {
            "path": str(s.root),
            "items": s.items,
            "build_ids": s.build_ids,
            "bytes": s.size,
            **({"misses": s.misses} if s.kind == DOWNLOADS else {}),
        }
        for s in summaries
    } | {"total_bytes": sum(s.size for s in summaries)}
