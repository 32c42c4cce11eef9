"""What the commands of one debugger share: its backend and caches.

A plugin makes one `Session` when it loads and passes it to every command.
Caches that depend on what the debugger has loaded (the module list, the
symbolizer's open files) are dropped by `forget_modules()`, which plugins
call when the debugger loads or unloads object files.
"""

from __future__ import annotations

from stackmark.debugger.backend import DebuggerBackend, DebuggerError
from stackmark.debugger.modules import loaded_modules
from stackmark.model import Module


class Session:
    """A backend plus the state commands keep between runs."""

    def __init__(self, backend: DebuggerBackend):
        self.backend = backend

    def forget_modules(self) -> None:
        """The debugger loaded or unloaded object files: drop what depends on them."""

    def require_process(self) -> None:
        if not self.backend.has_process():
            raise DebuggerError("the program is not being run (start it, attach, or load a core)")

    def modules(self) -> list[Module]:
        """The process layout, read afresh (libraries come and go between stops)."""
        self.require_process()
        return loaded_modules(self.backend)
