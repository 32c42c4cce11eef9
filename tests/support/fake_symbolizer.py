"""A small in-memory `SymbolizerAPI` for unit tests of front ends.

Modules are known by build ID; code answers come from a table of
(start, end) ranges -> inline chain, data answers from a list of symbols.
Every question is logged in `calls`, so a test can check what was asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.symbols.api import CodeLookup, DataLookup, Failure, ModuleResolution, Reason


@dataclass
class FakeBinary:
    path: str
    code: list[tuple[int, int, list[SourceFrame]]] = field(default_factory=list)
    data: list[DataSymbol] = field(default_factory=list)


class FakeSymbolizer:
    def __init__(self, binaries: dict[str, FakeBinary] | None = None) -> None:
        self.binaries = binaries or {}
        self.calls: list[tuple[str, str, int]] = []

    def resolve(self, module: Module) -> ModuleResolution:
        binary = self.binaries.get(module.build_id)
        if binary is None:
            return ModuleResolution(
                module.build_id, None, Failure(Reason.NOT_FOUND), searched=["/nowhere"]
            )
        return ModuleResolution(module.build_id, binary.path, has_debug_info=True)

    def code(self, module: Module, address: int) -> CodeLookup:
        self.calls.append(("code", module.build_id, address))
        resolution = self.resolve(module)
        binary = self.binaries.get(module.build_id)
        frames: list[SourceFrame] = []
        if binary is not None:
            for start, end, chain in binary.code:
                if start <= address < end:
                    frames = list(chain)
                    break
        return CodeLookup(resolution, address, frames)

    def data(self, module: Module, address: int) -> DataLookup:
        self.calls.append(("data", module.build_id, address))
        resolution = self.resolve(module)
        binary = self.binaries.get(module.build_id)
        symbol = None
        if binary is not None:
            for sym in binary.data:
                if sym.start <= address < sym.start + max(sym.size, 1):
                    symbol = sym
                    break
        return DataLookup(resolution, address, symbol)


class FakeLookups:
    """The language server's `Lookups` (stackmark_lsp/lookups.py) over a `FakeSymbolizer`,
    answered at once: feature modules run without a server and without threads."""

    def __init__(self, symbolizer: FakeSymbolizer) -> None:
        self.symbolizer = symbolizer

    async def resolution_of(self, module: Module) -> ModuleResolution:
        return self.symbolizer.resolve(module)

    async def code_of(self, module: Module, address: int) -> CodeLookup:
        return self.symbolizer.code(module, address)

    async def data_of(self, module: Module, address: int) -> DataLookup:
        return self.symbolizer.data(module, address)

    async def codes_of(self, places: Sequence[tuple[Module, int]]) -> list[CodeLookup]:
        return [self.symbolizer.code(module, address) for module, address in places]
