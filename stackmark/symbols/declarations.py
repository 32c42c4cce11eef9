"""Where a module's functions and variables are declared: the symbolizer's answer.

Front ends (the language server's go to definition, llvm-symbolizer-stackmark's
`DATA` answers) ask `Symbolizer.declaration_of` and never read DWARF
themselves. The answer comes from the DWARF of the file that answers for
the module (`stackmark.dwarf.declarations.DeclarationIndex`, read once per
file, on the first question about it); a module answered by a GSYM file or
a file without DWARF has no declarations, and the answer is None.
"""

from __future__ import annotations

from _thread import allocate_lock
from typing import TYPE_CHECKING

from stackmark.errors import StackmarkError
from stackmark.plain import FrozenRecord

if TYPE_CHECKING:  # the DWARF reader is imported on the first question only
    from stackmark.dwarf.declarations import DeclarationIndex
    from stackmark.dwarf.supplementary import SupplementaryLoad


class Declaration(FrozenRecord):
    """A declaration's source location: DW_AT_decl_file and DW_AT_decl_line."""

    __slots__ = _fields = __match_args__ = ("file", "line")
    file: str
    line: int

    def __init__(self, file: str, line: int) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "line", line)


class DeclarationFinder:
    """Declaration indexes per file, each built on its first question (thread-safe);
    a dwz supplementary file is asked of `load_supplementary` (the symbol store's)."""

    def __init__(self, load_supplementary: SupplementaryLoad | None = None) -> None:
        self._load_supplementary = load_supplementary
        self._indexes: dict[str, DeclarationIndex | None] = {}
        self._lock = allocate_lock()

    def _index(self, path: str) -> DeclarationIndex | None:
        with self._lock:
            if path not in self._indexes:
                from stackmark.dwarf.declarations import DeclarationIndex

                try:
                    self._indexes[path] = DeclarationIndex(path, self._load_supplementary)
                except (StackmarkError, OSError):
                    self._indexes[path] = None  # a GSYM file, or no DWARF at all
            return self._indexes[path]

    def find(self, path: str, name: str, address: int | None = None) -> Declaration | None:
        """The declaration in the file at `path`: of the variable at `address` (else of the
        one whose linkage name is `name`) when `address` is given, else of the function
        whose linkage (or plain) name is `name`."""
        index = self._index(path)
        if index is None:
            return None
        if address is not None:
            place = index.variable(address, name)
        else:
            place = index.function(name)
        return Declaration(*place) if place is not None else None
