"""The language server's `NavigationLookups` (stackmark_lsp/lookups.py) in memory, for
tests of go to definition without a server: `FakeLookups` plus tables of
declarations, symbol addresses and source files."""

from __future__ import annotations

from stackmark.model import Module
from stackmark.symbols.declarations import Declaration
from tests.support.fake_symbolizer import FakeLookups, FakeSymbolizer


class FakeNavigationLookups(FakeLookups):
    """Declarations by (build ID, name, address or None), function addresses by (build ID,
    name), and source files by path (a file absent from `sources` is not found). The
    questions asked are logged in `asked`."""

    def __init__(
        self,
        symbolizer: FakeSymbolizer,
        declarations: dict[tuple[str, str, int | None], Declaration] | None = None,
        addresses: dict[tuple[str, str], int] | None = None,
        sources: dict[str, str] | None = None,
    ) -> None:
        super().__init__(symbolizer)
        self.declarations = declarations or {}
        self.addresses = addresses or {}
        self.sources = sources or {}
        self.asked: list[tuple[str, ...]] = []

    async def declaration_of(
        self, module: Module, name: str, address: int | None = None
    ) -> Declaration | None:
        where = "-" if address is None else hex(address)
        self.asked.append(("declaration", module.build_id, name, where))
        return self.declarations.get((module.build_id, name, address))

    async def address_of(self, module: Module, name: str) -> int | None:
        self.asked.append(("address", module.build_id, name))
        return self.addresses.get((module.build_id, name))

    async def source_of(self, path: str, build_id: str) -> str | None:
        self.asked.append(("source", path, build_id))
        return self.sources.get(path)
