"""The language server's command line: `python -m stackmark_lsp` and `stackmark lsp`.

    python -m stackmark_lsp [--stdio] [--log-file FILE] [--log-level LEVEL]

Declared here once; `stackmark lsp` (stackmark.cli.lsp) runs the same
`add_arguments` and `run`. pygls is imported only when the server starts,
so that `--help` works, and a missing pygls is a message, not a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from stackmark.errors import StackmarkError

PROG = "stackmark lsp"


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
    """Log where the options say, then serve until the client says exit."""
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
            f"{PROG}: error: the language server needs pygls ({exc.name} is missing); "
            "install it with: pip install 'stackmark[lsp]'",
            file=sys.stderr,
        )
        return 2
    serve()
    return 0


def main(argv: Sequence[str]) -> int:
    """`python -m stackmark_lsp`: parse `argv` and run, ending as `stackmark lsp` does."""
    parser = argparse.ArgumentParser(prog=PROG)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except StackmarkError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the client went away: not worth a traceback
        return 141
