"""`stackmark lsp`: run the language server on stdin/stdout.

The command belongs to the server: its options and start-up are in
`stackmark_lsp.command`, shared with `python -m stackmark_lsp`. The CLI
imports it only when this command runs (stackmark/cli/main.py), and the
server itself, which needs pygls from the `lsp` extra, is imported only
once the options are read, so the rest of the CLI does not depend on pygls.
"""

from __future__ import annotations

from stackmark_lsp.command import add_arguments, run

__all__ = ["add_arguments", "run"]
