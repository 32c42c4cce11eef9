"""Addresses in markup elements -> placements in the context -> symbols.

The one place where the markup core asks a `SymbolizerAPI`. A failure to
find or read symbols never escapes as an exception: it becomes the
result's `error`, which the filter reports and renders around.
"""

from __future__ import annotations

from stackmark.errors import StackmarkError
from stackmark.markup.context import MarkupContext, Placement
from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.plain import Record
from stackmark.symbols.api import Failure, ModuleResolution, Reason, SymbolizerAPI


class CodeResult(Record):
    """A code address: where it lies and the inline chain there (innermost first).

    `placement` is None when no mmap covers the address. `error` is set when
    the module's symbols could not be found or read; `frames` is empty then,
    and also when the symbols say nothing about the address.
    """

    __slots__ = _fields = ("address", "placement", "frames", "error", "resolution")
    address: int  # the address looked up (after any -1 adjustment)
    placement: Placement | None
    frames: list[SourceFrame]
    error: str | None
    resolution: ModuleResolution | None

    def __init__(
        self,
        address: int,
        placement: Placement | None,
        frames: list[SourceFrame] | None = None,
        error: str | None = None,
        resolution: ModuleResolution | None = None,
    ) -> None:
        self.address = address
        self.placement = placement
        self.frames = [] if frames is None else frames
        self.error = error
        self.resolution = resolution


class DataResult(Record):
    """A data address: where it lies and the symbol covering it, if any."""

    __slots__ = _fields = ("address", "placement", "symbol", "error", "resolution")
    address: int
    placement: Placement | None
    symbol: DataSymbol | None
    error: str | None
    resolution: ModuleResolution | None

    def __init__(
        self,
        address: int,
        placement: Placement | None,
        symbol: DataSymbol | None = None,
        error: str | None = None,
        resolution: ModuleResolution | None = None,
    ) -> None:
        self.address = address
        self.placement = placement
        self.symbol = symbol
        self.error = error
        self.resolution = resolution


_CACHE_LIMIT = 1 << 16


class Resolver:
    """Asks the symbolizer about addresses placed by a context.

    Answers are remembered per (build ID, module-relative address): a log
    repeats the same frames in crash after crash, at different load
    addresses.
    """

    def __init__(self, symbolizer: SymbolizerAPI, cache_size: int = _CACHE_LIMIT) -> None:
        self.symbolizer = symbolizer
        self.cache_size = cache_size
        self._code: dict[tuple[str, int], tuple[list[SourceFrame], str | None]] = {}

    def module(self, module: Module) -> ModuleResolution:
        """Where the module's symbols come from (a `failure` when nowhere)."""
        try:
            resolution = self.symbolizer.resolve(module)
        except (StackmarkError, OSError) as exc:
            return ModuleResolution(module.build_id, None, Failure(Reason.RESOLVE_ERROR, str(exc)))
        if resolution.binary is None and resolution.failure is None:
            resolution.failure = Failure(Reason.NOT_FOUND)
        return resolution

    def code(self, context: MarkupContext, address: int) -> CodeResult:
        placement = context.place(address)
        result = CodeResult(address, placement)
        if placement is None:
            return result
        module = placement.module
        result.resolution = self.module(module)
        result.frames, result.error = self.code_at(module, placement.module_relative)
        return result

    def code_at(self, module: Module, module_relative: int) -> tuple[list[SourceFrame], str | None]:
        """(frames, error) at a module-relative address (what `code` answers once the
        address is placed; callers that placed it already ask this)."""
        key = (module.build_id, module_relative)
        known = self._code.get(key)
        if known is None:
            known = self._ask_code(module, module_relative, self.module(module))
            if len(self._code) >= self.cache_size:
                self._code.clear()
            self._code[key] = known
        return known

    def _ask_code(
        self, module: Module, address: int, resolution: ModuleResolution
    ) -> tuple[list[SourceFrame], str | None]:
        """(frames, error) for one module-relative address."""
        if resolution.binary is None:
            return [], resolution.error
        try:
            lookup = self.symbolizer.code(module, address)
        except (StackmarkError, OSError) as exc:
            return [], str(exc)
        if not lookup.frames and lookup.resolution.error:
            return [], lookup.resolution.error  # the file was found but cannot be read
        return list(lookup.frames), None

    def data(self, context: MarkupContext, address: int) -> DataResult:
        placement = context.place(address)
        result = DataResult(address, placement)
        if placement is None:
            return result
        resolution = result.resolution = self.module(placement.module)
        if resolution.binary is None:
            result.error = resolution.error
            return result
        try:
            lookup = self.symbolizer.data(placement.module, placement.module_relative)
        except (StackmarkError, OSError) as exc:
            result.error = str(exc)
            return result
        result.symbol = lookup.symbol
        return result
