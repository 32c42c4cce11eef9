"""Install stackmark into the running GDB (called by loader.py).

One `Session` over a `GdbBackend`; the commands declared in
`stackmark.debugger.commands` plus the GDB-only `stackmark unwinder`;
events that drop cached module data when GDB loads or unloads object
files. Installing twice (sourcing the loader again) replaces the commands.
"""

from __future__ import annotations

import gdb

from stackmark.debugger.commands import COMMANDS, GROUPS
from stackmark.debugger.session import Session
from stackmark_gdb.backend import GdbBackend
from stackmark_gdb.commands import register
from stackmark_gdb.events import connect_once
from stackmark_gdb.unwinder import UNWINDER_COMMAND, install_unwinder, the_unwinder

_session: Session | None = None


def session() -> Session:
    """The session the commands share (made by `install`)."""
    global _session
    if _session is None:
        _session = Session(GdbBackend(), warn=_write_error)
    return _session


def _write_error(text: str) -> None:
    gdb.write(text, gdb.STDERR)


def _forget_modules(_event: object) -> None:
    session().forget_modules()


def install() -> None:
    """Register the commands, the unwinder and the event hooks."""
    current = session()
    current.unwinder_problems = lambda: the_unwinder().problems()
    register(current, GROUPS, [*COMMANDS, UNWINDER_COMMAND])
    install_unwinder()
    connect_once(_forget_modules, gdb.events.new_objfile, gdb.events.clear_objfiles)
