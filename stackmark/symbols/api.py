"""What a symbolizer answers, and the interface front ends program against.

Front ends (the markup filter, the language server, the debugger plugins)
only see `SymbolizerAPI`; `stackmark.symbols.symbolizer.Symbolizer` is the
implementation over files found by build ID (DWARF, symbol table, GSYM).
All addresses here are module-relative (ELF virtual addresses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from stackmark.model import DataSymbol, Module, SourceFrame


@dataclass(slots=True)
class ModuleResolution:
    """Where the symbols of a module come from, or why none were found.

    `binary` is the file that answers lookups (a debug file or the binary
    itself); None when nothing was found, in which case `error` says why
    (e.g. 'could not find build ID') and `searched` lists what was tried.
    """

    build_id: str
    binary: str | None
    error: str | None = None
    searched: list[str] = field(default_factory=list)
    has_debug_info: bool = False


@dataclass(slots=True)
class CodeLookup:
    """Result for one code address.

    `frames` is the inline chain, innermost first, the physical function
    last; empty when nothing is known about the address.
    """

    resolution: ModuleResolution
    address: int
    frames: list[SourceFrame] = field(default_factory=list)


@dataclass(slots=True)
class DataLookup:
    """Result for one data address: the symbol covering it, if any."""

    resolution: ModuleResolution
    address: int
    symbol: DataSymbol | None = None


class SymbolizerAPI(Protocol):
    """The questions every front end asks."""

    def resolve(self, module: Module) -> ModuleResolution:
        """Find (and remember) the file that answers for `module`."""
        ...

    def code(self, module: Module, address: int) -> CodeLookup:
        """Inline chain at module-relative `address` (already -1 adjusted)."""
        ...

    def data(self, module: Module, address: int) -> DataLookup:
        """Data symbol covering module-relative `address`."""
        ...
