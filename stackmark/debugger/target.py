"""The core unwinder's `Target` over a debugger backend.

With it, `stackmark.unwind.unwinder.Unwinder` walks a thread of whatever
process the debugger shows, live or from a core, using the debugger only
for the innermost registers and for memory. This is how a debugger
without an unwinder hook (LLDB 19) gets an SFrame backtrace, and how the
SFrame unwinding of a debugger's process can be checked against the
debugger's own frames.
"""

from __future__ import annotations

from collections.abc import Sequence

from stackmark.debugger.backend import DebuggerBackend, ThreadInfo
from stackmark.debugger.modules import loaded_modules
from stackmark.model import Module
from stackmark.unwind.target import RegisterState
from stackmark.unwind_rules import Arch


class BackendTarget:
    """One thread of the backend's process, as an unwinding `Target`."""

    def __init__(
        self,
        backend: DebuggerBackend,
        thread: ThreadInfo | None = None,
        modules: Sequence[Module] | None = None,
    ):
        self.backend = backend
        self.thread = thread
        self._arch = backend.arch()
        self._modules = list(modules) if modules is not None else loaded_modules(backend)
        self.read_memory = backend.read_memory

    @property
    def arch(self) -> Arch:
        return self._arch

    def registers(self) -> RegisterState:
        return self.backend.registers(self.thread)

    def modules(self) -> Sequence[Module]:
        return self._modules

    def code_address_mask(self) -> int | None:
        return None  # debuggers strip pointer authentication themselves when they know the mask
