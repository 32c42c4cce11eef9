"""`python -m stackmark_lsp`: the same as `stackmark lsp`."""

import sys

from stackmark.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["lsp", *sys.argv[1:]]))
