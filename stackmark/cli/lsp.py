"""`stackmark lsp`: run the language server on stdin/stdout.

The server lives in the `stackmark_lsp` package (it needs pygls, from the
`lsp` extra); this module imports it only when the command runs, so the
rest of the CLI does not depend on pygls.
"""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the stackmark language server over stdio: hover, go to definition, inlay "
        "hints, diagnostics and a symbolized view for logs with symbolizer markup. "
        "Editors start it themselves; see docs/lsp.md."
    )
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk LSP over stdin/stdout (the default; accepted because clients pass it)",
    )
    parser.add_argument("--log-file", metavar="FILE", help="write the server's log to FILE")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="how much to log (default: warning)",
    )


def run(args: argparse.Namespace) -> int:
    handler: logging.Handler
    if args.log_file:
        handler = logging.FileHandler(args.log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    try:
        from stackmark_lsp.server import serve
    except ImportError as exc:
        print(
            f"stackmark lsp: error: the language server needs pygls ({exc.name} is missing); "
            "install it with: pip install 'stackmark[lsp]'",
            file=sys.stderr,
        )
        return 2
    serve()
    return 0
