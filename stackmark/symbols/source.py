"""The seam between the Symbolizer and whatever answers for one module's files.

A `SymbolSource` answers two questions about module-relative addresses:
the inline chain at a code address (innermost first), and the symbol
covering a data address; and one about names: the address of a function
by its linkage name (go to definition of a `symbol` element). The
Symbolizer builds one per module from the files the store found
(`ModuleFiles`) by trying a list of `SourceFactory` callables in order; the
first that returns a source wins. The default list has the DWARF +
symbol-table source (`stackmark.symbols.elf_source`); a GSYM cache plugs in
by putting its factory first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from stackmark.model import DataSymbol, SourceFrame

if TYPE_CHECKING:
    from stackmark.dwarf.split_files import SplitDwarfLoad
    from stackmark.dwarf.supplementary import SupplementaryLoad


class ModuleFiles:
    """The files found for one build ID.

    `binary` is the file whose build ID matched (a plain binary, or a debug
    file found under a debug-file directory). `debug` is a separate file
    with the DWARF, when `binary` is stripped and names one through
    `.gnu_debuglink`; None otherwise. `how` says where `binary` was found.
    `load_supplementary` finds a dwz supplementary file where the store looks,
    `load_split` the .dwp and .dwo files of split DWARF (None: none is looked
    for); the module's DWARF source and its GSYM cache conversion both ask
    them. (A plain class rather than a dataclass: it is on the start-up path.)
    """

    __slots__ = ("binary", "build_id", "debug", "how", "load_split", "load_supplementary")

    def __init__(
        self,
        build_id: str,
        binary: str,
        debug: str | None = None,
        how: str = "",
        load_supplementary: SupplementaryLoad | None = None,
        load_split: SplitDwarfLoad | None = None,
    ):
        self.build_id = build_id
        self.binary = binary
        self.debug = debug
        self.how = how
        self.load_supplementary = load_supplementary
        self.load_split = load_split

    def _key(self) -> tuple[str, str, str | None, str]:
        return (self.build_id, self.binary, self.debug, self.how)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModuleFiles) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"ModuleFiles(build_id={self.build_id!r}, binary={self.binary!r}, "
            f"debug={self.debug!r}, how={self.how!r})"
        )

    @property
    def dwarf_file(self) -> str:
        """The file whose DWARF answers (the debug file when there is one)."""
        return self.debug or self.binary


class SymbolSource(Protocol):
    """Answers lookups for one module (addresses are module-relative)."""

    @property
    def description(self) -> str:
        """What answers, for diagnostics: e.g. "DWARF in /usr/lib/debug/.build-id/ab/cd.debug"."""
        ...

    @property
    def has_debug_info(self) -> bool:
        """True when file and line information can be expected (not symbols alone)."""
        ...

    def frames_at(self, address: int) -> list[SourceFrame]:
        """The inline chain at a code address: innermost first, the physical function
        last; empty when nothing is known."""
        ...

    def data_at(self, address: int) -> DataSymbol | None:
        """The symbol covering a data address, or None."""
        ...

    def address_of(self, name: str) -> int | None:
        """The module-relative address of the function (or symbol) whose linkage name is
        `name`, as the source's files spell it, or None when they name none such."""
        ...

    def close(self) -> None:
        """Release files and memory."""
        ...


SourceFactory = Callable[[ModuleFiles], "SymbolSource | None"]
"""Builds a source for a module's files, or returns None to let the next factory try."""
