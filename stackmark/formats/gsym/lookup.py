"""What a GSYM lookup returns, and the text llvm-gsymutil prints for it.

A lookup yields source locations innermost first: the deepest inlined
function (with the line-table row's file and line), then each caller at its
call site, the concrete function last. `offset` is the address minus the
start of that function's first range (the function start for the last).

    0x00000000000011d5: leaf + 2 @ /src/inline.c:17 [inlined]
                        compute + 37 @ /src/inline.c:39
    0x0000000000001300: error: address 0x1300 is not in GSYM
"""

from __future__ import annotations

from stackmark.errors import StackmarkError
from stackmark.plain import FrozenRecord, Record


class GsymLookupError(StackmarkError):
    """The address has no answer in this GSYM (the text llvm-gsymutil prints after "error: ")."""


class SourceLocation(FrozenRecord):
    """One location of a lookup: a function, the offset into it, and a file and line
    when the line table gives them. (Plain records here, not dataclasses: the
    cache's warm lookups import this module; see stackmark.plain.)"""

    __slots__ = _fields = __match_args__ = ("name", "offset", "dir", "base", "line")
    name: str
    offset: int
    dir: str
    base: str
    line: int

    def __init__(
        self, name: str, offset: int = 0, dir: str = "", base: str = "", line: int = 0
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "offset", offset)
        setattr_(self, "dir", dir)
        setattr_(self, "base", base)
        setattr_(self, "line", line)

    @property
    def path(self) -> str | None:
        """dir/base joined, or None when the location has no file."""
        if not self.dir and not self.base:
            return None
        return join_path(self.dir, self.base)

    def text(self) -> str:
        """`name [+ N] [@ path:line]` as llvm-gsymutil prints a location."""
        out = self.name
        if self.offset > 0:
            out += f" + {self.offset}"
        if self.dir or self.base:
            out += " @ "
            if self.dir:
                out += self.dir + path_separator(self.dir)
            out += self.base if self.base else "<invalid-file>"
            out += f":{self.line}"
        return out


class LookupResult(Record):
    """The answer at `address`: the function holding it and its locations, innermost
    first; `call_sites`, the names the call returning to `address` may call (only
    `GsymReader.lookup_all` reads them, as only LLVM's `lookupAll` prints them)."""

    __slots__ = _fields = __match_args__ = (
        "address",
        "start",
        "size",
        "name",
        "locations",
        "call_sites",
    )
    address: int
    start: int
    size: int
    name: str
    locations: list[SourceLocation]
    call_sites: list[str]

    def __init__(
        self,
        address: int,
        start: int,
        size: int,
        name: str,
        locations: list[SourceLocation] | None = None,
        call_sites: list[str] | None = None,
    ) -> None:
        self.address = address
        self.start = start
        self.size = size
        self.name = name
        self.locations = [] if locations is None else locations
        self.call_sites = [] if call_sites is None else call_sites

    def text(self) -> str:
        """The lines llvm-gsymutil prints for this result (ending in a newline)."""
        parts = []
        last = len(self.locations) - 1
        for i, loc in enumerate(self.locations):
            parts.append(loc.text() + (" [inlined]" if i != last else ""))
        text = f"0x{self.address:016x}: " + ("\n" + " " * 20).join(parts)
        if self.call_sites:
            text += "\n      CallSites: " + ", ".join(self.call_sites)
        return text + "\n"


def error_text(address: int, message: str) -> str:
    """The line llvm-gsymutil prints when a lookup fails."""
    return f"0x{address:016x}: error: {message}\n"


def path_separator(directory: str) -> str:
    """`\\` for a Windows-style directory (has \\ and no /), else `/`."""
    return "\\" if "\\" in directory and "/" not in directory else "/"


def join_path(directory: str, base: str) -> str:
    """`directory` and `base` joined as LLVM's path append does (no doubled separator)."""
    if not directory:
        return base
    if not base:
        return directory
    if directory.endswith("/"):
        return directory + base
    return directory + path_separator(directory) + base
