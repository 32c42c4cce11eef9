"""`python -m stackmark` runs the command line."""

import sys

from stackmark.cli.main import main

sys.exit(main())
