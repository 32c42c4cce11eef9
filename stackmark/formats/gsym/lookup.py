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

from dataclasses import dataclass, field

from stackmark.errors import StackmarkError


class GsymLookupError(StackmarkError):
    """The address has no answer in this GSYM (the text llvm-gsymutil prints after "error: ")."""


@dataclass(frozen=True, slots=True)
class SourceLocation:
    name: str
    offset: int = 0
    dir: str = ""
    base: str = ""
    line: int = 0

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


@dataclass(slots=True)
class LookupResult:
    address: int
    start: int
    size: int
    name: str
    locations: list[SourceLocation] = field(default_factory=list)

    def text(self) -> str:
        """The lines llvm-gsymutil prints for this result (ending in a newline)."""
        parts = []
        last = len(self.locations) - 1
        for i, loc in enumerate(self.locations):
            parts.append(loc.text() + (" [inlined]" if i != last else ""))
        return f"0x{self.address:016x}: " + ("\n" + " " * 20).join(parts) + "\n"


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
