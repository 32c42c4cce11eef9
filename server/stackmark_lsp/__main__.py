"""`python -m stackmark_lsp`: the same as `stackmark lsp`."""

import sys

from stackmark_lsp.main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
