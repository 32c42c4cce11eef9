"""`stackmark lsp`: run the language server on stdin/stdout.

The server lives in the `stackmark_lsp` package, which declares its command
line (`stackmark_lsp.main`); this command runs it. pygls (from the `lsp`
extra) is imported only when the server starts, so the rest of the CLI does
not depend on it.
"""

from __future__ import annotations

from stackmark_lsp.main import add_arguments as add_arguments
from stackmark_lsp.main import run as run
