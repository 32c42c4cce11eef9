"""What a symbolizer answers, and the interface front ends program against.

Front ends (the markup filter, the language server, the debugger plugins)
only see `SymbolizerAPI`; `stackmark.symbols.symbolizer.Symbolizer` is the
implementation over files found by build ID (DWARF, symbol table, GSYM).
All addresses here are module-relative (ELF virtual addresses).
"""

from __future__ import annotations

from typing import Protocol

from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.plain import Record

# Plain records rather than dataclasses (start-up time, see stackmark/plain.py).


class ModuleResolution(Record):
    """Where the symbols of a module come from, or why none were found.

    `binary` is the file that answers lookups (a debug file or the binary
    itself); None when nothing was found, in which case `error` says why
    (e.g. 'could not find build ID') and `searched` lists what was tried.
    `mismatched` lists the files at the module's own path (or name) that
    carry another build ID, as (path, build ID there or None): the program
    was most likely rebuilt after it ran.
    """

    __slots__ = _fields = __match_args__ = (
        "build_id",
        "binary",
        "error",
        "searched",
        "has_debug_info",
        "mismatched",
    )
    build_id: str
    binary: str | None
    error: str | None
    searched: list[str]
    has_debug_info: bool
    mismatched: list[tuple[str, str | None]]

    def __init__(
        self,
        build_id: str,
        binary: str | None,
        error: str | None = None,
        searched: list[str] | None = None,
        has_debug_info: bool = False,
        mismatched: list[tuple[str, str | None]] | None = None,
    ) -> None:
        self.build_id = build_id
        self.binary = binary
        self.error = error
        self.searched = [] if searched is None else searched
        self.has_debug_info = has_debug_info
        self.mismatched = [] if mismatched is None else mismatched


class CodeLookup(Record):
    """Result for one code address.

    `frames` is the inline chain, innermost first, the physical function
    last; empty when nothing is known about the address.
    """

    __slots__ = _fields = __match_args__ = ("resolution", "address", "frames")
    resolution: ModuleResolution
    address: int
    frames: list[SourceFrame]

    def __init__(
        self, resolution: ModuleResolution, address: int, frames: list[SourceFrame] | None = None
    ) -> None:
        self.resolution = resolution
        self.address = address
        self.frames = [] if frames is None else frames


class DataLookup(Record):
    """Result for one data address: the symbol covering it, if any."""

    __slots__ = _fields = __match_args__ = ("resolution", "address", "symbol")
    resolution: ModuleResolution
    address: int
    symbol: DataSymbol | None

    def __init__(
        self, resolution: ModuleResolution, address: int, symbol: DataSymbol | None = None
    ) -> None:
        self.resolution = resolution
        self.address = address
        self.symbol = symbol


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
