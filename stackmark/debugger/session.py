"""What the commands of one debugger share: its backend, its warning channel, caches.

A plugin makes one `Session` when it loads and passes it to every command.
`warn` writes diagnostics where the debugger shows errors (GDB's stderr,
LLDB's result warnings); command output proper is what commands return.
Caches that depend on what the debugger has loaded (the symbolizer and the
files it opened) are dropped by `forget_modules()`, which plugins call when
the debugger loads or unloads object files.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from stackmark.debugger.backend import DebuggerBackend, DebuggerError
from stackmark.debugger.modules import loaded_modules
from stackmark.model import Module

if TYPE_CHECKING:
    from stackmark.symbols.symbolizer import Symbolizer


def _stderr(text: str) -> None:
    sys.stderr.write(text)


class Session:
    """A backend plus the state commands keep between runs."""

    def __init__(self, backend: DebuggerBackend, warn: Callable[[str], None] = _stderr):
        self.backend = backend
        self.warn = warn
        self.unwinder_problems: Callable[[], list[str]] = list
        """What went wrong in the debugger's own SFrame unwinding (GDB's unwinder
        hook sets this): tables it could not read, so frames it left to the debugger."""
        self._symbolizers: dict[tuple[tuple[str, ...], ...], Symbolizer] = {}

    def forget_modules(self) -> None:
        """The debugger loaded or unloaded object files: drop what depends on them."""
        self._symbolizers.clear()

    def require_process(self) -> None:
        if not self.backend.has_process():
            raise DebuggerError("the program is not being run (start it, attach, or load a core)")

    def modules(self) -> list[Module]:
        """The process layout, read afresh (libraries come and go between stops)."""
        self.require_process()
        return loaded_modules(self.backend)

    def symbolizer(
        self,
        debug_file_directories: list[str],
        objects: list[str],
        symbol_paths: list[str],
    ) -> Symbolizer:
        """A symbolizer that also knows every file the debugger loaded (matched by build
        ID, so logs from other runs of the same binaries resolve), kept while the
        debugger's files stay the same."""
        from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES
        from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions

        loaded = self.backend.object_files()
        directories = debug_file_directories or list(DEFAULT_DEBUG_FILE_DIRECTORIES)
        key = (tuple(directories), tuple(objects), tuple(symbol_paths), tuple(loaded))
        found = self._symbolizers.get(key)
        if found is None:
            options = SymbolizerOptions(
                debug_file_directories=directories,
                objects=[*objects, *loaded],
                symbol_paths=list(symbol_paths),
            )
            found = self._symbolizers[key] = Symbolizer(options)
        return found
