"""The questions a feature module asks about addresses, from the event loop.

Feature modules (hover.py, hints.py, navigation.py) take these protocols rather than the
server's `SymbolService`, so that they can be tested without a server and
without binaries, over an in-memory symbolizer. `SymbolService`
(symbolization.py) answers `Lookups` in the server: from remembered answers or
GSYM lookups at once, otherwise in its worker threads; `NavigationService`
(navigation_service.py) adds the questions of go to definition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, ModuleResolution
from stackmark.symbols.declarations import Declaration


class Lookups(Protocol):
    """`SymbolizerAPI`'s three questions, awaited, and one batch of code questions."""

    async def resolution_of(self, module: Module) -> ModuleResolution:
        """Where `module`'s symbols are, or why none were found."""
        ...

    async def code_of(self, module: Module, address: int) -> CodeLookup:
        """The inline chain at module-relative `address`."""
        ...

    async def data_of(self, module: Module, address: int) -> DataLookup:
        """The data symbol covering module-relative `address`."""
        ...

    async def codes_of(self, places: Sequence[tuple[Module, int]]) -> list[CodeLookup]:
        """`code_of` for each (module, address), in one trip (a screenful of hints)."""
        ...


class NavigationLookups(Lookups, Protocol):
    """`Lookups` and the questions of go to definition (navigation.py): where a name is
    declared, a function's address by its symbol, and a readable copy of a source file."""

    async def declaration_of(
        self, module: Module, name: str, address: int | None = None
    ) -> Declaration | None:
        """`Symbolizer.declaration_of`: the variable at `address` when given, else the
        function named `name` (None without DWARF)."""
        ...

    async def address_of(self, module: Module, name: str) -> int | None:
        """`Symbolizer.address_of`: the module-relative address of the function whose
        linkage name is `name` (the ELF symbol table, or a GSYM file's function names)."""
        ...

    async def source_of(self, path: str, build_id: str) -> str | None:
        """A readable copy of source file `path` of build `build_id` (may download)."""
        ...
