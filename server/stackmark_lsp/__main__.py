"""`python -m stackmark_lsp`: the same as `stackmark lsp` (command.py)."""

import sys

from stackmark_lsp.command import main

if __name__ == "__main__":
    sys.exit(main())
