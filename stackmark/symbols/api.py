"""What a symbolizer answers, and the interface front ends program against.

Front ends (the markup filter, the language server, the debugger plugins)
only see `SymbolizerAPI`; `stackmark.symbols.symbolizer.Symbolizer` is the
implementation over files found by build ID (DWARF, symbol table, GSYM).
All addresses here are module-relative (ELF virtual addresses).

Why there is no answer is a `Failure`: a `Reason` callers branch on, and
the detail users read with it. A module's failure is on its
`ModuleResolution`; one address's is on that lookup's answer only.
"""

from __future__ import annotations

from enum import Enum, auto
from typing import Protocol

from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.plain import FrozenRecord, Record

# Plain records rather than dataclasses (start-up time, see stackmark/plain.py).


class Reason(Enum):
    """Why a module or an address has no symbols (model: blazesym's `Reason`).

    Callers branch on these; `Failure.message` gives the text users read."""

    NO_BUILD_ID = auto()
    INVALID_BUILD_ID = auto()
    """The build ID is not hexadecimal bytes (the detail quotes it)."""
    NOT_FOUND = auto()
    """No file with the module's build ID was found (see `searched`)."""
    UNREADABLE_MODULE = auto()
    """The module has no build ID, and the file at its path cannot be read."""
    UNREADABLE_SYMBOLS = auto()
    """Files were found, but no symbol source can read them (see `searched`)."""
    STILL_LOADING = auto()
    """A deadline came while the module was still being found or opened."""
    DEADLINE_PASSED = auto()
    RESOLVE_ERROR = auto()
    """Finding or opening the module failed with an error (the detail is its message)."""
    LOOKUP_ERROR = auto()
    """Reading the symbols at one address failed (the detail is the error's
    message): a lookup's failure, never a module's."""


_TEXTS = {
    # llvm-symbolizer's words where it has them: tests compare the two outputs.
    Reason.NO_BUILD_ID: "module has no build ID",
    Reason.INVALID_BUILD_ID: "invalid build ID {detail}: not hexadecimal bytes",
    Reason.NOT_FOUND: "could not find build ID",
    Reason.UNREADABLE_MODULE: "module has no build ID and its file cannot be read",
    Reason.UNREADABLE_SYMBOLS: "cannot read symbols",
    Reason.STILL_LOADING: "timed out: the symbol lookup for this module is still running",
    Reason.DEADLINE_PASSED: "timed out: the request's deadline passed",
    Reason.RESOLVE_ERROR: "{detail}",
    Reason.LOOKUP_ERROR: "{detail}",
}


class Failure(FrozenRecord):
    """A `Reason` and what it needs to be told (a bad build ID, an error's message)."""

    __slots__ = _fields = __match_args__ = ("reason", "detail")
    reason: Reason
    detail: str

    def __init__(self, reason: Reason, detail: str = "") -> None:
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "detail", detail)

    @property
    def message(self) -> str:
        """The failure as users read it."""
        return _TEXTS[self.reason].format(detail=self.detail)


class ModuleResolution(Record):
    """Where the symbols of a module come from, or why none were found.

    `binary` is the file that answers lookups (a debug file or the binary
    itself); None when nothing was found, in which case `failure` says why
    (e.g. `Reason.NOT_FOUND`) and `searched` lists the files tried.
    `mismatched` lists the files at the module's own path (or name) that
    carry another build ID, as (path, build ID there or None): the program
    was most likely rebuilt after it ran. A resolution is kept for as long
    as its module: a failed address lookup is never recorded here (it is on
    that lookup's answer).
    """

    __slots__ = _fields = __match_args__ = (
        "build_id",
        "binary",
        "failure",
        "searched",
        "has_debug_info",
        "mismatched",
    )
    build_id: str
    binary: str | None
    failure: Failure | None
    searched: list[str]
    has_debug_info: bool
    mismatched: list[tuple[str, str | None]]

    def __init__(
        self,
        build_id: str,
        binary: str | None,
        failure: Failure | None = None,
        searched: list[str] | None = None,
        has_debug_info: bool = False,
        mismatched: list[tuple[str, str | None]] | None = None,
    ) -> None:
        self.build_id = build_id
        self.binary = binary
        self.failure = failure
        self.searched = [] if searched is None else searched
        self.has_debug_info = has_debug_info
        self.mismatched = [] if mismatched is None else mismatched

    @property
    def reason(self) -> Reason | None:
        """Why no symbols were found (None when they were)."""
        return None if self.failure is None else self.failure.reason

    @property
    def error(self) -> str | None:
        """The failure as users read it (None when there is none)."""
        return None if self.failure is None else self.failure.message


class CodeLookup(Record):
    """Result for one code address.

    `frames` is the inline chain, innermost first, the physical function
    last; empty when nothing is known about the address. `failure` is set
    when the symbols could not be read at this address (a module's own
    failure is on `resolution`).
    """

    __slots__ = _fields = __match_args__ = ("resolution", "address", "frames", "failure")
    resolution: ModuleResolution
    address: int
    frames: list[SourceFrame]
    failure: Failure | None

    def __init__(
        self,
        resolution: ModuleResolution,
        address: int,
        frames: list[SourceFrame] | None = None,
        failure: Failure | None = None,
    ) -> None:
        self.resolution = resolution
        self.address = address
        self.frames = [] if frames is None else frames
        self.failure = failure


class DataLookup(Record):
    """Result for one data address: the symbol covering it, if any, or why the
    symbols could not be read there (`failure`; a module's own is on `resolution`)."""

    __slots__ = _fields = __match_args__ = ("resolution", "address", "symbol", "failure")
    resolution: ModuleResolution
    address: int
    symbol: DataSymbol | None
    failure: Failure | None

    def __init__(
        self,
        resolution: ModuleResolution,
        address: int,
        symbol: DataSymbol | None = None,
        failure: Failure | None = None,
    ) -> None:
        self.resolution = resolution
        self.address = address
        self.symbol = symbol
        self.failure = failure


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
