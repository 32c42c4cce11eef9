"""`python -m stackmark` runs the command line."""

from stackmark.cli.main import entry

entry()
