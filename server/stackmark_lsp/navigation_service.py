"""The server's answers to go to definition's questions (`NavigationLookups`, lookups.py).

`SymbolService` answers the address questions; declarations and function
addresses by name are asked of the core symbolizer (`Symbolizer.declaration_of`,
which reads a module's DWARF once, and `Symbolizer.address_of`, which asks the
module's symbol source: the ELF symbol table, or the function names of a GSYM
file); source files are looked for on this machine, through the
`sourcePathMap` prefix map, then on the debuginfod servers. Everything that
reads a file or the network runs in the service's worker threads.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, ModuleResolution
from stackmark.symbols.declarations import Declaration
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


class NavigationService:
    """`NavigationLookups` over the server's `SymbolService` (see the module docstring)."""

    def __init__(self, service: SymbolService, sources: SourceFinder):
        self.service = service
        self.sources = sources

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
        return await self.service.run(self._address_of, module, name)

    def _address_of(self, module: Module, name: str) -> int | None:
        """`Symbolizer.address_of` in a worker thread, under the lock the service's code
        lookups hold (they share the module's source, which a GSYM entry built in the
        background may replace)."""
        if self.service.resolve(module).binary is None:
            return None
        with self.service.lock:
            return self.service.symbolizer.address_of(module, name)

    async def source_of(self, path: str, build_id: str) -> str | None:
        return await self.service.run(self.sources.find, path, build_id)
