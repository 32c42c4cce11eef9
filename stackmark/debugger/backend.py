"""What a debugger must answer for stackmark: the `DebuggerBackend` protocol.

A backend (GDB's in `stackmark_gdb.backend`, LLDB's in `stackmark_lldb`)
answers raw questions only: read memory, read the registers of a thread's
innermost frame, list the loaded images and the threads, list a thread's
frames as the debugger unwound them. Everything built from those answers
(module layout and build IDs read from memory, inline folding, pc/ra
classification, markup, CBF, JSON, symbolization) is done once, in
`stackmark.debugger`, so both debuggers print the same bytes.

This module, like all of `stackmark.debugger`, imports no debugger module.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from stackmark.errors import StackmarkError
from stackmark.unwind.target import RegisterState
from stackmark.unwind_rules import Arch


class DebuggerError(StackmarkError):
    """A command cannot do what was asked (no process, bad argument, ...)."""


class RawFrameKind(enum.Enum):
    """What the debugger says a frame is.

    NORMAL: a real (concrete) stack frame. INLINE: an inlined call, folded
    into the next concrete frame. SIGTRAMP: the kernel's signal trampoline.
    SYNTHETIC: a frame with no stack of its own (GDB tail-call frames,
    LLDB artificial frames), skipped.
    """

    NORMAL = "normal"
    INLINE = "inline"
    SIGTRAMP = "sigtramp"
    SYNTHETIC = "synthetic"


@dataclass(frozen=True, slots=True)
class RawFrame:
    """One frame as the debugger lists it, innermost first.

    `pc` is the frame's address as the debugger reports it. (For the
    concrete frame that code was inlined into, LLDB reports the inlined
    block's start; `frames.physical_frames` takes the pc of the innermost
    member of such a run, so backends need not correct it.) `function`,
    `file` and `line` are the debugger's own symbolization, when it has one.
    """

    pc: int
    kind: RawFrameKind
    function: str | None = None
    file: str | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class LoadedImage:
    """An object the debugger has loaded into the inferior.

    `path` is the file the debugger read (absolute when it knows one;
    "[vdso]" for the kernel's vDSO). `header_address` is the runtime address
    of the image's ELF header when it is mapped, else None and
    `load_bias` must be set. `build_id` is what the debugger reports ("" when
    nothing); the core reads the build ID note itself and uses this only when
    memory and file are unreadable. `is_executable` marks the main program
    (module 0 in markup).
    """

    path: str
    header_address: int | None = None
    load_bias: int | None = None
    build_id: str = ""
    is_executable: bool = False


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A thread of the inferior: the debugger's number for it and its name."""

    number: int
    name: str = ""
    selected: bool = False


class DebuggerBackend(Protocol):
    """The raw facts a debugger provides; see the module docstring."""

    @property
    def name(self) -> str:
        """The debugger's name, for messages: "gdb", "lldb"."""
        ...

    def arch(self) -> Arch:
        """The inferior's architecture; raises DebuggerError if unsupported."""
        ...

    def has_process(self) -> bool:
        """True when there is a live process or a core file to look at."""
        ...

    def read_memory(self, address: int, size: int) -> bytes:
        """`size` bytes of target memory at `address`; raises `UnreadableMemory`."""
        ...

    def address_of(self, expression: str) -> int:
        """The address an expression of the debugger's language denotes
        (`$pc`, `main`, `0x1234`); raises DebuggerError with its message."""
        ...

    def object_files(self) -> list[str]:
        """Every file the debugger read symbols from: binaries and separate debug
        files, loaded in the process or not (for symbolization by build ID)."""
        ...

    def images(self) -> list[LoadedImage]:
        """The loaded images (executable, shared libraries, vDSO)."""
        ...

    def threads(self) -> list[ThreadInfo]:
        """The inferior's threads, in the debugger's order."""
        ...

    def frames(
        self, thread: ThreadInfo | None = None, past_main: bool = False, symbols: bool = False
    ) -> list[RawFrame]:
        """The frames of `thread` (the selected one when None), innermost first.

        With `past_main`, include the frames the debugger hides by default
        (GDB stops at `main` unless `backtrace past-main` is on). With
        `symbols`, fill in the debugger's function, file and line (slower).
        """
        ...

    def unwind_stop(self) -> str | None:
        """Why the list of the last `frames()` call ends where it does, when the
        debugger's unwinding stopped on a problem (memory it could not read, a
        corrupt stack) rather than at the outermost frame or `main`; else None."""
        ...

    def registers(self, thread: ThreadInfo | None = None) -> RegisterState:
        """Registers of the innermost frame of `thread` (the selected one when None)."""
        ...
