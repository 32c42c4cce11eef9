"""`DebuggerBackend` over LLDB's SB API (LLDB 19 and later).

Answers the raw questions of `stackmark.debugger.backend` for the target,
process and thread of the command being run (LLDB hands each command an
`SBExecutionContext`; `bound` makes it current). Everything else (module
layout and build IDs read from memory, inline folding, pc/ra, output) is
the shared core, so LLDB and GDB print the same bytes.

LLDB quirks handled here (docs/lldb.md):

- For a concrete frame that has inlined frames above it, `GetPC()` is the
  start of the inlined block, not the frame's pc: the concrete frame gets
  the pc of the youngest inline frame of its run, which is the real one.
- For an ELF file without a GNU build ID, LLDB invents a 4-byte "UUID" (a
  CRC of the file); such UUIDs are not passed on as build IDs.
- In a live process LLDB names the dynamic linker by its real path
  (`/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`), in a core file by
  the program's PT_INTERP (`/lib64/ld-linux-x86-64.so.2`), which is also
  the name the dynamic linker's own link map (and so GDB) uses: the
  PT_INTERP name is used in both cases.
- LLDB lists the frames past `main` (libc's start-up code, `_start`),
  which GDB hides unless asked; they are left out unless `past_main`.
- Signal trampolines are not a frame type in the SB API: they are known by
  name (LLDB's own trap-handler names plus `target.trap-handler-names`).
- `SBProcess.ReadMemory` may return fewer bytes than asked without an
  error (core files): a short read is unreadable memory.
- After `process kill` and a new `process launch` in the same target, the
  target lists the dynamic linker twice, both loaded at the same address:
  an image is taken once per header address.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import lldb

from stackmark.debugger.backend import (
    DebuggerError,
    LoadedImage,
    RawFrame,
    RawFrameKind,
    ThreadInfo,
)
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.unwind.rules import Arch
from stackmark.unwind.target import RegisterState, UnreadableMemory

ARCHES = {"x86_64": Arch.AMD64, "aarch64": Arch.AARCH64, "arm64": Arch.AARCH64, "s390x": Arch.S390X}

# LLDB register names by DWARF number, per architecture (the pc separately).
REGISTER_NAMES: dict[Arch, dict[int, str]] = {
    Arch.AMD64: {
        0: "rax",
        1: "rdx",
        2: "rcx",
        3: "rbx",
        4: "rsi",
        5: "rdi",
        6: "rbp",
        7: "rsp",
        **{n: f"r{n}" for n in range(8, 16)},
    },
    Arch.AARCH64: {**{n: f"x{n}" for n in range(31)}, 31: "sp"},
    Arch.S390X: {n: f"r{n}" for n in range(16)},
}
PC_NAMES = {Arch.AMD64: "rip", Arch.AARCH64: "pc", Arch.S390X: "pswa"}

TRAP_HANDLER_NAMES = frozenset({"__restore_rt", "_sigtramp", "__kernel_rt_sigreturn"})
"""The Linux signal trampolines LLDB's own platform code knows by name."""

PT_INTERP = 3  # the program header naming the dynamic linker
VDSO_NAME = "[vdso]"
INVALID_ADDRESS = (1 << 64) - 1  # LLDB_INVALID_ADDRESS
UNSIGNED_64 = (1 << 64) - 1
NO_LINE = (1 << 32) - 1  # what SBLineEntry.GetLine() says when there is no line
MIN_BUILD_ID_HEX = 10  # LLDB's invented CRC "UUID" is 4 bytes (8 hex digits)

_STOPPED_STATES = frozenset({lldb.eStateStopped, lldb.eStateCrashed, lldb.eStateSuspended})
_RUNNING_STATES = frozenset({lldb.eStateRunning, lldb.eStateStepping, lldb.eStateLaunching})
_REGISTER = re.compile(r"^\$([A-Za-z][A-Za-z0-9_]*)$")
_SYMBOL = re.compile(r"^[A-Za-z_.$][\w.$@:<>~]*$")


def build_id_of(module: lldb.SBModule) -> str:
    """The module's GNU build ID as LLDB reports it, "" for LLDB's invented CRCs."""
    uuid = (module.GetUUIDString() or "").replace("-", "").lower()
    return uuid if len(uuid) >= MIN_BUILD_ID_HEX else ""


