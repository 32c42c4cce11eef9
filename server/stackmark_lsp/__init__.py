"""stackmark's language server: logs with symbolizer markup as navigable documents.

Run it as `stackmark lsp` (or `python -m stackmark_lsp`); it speaks LSP on
stdin/stdout. See docs/lsp.md for what it offers and how to configure it.
"""

from stackmark import __version__

__all__ = ["__version__"]
