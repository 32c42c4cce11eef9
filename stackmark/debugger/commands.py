"""The `stackmark` commands every debugger plugin registers.

Each entry of `COMMANDS` is a `Command` (see `command.py`): its words
under the `stackmark` prefix, its arguments, and a function from a
`Session` and the parsed arguments to output lines. `GROUPS` lists the
prefixes (`stackmark` itself, `stackmark cbf`) a debugger must create
before the commands under them.
"""

from __future__ import annotations

from stackmark.debugger import cbf
from stackmark.debugger.bt import BT
from stackmark.debugger.command import Command, CommandGroup
from stackmark.debugger.sframe import SFRAME
from stackmark.debugger.symbolize import SYMBOLIZE

ROOT = CommandGroup((), "stackmark: symbolizer markup, SFrame and CBF in the debugger.")

GROUPS: list[CommandGroup] = [ROOT, cbf.GROUP]
COMMANDS: list[Command] = [BT, SYMBOLIZE, cbf.DECODE, SFRAME]
