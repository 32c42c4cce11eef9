"""The language server's command line: `stackmark lsp` and `python -m stackmark_lsp`.

Both start the server the same way: these options, the log they set up,
then `server.serve` over stdin/stdout. The server needs pygls (the `lsp`
extra), so it is imported only when the command runs, and its absence is
a clear message rather than a traceback. `stackmark lsp` reaches this
module through the CLI's dispatch (stackmark/cli/lsp.py); editors run
`python -m stackmark_lsp`, which comes here directly (`main`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from stackmark.errors import StackmarkError


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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m stackmark_lsp [options]`: what `stackmark lsp [options]` does, with the
    exit statuses `stackmark` gives (1 for an error, 130 for ^C, 141 for a closed pipe)."""
    parser = argparse.ArgumentParser(prog="stackmark lsp")
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return run(args)
    except StackmarkError as exc:
        print(f"stackmark lsp: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()
        return 141
