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

DEBUGGER_ANSWERS = 1 << 16
"""Answers the debugger's symbolizer remembers: a session asks about the same
frames again and again (each `bt`, each `symbolize` of a log)."""


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
        from stackmark.symbols.setup import SymbolSettings, build_symbolizer

        loaded = self.backend.object_files()
        settings = SymbolSettings(
            debug_file_directories=debug_file_directories,  # none: the default
            objects=[*objects, *loaded],
            symbol_paths=symbol_paths,
            gsym_cache="off",  # the debugger's own files answer, read as they are
            module_names=True,
            cache_size=DEBUGGER_ANSWERS,
        )
        key = (
            tuple(settings.debug_file_directories),
            tuple(objects),
            tuple(symbol_paths),
            tuple(loaded),
        )
        found = self._symbolizers.get(key)
        if found is None:
            found = self._symbolizers[key] = build_symbolizer(settings)
        return found
