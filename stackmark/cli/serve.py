"""`stackmark serve`: run the symbolication service (stackmark.service) on uvicorn.

    stackmark serve --port 8000 --workers 4 --debug-file-directory /srv/debug \\
        --breakpad-store https://symbols.example.org/ --token-file /etc/stackmark/token

Why Starlette on uvicorn: an ASGI server whose `--workers` supervisor
starts N worker processes on one listening socket and restarts any that
dies, which is what CPU-bound Python needs (one core per process; the
processes share the on-disk GSYM and download caches, whose entries are
built once under a lock); Starlette adds routing and streaming bodies
with little code between a request and the core. The settings reach each
worker in the environment (stackmark.service.settings); Prometheus
metrics are kept in a directory under the cache (stackmark.service.metrics).
Needs the extra: `pip install 'stackmark[serve]'`.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from stackmark.symbolize_options import (
    add_debuginfod_arguments,
    add_naming_arguments,
    add_symbol_source_arguments,
    name_options_from,
    settings_from,
)

if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    import argparse

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Serve symbolication over HTTP: Mozilla's Symbolication API v5\n"
        "(POST /symbolicate/v5), markup logs (POST /symbolize, what `stackmark symbolize`\n"
        "prints), GET /__heartbeat__, /__lbheartbeat__ and /metrics (Prometheus)."
    )
    parser.epilog = "Needs `pip install 'stackmark[serve]'`. See docs/service.md."
    http = parser.add_argument_group("service")
    http.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    http.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    http.add_argument(
        "--workers", type=int, default=1, metavar="N", help="worker processes (default 1)"
    )
    http.add_argument(
        "--token-file",
        metavar="FILE",
        help="require `Authorization: Bearer TOKEN` with the token in FILE",
    )
    http.add_argument(
        "--breakpad-store",
        action="append",
        default=[],
        metavar="DIR|URL",
        help="a Breakpad symbol store, NAME/DEBUG-ID/NAME.sym (repeatable)",
    )
    http.add_argument(
        "--deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="answer every request within this time; lookups still running are "
        "left out of the answer, which says so (default 10)",
    )
    http.add_argument(
        "--max-body", type=int, default=4 << 20, metavar="BYTES", help="largest body (4 MiB)"
    )
    http.add_argument("--max-jobs", type=int, default=10, metavar="N", help="jobs per request")
    http.add_argument("--max-modules", type=int, default=1000, metavar="N", help="modules per job")
    http.add_argument(
        "--max-frames", type=int, default=20000, metavar="N", help="frames per request"
    )
    add_symbol_source_arguments(parser)
    parser.set_defaults(gsym_cache="build")  # a service builds its cache as it goes
    names = parser.add_argument_group("names in answers")
    add_naming_arguments(names)
    add_debuginfod_arguments(parser)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        print(
            "stackmark serve: error: the service needs its extra: pip install 'stackmark[serve]'",
            file=sys.stderr,
        )
        return 2
    from stackmark.service.settings import ENVIRONMENT_VARIABLE, ServiceSettings
    from stackmark.symbols.cache import default_cache_dir

    if args.token_file is not None and not os.path.isfile(args.token_file):
        print(f"stackmark serve: error: {args.token_file}: no such file", file=sys.stderr)
        return 2
    args.compat = None
    symbols = settings_from(args)
    cache_dir = Path(args.gsym_cache_dir) if args.gsym_cache_dir else default_cache_dir()
    names = name_options_from(args)
    settings = ServiceSettings(
        symbols=symbols.to_dict(),
        names={"functions": names.functions, "demangle": names.demangle, "paths": names.paths},
        breakpad_stores=list(args.breakpad_store),
        debuginfod_urls=args.debuginfod_url or None,
        no_debuginfod=args.no_debuginfod,
        offline=args.offline,
        debuginfod_timeout=args.debuginfod_timeout,
        debuginfod_cache=args.debuginfod_cache,
        cache_dir=str(cache_dir),
        token_file=os.path.abspath(args.token_file) if args.token_file else None,
        max_body_bytes=args.max_body,
        max_jobs=args.max_jobs,
        max_modules=args.max_modules,
        max_frames=args.max_frames,
        deadline_seconds=args.deadline,
    )
    os.environ[ENVIRONMENT_VARIABLE] = settings.to_json()
    # Metrics of this run only, under the cache (the service writes nowhere else).
    metrics_dir = cache_dir / "serve-metrics" / str(os.getpid())
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True, mode=0o700)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    try:
        uvicorn.run(
            "stackmark.service.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=args.deadline + 5,
        )
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0
