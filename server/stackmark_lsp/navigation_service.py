"""The server's answers to go to definition's questions (`NavigationLookups`, lookups.py).

`SymbolService` answers the address questions; declarations are asked of the
core symbolizer (`Symbolizer.declaration_of`, which reads a module's DWARF
once); function addresses by name come from the symbol table of the file
that answers for the module; source files are looked for on this machine,
through the `sourcePathMap` prefix map, then on the debuginfod servers.
Everything that reads a file or the network runs in the service's worker
threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from stackmark.elf import ElfFile
from stackmark.errors import StackmarkError
from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, ModuleResolution
from stackmark.symbols.declarations import Declaration
from stackmark.symbols.symtab import SymbolTable
from stackmark_lsp.settings import Settings
from stackmark_lsp.symbolization import SymbolService


class SourceFinder:
    """Source files of a build, here or through debuginfod (thread-safe, remembered)."""

    def __init__(self, settings: Settings, service: SymbolService) -> None:
        self.settings = settings
        self.service = service
        self._found: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def local(self, path: str) -> str | None:
        mapped = self.settings.map_source(path)
        return mapped if os.path.isfile(mapped) else None

    def find(self, path: str, build_id: str) -> str | None:
        """A readable copy of source file `path` of build `build_id` (may download)."""
        local = self.local(path)
        if local is not None:
            return local
        key = (build_id, path)
        with self._lock:
            if key in self._found:
                return self._found[key]
        found: str | None = None
        client = self.service.debuginfod
        if client is not None and build_id and os.path.isabs(path):
            result = client.find_source(build_id, path)
            found = str(result.path) if result.path is not None else None
        with self._lock:
            self._found[key] = found
        return found


class SymbolTables:
    """Function addresses by linkage name, per file (read once, in a worker thread)."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def address(self, path: str, name: str) -> int | None:
        with self._lock:
            table = self._tables.get(path)
            if table is None:
                table = self._tables[path] = self._read(path)
        return table.get(name)

    @staticmethod
    def _read(path: str) -> dict[str, int]:
        try:
            with ElfFile.open(path) as elf:
                return {entry.name: entry.address for entry in SymbolTable(elf).entries}
        except (StackmarkError, OSError):
            return {}


class NavigationService:
    """`NavigationLookups` over the server's `SymbolService` (see the module docstring)."""

    def __init__(self, service: SymbolService, sources: SourceFinder, tables: SymbolTables):
        self.service = service
        self.sources = sources
        self.tables = tables

    async def resolution_of(self, module: Module) -> ModuleResolution:
        return await self.service.resolution_of(module)

    async def code_of(self, module: Module, address: int) -> CodeLookup:
        return await self.service.code_of(module, address)

    async def data_of(self, module: Module, address: int) -> DataLookup:
        return await self.service.data_of(module, address)

    async def codes_of(self, places: Sequence[tuple[Module, int]]) -> list[CodeLookup]:
        return await self.service.codes_of(places)

    async def declaration_of(
        self, module: Module, name: str, address: int | None = None
    ) -> Declaration | None:
        symbolizer = self.service.symbolizer
        return await self.service.run(symbolizer.declaration_of, module, name, address)

    async def address_of(self, module: Module, name: str) -> int | None:
        binary = (await self.service.resolution_of(module)).binary
        if binary is None:
            return None
        return await self.service.run(self.tables.address, binary, name)

    async def source_of(self, path: str, build_id: str) -> str | None:
        return await self.service.run(self.sources.find, path, build_id)
