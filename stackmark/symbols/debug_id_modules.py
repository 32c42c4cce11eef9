"""Modules found by Breakpad's (debug name, debug ID) pair, as crash reports name them.

Mozilla's Symbolication API (the service's v5 endpoint) and Breakpad
minidumps name a module by its debug file name and a debug ID
(`stackmark.symbols.debug_id`), not by a whole build ID. `DebugIdModules`
looks for such a module, in order:

1. among the symbolizer's local ELF places, by the build-ID prefix the debug
   ID keeps (`SymbolStore.build_ids_starting_with`);
2. in the Breakpad symbol stores (a `.sym` file, converted to GSYM once);
3. on debuginfod servers, by the 16 bytes the debug ID keeps (a whole build
   ID when the build ID was 16 bytes long: `--build-id=md5` or `uuid`).

An answer is a `FoundModule`: the module's symbol source and the load address
its offsets start from. Each pair is looked up once per process; a miss is
forgotten after `MISS_SECONDS`, so that symbols uploaded since are found.
"""

from __future__ import annotations

import threading
import time

from stackmark.elf import PT_LOAD, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.symbols.breakpad_store import (
    MISS_SECONDS,
    BreakpadSource,
    BreakpadStore,
    check_module_name,
)
from stackmark.symbols.debug_id import build_id_prefix
from stackmark.symbols.source import SymbolSource
from stackmark.symbols.symbolizer import Symbolizer


class FoundModule:
    """A module's symbol source and the load address its offsets start from
    (the first PT_LOAD's address for an ELF file: 0 for a shared library or PIE)."""

    __slots__ = ("base", "source")

    def __init__(self, source: SymbolSource, base: int = 0) -> None:
        self.source = source
        self.base = base

    def frames(self, offset: int) -> tuple[list[SourceFrame], DataSymbol | None]:
        """The inline chain at `offset` and the symbol holding it (for function_offset)."""
        address = self.base + offset
        try:
            frames = self.source.frames_at(address)
            symbol = self.source.data_at(address) if frames else None
        except StackmarkError:
            return [], None
        return frames, symbol


class DebugIdModules:
    """(debug name, debug ID) -> `FoundModule`, over a Symbolizer's places and
    Breakpad stores; each pair is looked up once per process (thread-safe)."""

    def __init__(self, symbolizer: Symbolizer, breakpad: BreakpadStore | None = None) -> None:
        self.symbolizer = symbolizer
        self.breakpad = breakpad
        self._found: dict[tuple[str, str], tuple[FoundModule | None, float]] = {}
        self._lock = threading.Lock()

    def known(self, name: str, debug_id: str) -> tuple[bool, FoundModule | None]:
        """(True, answer) when the pair was looked up before (never blocks); a miss
        is forgotten after MISS_SECONDS, so that symbols uploaded since are found."""
        entry = self._found.get((name, debug_id.upper()))
        if entry is None:
            return False, None
        found, when = entry
        if found is None and time.monotonic() - when > MISS_SECONDS:
            return False, None
        return True, found

    def find(self, name: str, debug_id: str) -> FoundModule | None:
        """The module, looked for in order: local ELF places, Breakpad stores, debuginfod."""
        known, found = self.known(name, debug_id)
        if known:
            return found
        found = self._look(name, debug_id)
        with self._lock:
            self._found[(name, debug_id.upper())] = (found, time.monotonic())
        return found

    def _look(self, name: str, debug_id: str) -> FoundModule | None:
        if check_module_name(name, debug_id) is not None:
            return None
        prefix = build_id_prefix(debug_id)
        for build_id in self.symbolizer.store.build_ids_starting_with(prefix):
            found = self._elf(Module(0, name, build_id))
            if found is not None:
                return found
        if self.breakpad is not None:
            gsym = self.breakpad.gsym_for(name, debug_id, [])
            if gsym is not None:
                try:
                    return FoundModule(BreakpadSource(gsym))
                except StackmarkError:
                    pass
        if self.symbolizer.options.debuginfod is not None:
            # debuginfod needs a whole build ID: the 16 bytes are one when the
            # build ID was 16 bytes long (--build-id=md5 or uuid).
            return self._elf(Module(0, name, prefix))
        return None

    def _elf(self, module: Module) -> FoundModule | None:
        source = self.symbolizer.source(module)
        if source is None:
            return None
        binary = self.symbolizer.resolve(module).binary
        return FoundModule(source, _image_base(binary) if binary else 0)


def _image_base(path: str) -> int:
    try:
        with ElfFile.open(path) as elf:
            loads = [s.vaddr for s in elf.segments if s.type == PT_LOAD]
    except (FormatError, OSError):
        return 0
    return min(loads, default=0)
