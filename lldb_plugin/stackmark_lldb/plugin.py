"""Install stackmark into a running LLDB (called by the loader, `stackmark_lldb`).

One `Session` over an `LldbBackend`; the commands declared in
`stackmark.debugger.commands` plus `stackmark sframe-bt` (LLDB 19 cannot
take an unwinder from Python, so the SFrame unwinder's backtrace is a
command of its own). LLDB has no synchronous "object files changed" event
for scripts, so before each command the loaded files (paths and UUIDs) are
compared with those of the previous command, and the session's caches are
dropped when they differ. Installing again (importing the loader again)
replaces the commands and keeps the session.
"""

from __future__ import annotations

from types import ModuleType

import lldb

from stackmark.debugger.commands import COMMANDS, GROUPS
from stackmark.debugger.session import Session
from stackmark.debugger.sframe_bt import SFRAME_BT
from stackmark_lldb.backend import LldbBackend
from stackmark_lldb.commands import Output, register


class Plugin:
    """The session, backend and output channel the commands share."""

    def __init__(self, debugger: lldb.SBDebugger):
        self.backend = LldbBackend(debugger)
        self.output = Output()
        self.session = Session(self.backend, warn=self.output.warn)
        self._loaded: tuple[tuple[str, str], ...] | None = None

    def before_command(self) -> None:
        """Drop cached symbol data when LLDB's loaded files changed since the last command."""
        loaded = self.backend.modules_signature()
        if loaded != self._loaded:
            self.session.forget_modules()
            self._loaded = loaded


_plugin: Plugin | None = None


def install(debugger: lldb.SBDebugger, module: ModuleType) -> None:
    """Register the commands on `debugger`; their classes are published on `module`."""
    global _plugin
    if _plugin is None:
        _plugin = Plugin(debugger)
    plugin = _plugin
    register(
        debugger,
        module,
        plugin.session,
        plugin.backend,
        plugin.output,
        GROUPS,
        [*COMMANDS, SFRAME_BT],
        plugin.before_command,
    )
