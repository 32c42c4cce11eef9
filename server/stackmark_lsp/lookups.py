"""The questions a feature module asks about addresses, from the event loop.

Feature modules (hover.py, hints.py) take this protocol rather than the
server's `SymbolService`, so that they can be tested without a server and
without binaries, over an in-memory symbolizer. `SymbolService`
(symbolization.py) answers them in the server: from remembered answers or
GSYM lookups at once, otherwise in its worker threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, ModuleResolution


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
