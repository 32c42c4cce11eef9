"""`DebuggerBackend` over GDB's Python API (GDB 13 and later).

Answers the raw questions of `stackmark.debugger.backend` and nothing
more. Where GDB 13 has no API, it parses command output:
`info proc mappings` for where each image's ELF header is mapped (live
processes and core files; the Perms column is missing for cores), and
`info files` as a fallback for targets without a memory map. Paths are
compared by realpath, because GDB names ld.so `/lib64/ld-linux-x86-64.so.2`
while the maps show `/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import gdb

from stackmark.debugger.backend import (
    DebuggerError,
    LoadedImage,
    RawFrame,
    RawFrameKind,
    ThreadInfo,
)
from stackmark.debugger.modules import module_from_image
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.unwind.target import REGISTER_NAMES, RegisterState, UnreadableMemory
from stackmark.unwind_rules import Arch

VDSO_PREFIX = "system-supplied DSO at "
VDSO_NAME = "[vdso]"

ARCHES = {"i386:x86-64": Arch.AMD64, "aarch64": Arch.AARCH64, "s390:64-bit": Arch.S390X}

# GDB calls registers by their DWARF names (REGISTER_NAMES, by DWARF number);
# the pc by these.
PC_NAMES = {Arch.AMD64: "rip", Arch.AARCH64: "pc", Arch.S390X: "pswa"}

_FRAME_KINDS = {
    gdb.INLINE_FRAME: RawFrameKind.INLINE,
    gdb.SIGTRAMP_FRAME: RawFrameKind.SIGTRAMP,
    gdb.TAILCALL_FRAME: RawFrameKind.SYNTHETIC,
}

# Why GDB found no caller of a frame, when that is a problem (gdb/unwind_stop_reasons.def:
# the reasons from UNWIND_FIRST_ERROR on), not the end of the stack.
_ERROR_STOPS = frozenset(
    {
        gdb.FRAME_UNWIND_UNAVAILABLE,
        gdb.FRAME_UNWIND_INNER_ID,
        gdb.FRAME_UNWIND_SAME_ID,
        gdb.FRAME_UNWIND_NO_SAVED_PC,
        gdb.FRAME_UNWIND_MEMORY_ERROR,
    }
)

# `info proc mappings` rows: start end size offset [perms] objfile (may have spaces)
_MAPPING = re.compile(
    r"^\s*0x(?P<start>[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+0x(?P<offset>[0-9a-f]+)"
    r"(?:\s+[r-][w-][x-][ps-])?\s+(?P<path>\S.*?)\s*$"
)
# `info files` rows: 0xSTART - 0xEND is SECTION [in FILE]
_SECTION = re.compile(
    r"^\s*0x(?P<start>[0-9a-f]+) - 0x[0-9a-f]+ is (?P<section>\S+)(?: in (?P<path>.+?))?\s*$"
)

UNSIGNED_64 = (1 << 64) - 1


def _unsigned(value: gdb.Value) -> int:
    return int(value) & UNSIGNED_64


def _real(path: str) -> str:
    return os.path.realpath(path)


class GdbBackend:
    """The selected inferior of the running GDB, as a `DebuggerBackend`."""

    name = "gdb"

    def __init__(self) -> None:
        self._stop: str | None = None  # why the last `frames()` list ended early

    # -- target ------------------------------------------------------------

    def arch(self) -> Arch:
        name = gdb.selected_inferior().architecture().name()
        try:
            return ARCHES[name]
        except KeyError:
            raise DebuggerError(f"stackmark does not support the {name} architecture") from None

    def has_process(self) -> bool:
        inferior = gdb.selected_inferior()
        return inferior.pid != 0 and bool(inferior.threads())

    def require_process(self) -> None:
        if not self.has_process():
            raise DebuggerError("the program is not being run (start it, attach, or load a core)")

    def read_memory(self, address: int, size: int) -> bytes:
        try:
            return bytes(gdb.selected_inferior().read_memory(address, size))
        except (gdb.MemoryError, gdb.error, OverflowError, ValueError) as exc:
            raise UnreadableMemory(address, size, str(exc).split(" at address")[0]) from None

    def address_of(self, expression: str) -> int:
        try:
            value = gdb.parse_and_eval(expression)
            if value.type.strip_typedefs().code == gdb.TYPE_CODE_FUNC:
                value = value.address
            return _unsigned(value)
        except (gdb.error, gdb.MemoryError, ValueError, OverflowError) as exc:
            raise DebuggerError(f"{expression}: {exc}") from None

    # -- images ------------------------------------------------------------

    def images(self) -> list[LoadedImage]:
        headers = self._header_addresses()
        main = gdb.current_progspace().filename
        biases: dict[str, int] | None = None
        by_build_id: dict[str, int] | None = None
        images = []
        for objfile in gdb.objfiles():
            if objfile.owner is not None or not objfile.is_valid():
                continue  # separate debug files belong to their owner
            name = objfile.filename
            build_id = objfile.build_id or ""
            if name.startswith(VDSO_PREFIX):
                address = int(name[len(VDSO_PREFIX) :], 16)
                images.append(LoadedImage(VDSO_NAME, header_address=address, build_id=build_id))
                continue
            is_executable = name == main
            header = headers.get(_real(name))
            if header is None and build_id:  # renamed or deleted since it was loaded
                if by_build_id is None:
                    by_build_id = self._headers_by_build_id(headers)
                header = by_build_id.get(build_id)
            if header is not None:
                images.append(LoadedImage(name, header, None, build_id, is_executable))
                continue
            if biases is None:
                biases = self._biases_from_sections()
            bias = biases.get(_real(name))
            if bias is not None:
                images.append(LoadedImage(name, None, bias, build_id, is_executable))
        return images

    def _headers_by_build_id(self, headers: dict[str, int]) -> dict[str, int]:
        """build ID -> header address, read from memory at every mapped file's start."""
        found: dict[str, int] = {}
        for path, address in headers.items():
            module = module_from_image(self.read_memory, LoadedImage(path, address), 0)
            if module.build_id:
                found.setdefault(module.build_id, address)
        return found

    def object_files(self) -> list[str]:
        return [
            objfile.filename
            for objfile in gdb.objfiles()
            if objfile.is_valid() and objfile.is_file and os.path.isfile(objfile.filename)
        ]

    def _header_addresses(self) -> dict[str, int]:
        """realpath -> runtime address of the file's offset-0 mapping."""
        try:
            text = gdb.execute("info proc mappings", to_string=True)
        except gdb.error:
            return {}
        found: dict[str, int] = {}
        for line in text.splitlines():
            match = _MAPPING.match(line)
            if match and int(match["offset"], 16) == 0:
                path = match["path"].removesuffix(" (deleted)")
                if path.startswith("/"):
                    found.setdefault(_real(path), int(match["start"], 16))
        return found

    def _biases_from_sections(self) -> dict[str, int]:
        """realpath -> load bias, from the runtime section addresses of `info files`."""
        try:
            text = gdb.execute("info files", to_string=True)
        except gdb.error:
            return {}
        main = gdb.current_progspace().filename
        runtime: dict[str, tuple[str, int]] = {}
        for line in text.splitlines():
            match = _SECTION.match(line)
            if match is None:
                continue
            path = match["path"] or main
            if path and not path.startswith(VDSO_PREFIX):
                runtime.setdefault(_real(path), (match["section"], int(match["start"], 16)))
        biases = {}
        for path, (section_name, address) in runtime.items():
            try:
                with ElfFile.open(path) as elf:
                    section = elf.section(section_name)
                    if section is not None:
                        biases[path] = address - section.addr
            except FormatError:
                continue
        return biases

    # -- threads and frames ------------------------------------------------

    def threads(self) -> list[ThreadInfo]:
        self.require_process()
        selected = gdb.selected_thread()
        return [
            ThreadInfo(t.num, t.name or "", t == selected)
            for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num)
        ]

    def _thread(self, thread: ThreadInfo | None) -> gdb.InferiorThread:
        self.require_process()
        if thread is None:
            return gdb.selected_thread()
        for candidate in gdb.selected_inferior().threads():
            if candidate.num == thread.number:
                return candidate
        raise DebuggerError(f"no thread {thread.number}")

    @contextmanager
    def _on_thread(self, thread: ThreadInfo | None) -> Iterator[None]:
        """Switch to `thread` and back, keeping the user's selected frame."""
        target = self._thread(thread)
        previous = gdb.selected_thread()
        try:
            level = gdb.selected_frame().level()
        except gdb.error:
            level = 0
        if target != previous:
            target.switch()
        try:
            yield
        finally:
            if previous is not None and previous.is_valid() and target != previous:
                previous.switch()
            self._select_level(level)

    @staticmethod
    def _select_level(level: int) -> None:
        frame = gdb.newest_frame()
        while frame is not None and frame.level() < level:
            frame = frame.older()
        if frame is not None:
            frame.select()

    def frames(
        self, thread: ThreadInfo | None = None, past_main: bool = False, symbols: bool = False
    ) -> list[RawFrame]:
        self._stop = None
        with self._on_thread(thread):
            if not past_main:
                return self._walk(symbols)
            # Past main, not past the entry point: beyond _start there is no caller,
            # only what GDB's prologue analysis guesses where _start has no CFI.
            with gdb.with_parameter("backtrace past-main", "on"):
                return self._walk(symbols)

    def unwind_stop(self) -> str | None:
        return self._stop

    def _walk(self, symbols: bool) -> list[RawFrame]:
        result = []
        frame: gdb.Frame | None = gdb.newest_frame()
        while frame is not None:
            kind = _FRAME_KINDS.get(frame.type(), RawFrameKind.NORMAL)
            pc = frame.pc()
            if symbols:
                sal = frame.find_sal()
                file = sal.symtab.filename if sal.symtab is not None else None
                result.append(RawFrame(pc, kind, frame.name(), file, sal.line))
            else:
                result.append(RawFrame(pc, kind))
            try:
                older = frame.older()
            except gdb.error as exc:  # "previous frame identical", unreadable memory, ...
                self._stop = str(exc)
                break
            if older is None:
                self._stop = self._stop_reason(frame)
            frame = older
        return result

    @staticmethod
    def _stop_reason(frame: gdb.Frame) -> str | None:
        """Why GDB found no caller of `frame`, when that is an error (what `bt`
        prints as "Backtrace stopped: ..."); None for the outermost frame or main."""
        reason = frame.unwind_stop_reason()
        if reason not in _ERROR_STOPS:
            return None
        # `bt` prints the detailed reason ("Cannot access memory at address 0x10");
        # the Python API has only the generic one. `-1`: only the outermost frame.
        try:
            text = gdb.execute(
                "backtrace -frame-arguments none -frame-info location -1", to_string=True
            )
        except gdb.error:
            text = ""
        found = re.search(r"^Backtrace stopped: (.+)$", text, re.MULTILINE)
        return found.group(1) if found else gdb.frame_stop_reason_string(reason)

    def registers(self, thread: ThreadInfo | None = None) -> RegisterState:
        arch = self.arch()
        with self._on_thread(thread):
            frame = gdb.newest_frame()
            values = {}
            for number, register in REGISTER_NAMES[arch].items():
                try:
                    values[number] = _unsigned(frame.read_register(register))
                except (gdb.error, ValueError):
                    continue
            return RegisterState(_unsigned(frame.read_register(PC_NAMES[arch])), values)