def interpreter_of(path: str) -> str | None:
    """The PT_INTERP string of the ELF file at `path` (the dynamic linker it asks for)."""
    try:
        with ElfFile.open(path) as elf:
            for segment in elf.segments:
                if segment.type == PT_INTERP:
                    raw = elf.read(segment.offset, segment.filesz)
                    return raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape") or None
    except (FormatError, OSError):
        return None
    return None


def _real(path: str) -> str:
    return os.path.realpath(path)


class LldbBackend:
    """The target, process and thread of the running LLDB command."""

    name = "lldb"

    def __init__(self, debugger: lldb.SBDebugger):
        self._debugger = debugger
        self._context: lldb.SBExecutionContext | None = None
        self._interpreters: dict[str, str | None] = {}  # executable -> its PT_INTERP
        self._stop: str | None = None  # why the last `frames()` list ended early

    @contextmanager
    def bound(self, debugger: lldb.SBDebugger, context: lldb.SBExecutionContext) -> Iterator[None]:
        """Answer for `context` (the command's execution context) while in the block."""
        previous = self._debugger, self._context
        self._debugger, self._context = debugger, context
        try:
            yield
        finally:
            self._debugger, self._context = previous

    # -- target and process ------------------------------------------------

    def _target(self) -> lldb.SBTarget:
        if self._context is not None and self._context.GetTarget().IsValid():
            return self._context.GetTarget()
        return self._debugger.GetSelectedTarget()

    def _process(self) -> lldb.SBProcess:
        if self._context is not None and self._context.GetProcess().IsValid():
            return self._context.GetProcess()
        return self._target().GetProcess()

    def arch(self) -> Arch:
        triple = self._target().GetTriple() or ""
        name = triple.split("-", 1)[0]
        try:
            return ARCHES[name]
        except KeyError:
            raise DebuggerError(
                f"stackmark does not support the {name or 'unknown'} architecture"
            ) from None

    def has_process(self) -> bool:
        """True for a stopped process or a core file; a running process is an error
        (its memory and registers cannot be read until it stops)."""
        process = self._process()
        if not process.IsValid():
            return False
        state = process.GetState()
        if state in _RUNNING_STATES:
            raise DebuggerError("the process is running; stop it first (process interrupt)")
        return state in _STOPPED_STATES and process.GetNumThreads() > 0

    def require_process(self) -> None:
        if not self.has_process():
            raise DebuggerError("the program is not being run (start it, attach, or load a core)")

    def read_memory(self, address: int, size: int) -> bytes:
        """The process's memory; where a core file lacks it (read-only file mappings
        are usually not dumped), the bytes of the file mapped there, as GDB reads them."""
        if size == 0:
            return b""
        error = lldb.SBError()
        try:
            data = self._process().ReadMemory(address, size, error)
            if data is None or len(data) < size:
                data = self._read_from_files(address, size) or data
        except (OverflowError, TypeError, ValueError) as exc:
            raise UnreadableMemory(address, size, str(exc)) from None
        if data is None:
            reason = (error.GetCString() or "cannot read memory").split(" for 0x")[0]
            raise UnreadableMemory(address, size, reason)
        if len(data) < size:
            raise UnreadableMemory(address, size, f"short read ({len(data)} bytes)")
        return bytes(data)

    def _read_from_files(self, address: int, size: int) -> bytes | None:
        target = self._target()
        where = target.ResolveLoadAddress(address)
        if not where.GetSection().IsValid():
            return None  # not in any module: nothing to fall back to
        error = lldb.SBError()
        data = target.ReadMemory(where, size, error)
        return bytes(data) if error.Success() and data is not None else None

    def address_of(self, expression: str) -> int:
        """A number, `$register`, a function or symbol name, else an LLDB expression."""
        text = expression.strip()
        try:
            return int(text, 0) & UNSIGNED_64
        except ValueError:
            pass
        frame = self._frame()
        register = _REGISTER.match(text)
        if register and frame is not None:
            value = frame.FindRegister(register.group(1))
            if value.IsValid():
                return int(value.GetValueAsUnsigned()) & UNSIGNED_64
        if _SYMBOL.match(text):
            address = self._symbol_address(text)
            if address is not None:
                return address
        scope = frame if frame is not None else self._target()
        value = scope.EvaluateExpression(text)
        error = value.GetError()
        if not error.Success():
            message = (error.GetCString() or "cannot evaluate").strip().splitlines()[0]
            raise DebuggerError(f"{expression}: {message.removeprefix('error: ')}")
        return int(value.GetValueAsUnsigned()) & UNSIGNED_64

    def _symbol_address(self, name: str) -> int | None:
        """The load address of function or symbol `name` (the program's first)."""
        target = self._target()
        candidates = []
        for context in target.FindFunctions(name):
            candidates.append(context.GetSymbol().GetStartAddress())
            candidates.append(context.GetFunction().GetStartAddress())
        for context in target.FindSymbols(name):
            candidates.append(context.GetSymbol().GetStartAddress())
        for address in candidates:
            if address.IsValid():
                load = address.GetLoadAddress(target)
                if load != INVALID_ADDRESS:
                    return int(load)
        return None

    # -- images ------------------------------------------------------------

    def images(self) -> list[LoadedImage]:
        target = self._target()
        executable = target.GetExecutable()
        main_path = executable.fullpath if executable.IsValid() else None
        interpreter = self._interpreter(main_path)
        images = []
        seen: set[int] = set()
        for module in target.module_iter():
            header = module.GetObjectFileHeaderAddress()
            address = header.GetLoadAddress(target) if header.IsValid() else INVALID_ADDRESS
            if address == INVALID_ADDRESS:
                continue  # known to the target, not loaded in the process
            if address in seen:
                continue  # a stale copy: after a relaunch LLDB lists ld.so twice, both loaded
            seen.add(address)
            path = module.GetFileSpec().fullpath or ""
            if module.GetFileSpec().GetFilename() == VDSO_NAME:
                path = VDSO_NAME
            elif interpreter is not None and _real(path) == _real(interpreter):
                path = interpreter
            images.append(
                LoadedImage(
                    path,
                    header_address=int(address),
                    build_id=build_id_of(module),
                    is_executable=main_path is not None and path == main_path,
                )
            )
        return images

    def _interpreter(self, executable: str | None) -> str | None:
        if executable is None:
            return None
        if executable not in self._interpreters:
            self._interpreters[executable] = interpreter_of(executable)
        return self._interpreters[executable]

    def object_files(self) -> list[str]:
        """Each module's separate debug file (if any), then the module's file: the order
        GDB lists them in, so the symbolizer sees the same list in both debuggers."""
        files: list[str] = []
        for module in self._target().module_iter():
            for spec in (module.GetSymbolFileSpec(), module.GetFileSpec()):
                path = spec.fullpath if spec.IsValid() else None
                if path and path not in files and os.path.isfile(path):
                    files.append(path)
        return files

    def modules_signature(self) -> tuple[tuple[str, str], ...]:
        """What the loaded files are (path, UUID): when it changes, caches are stale."""
        return tuple(
            (module.GetFileSpec().fullpath or "", module.GetUUIDString() or "")
            for module in self._target().module_iter()
        )

    # -- threads and frames ------------------------------------------------

    def threads(self) -> list[ThreadInfo]:
        self.require_process()
        process = self._process()
        selected = self._selected_thread()
        selected_id = selected.GetThreadID() if selected is not None else None
        threads = [
            ThreadInfo(t.GetIndexID(), t.GetName() or "", t.GetThreadID() == selected_id)
            for t in process
        ]
        return sorted(threads, key=lambda t: t.number)

    def _selected_thread(self) -> lldb.SBThread | None:
        if self._context is not None and self._context.GetThread().IsValid():
            return self._context.GetThread()
        thread = self._process().GetSelectedThread()
        return thread if thread.IsValid() else None

    def _thread(self, thread: ThreadInfo | None) -> lldb.SBThread:
        self.require_process()
        if thread is None:
            found = self._selected_thread()
            if found is None:
                raise DebuggerError("no thread is selected")
            return found
        found = self._process().GetThreadByIndexID(thread.number)
        if not found.IsValid():
            raise DebuggerError(f"no thread {thread.number}")
        return found

    def _frame(self) -> lldb.SBFrame | None:
        if self._context is not None and self._context.GetFrame().IsValid():
            return self._context.GetFrame()
        thread = self._selected_thread() if self._process().IsValid() else None
        if thread is None:
            return None
        frame = thread.GetSelectedFrame()
        return frame if frame.IsValid() else None

    def _trap_handler_names(self) -> frozenset[str]:
        setting = lldb.SBDebugger.GetInternalVariableValue(
            "target.trap-handler-names", self._debugger.GetInstanceName()
        )
        names = {setting.GetStringAtIndex(i) for i in range(setting.GetSize())}
        return TRAP_HANDLER_NAMES | {n for n in names if n}

    def frames(
        self, thread: ThreadInfo | None = None, past_main: bool = False, symbols: bool = False
    ) -> list[RawFrame]:
        self._stop = None
        trampolines = self._trap_handler_names()
        entry = self._entry_function()
        result: list[RawFrame] = []
        run_pc: int | None = None  # the pc of the inline frames above a concrete frame
        last: lldb.SBFrame | None = None
        for frame in self._thread(thread):
            last = frame
            if frame.IsArtificial():
                result.append(RawFrame(frame.GetPC(), RawFrameKind.SYNTHETIC))
                continue
            symbol = frame.GetSymbol().GetName() or ""
            if frame.IsInlined():
                kind = RawFrameKind.INLINE
            elif symbol in trampolines:
                kind = RawFrameKind.SIGTRAMP
            else:
                kind = RawFrameKind.NORMAL
            pc = frame.GetPC() if run_pc is None else run_pc
            if kind is RawFrameKind.INLINE:
                run_pc = pc if run_pc is None else run_pc
            else:
                run_pc = None
            result.append(self._raw(frame, pc, kind) if symbols else RawFrame(pc, kind))
            if kind is not RawFrameKind.NORMAL:
                continue
            if not past_main and self._is_main(frame, symbol):
                return result
            if entry is not None and entry[0] <= frame.GetPC() < entry[1]:
                return result  # the entry point (_start) is outermost, as in GDB
        if last is not None:
            self._stop = self._stop_reason(last)
        return result

    def unwind_stop(self) -> str | None:
        return self._stop

    def _entry_function(self) -> tuple[int, int] | None:
        """Runtime [start, end) of the function holding the program's entry point.

        GDB ends a backtrace there (`backtrace past-entry` is off); LLDB goes on
        where `_start` has no CFI, repeating `_start` with another CFA.
        """
        target = self._target()
        module = target.FindModule(target.GetExecutable())
        entry = module.GetObjectFileEntryPointAddress() if module.IsValid() else None
        if entry is None or not entry.IsValid():
            return None
        symbol = entry.GetSymbol()
        if not symbol.IsValid():
            return None
        start = symbol.GetStartAddress().GetLoadAddress(target)
        end = symbol.GetEndAddress().GetLoadAddress(target)
        if INVALID_ADDRESS in (start, end) or end <= start:
            return None
        return int(start), int(end)

    def _stop_reason(self, frame: lldb.SBFrame) -> str | None:
        """Why LLDB found no caller of its last frame, when it is plain why: the
        frame's stack pointer is unreadable (LLDB reports no stop reason)."""
        sp = frame.GetSP()
        error = lldb.SBError()
        self._process().ReadMemory(sp, 1, error)
        if error.Success():
            return None
        name = frame.GetFunctionName() or frame.GetSymbol().GetName()
        where = f"0x{frame.GetPC():x}" + (f" ({name})" if name else "")
        return f"no caller of {where}: its stack pointer 0x{sp:x} points to unreadable memory"

    @staticmethod
    def _is_main(frame: lldb.SBFrame, symbol: str) -> bool:
        """The frame of the program's `main` (where GDB's backtrace stops by default)."""
        return (symbol or frame.GetFunctionName() or "") == "main"

    @staticmethod
    def _raw(frame: lldb.SBFrame, pc: int, kind: RawFrameKind) -> RawFrame:
        """A frame with LLDB's function name, file and line for it."""
        name = frame.GetFunctionName() or frame.GetSymbol().GetName() or None
        entry = frame.GetLineEntry()
        file = line = None
        if entry.IsValid() and entry.GetFileSpec().IsValid():
            file = entry.GetFileSpec().fullpath
            line = entry.GetLine()
        return RawFrame(pc, kind, name, file, line if line and line != NO_LINE else 0)

    def registers(self, thread: ThreadInfo | None = None) -> RegisterState:
        arch = self.arch()
        frame = self._thread(thread).GetFrameAtIndex(0)
        if not frame.IsValid():
            raise DebuggerError("the thread has no frames")
        values = {}
        for number, name in REGISTER_NAMES[arch].items():
            value = frame.FindRegister(name)
            if value.IsValid() and value.GetValue() is not None:
                values[number] = value.GetValueAsUnsigned() & UNSIGNED_64
        pc = frame.FindRegister(PC_NAMES[arch])
        return RegisterState(
            (pc.GetValueAsUnsigned() if pc.IsValid() else frame.GetPC()) & UNSIGNED_64, values
        )
