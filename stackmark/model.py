"""Data shared by every part of stackmark: modules, segments, frames.

One model, used everywhere: the markup context describes a process with
`Module` and `Segment`; symbol sources answer with `SourceFrame` chains;
the unwinder, CBF and markup emission share `BacktraceFrame`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------
# Process layout
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """One mapped piece of a module (markup `mmap`, an ELF PT_LOAD at run time).

    `module_relative` is the address in the module's own (ELF virtual
    address) space that `start` corresponds to.
    """

    start: int
    size: int
    mode: str  # subset of "rwx", in that order
    module_relative: int

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.start + self.size

    def contains(self, address: int) -> bool:
        return self.start <= address < self.start + self.size

    def to_module_relative(self, address: int) -> int:
        return address - self.start + self.module_relative


@dataclass(slots=True)
class Module:
    """A loaded object: executable or shared library.

    `id` is the markup module ID (for modules not from markup, the index in
    the process' module list). `build_id` is lower-case hex, "" when unknown.
    `path` is where the debugger/core found the file, when known.
    """

    id: int
    name: str
    build_id: str
    segments: list[Segment] = field(default_factory=list)
    path: str | None = None

    @property
    def load_bias(self) -> int:
        """Runtime address minus module-relative address (0 for ET_EXEC)."""
        if not self.segments:
            return 0
        first = min(self.segments, key=lambda s: s.start)
        return first.start - first.module_relative


# ---------------------------------------------------------------------------
# Symbolization results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceFrame:
    """One entry of an inline chain at an address.

    `linkage_name` is the mangled name when known, `name` the short
    (DW_AT_name) name. `file` is None and `line` 0 when unknown (symbol
    table only). `column` is 0 when unknown.
    """

    linkage_name: str | None
    name: str | None
    file: str | None
    line: int
    column: int = 0

    @property
    def function(self) -> str | None:
        """The best raw (undemangled) name: the linkage name, else the short name."""
        return self.linkage_name or self.name


@dataclass(frozen=True, slots=True)
class DataSymbol:
    """A symbol table entry covering a data address."""

    name: str
    start: int
    size: int


# ---------------------------------------------------------------------------
# Backtraces (unwinder output, markup `bt`, CBF)
# ---------------------------------------------------------------------------


class FrameKind(enum.Enum):
    """What a backtrace address means.

    PC: a precise program counter (frame 0, or a frame interrupted by a
    signal); RA: a return address (callers); ASYNC: a Swift async resume
    point (CBF only). OMITTED and TRUNCATED are CBF markers with no address.
    """

    PC = "pc"
    RA = "ra"
    ASYNC = "async"
    OMITTED = "omitted"
    TRUNCATED = "truncated"


@dataclass(frozen=True, slots=True)
class BacktraceFrame:
    """One physical frame of a backtrace.

    `address` is the runtime address as recorded (not adjusted by -1).
    `count` is only meaningful for OMITTED frames. `note` carries how the
    frame was found (e.g. "sframe", "frame pointer") for display.
    """

    kind: FrameKind
    address: int = 0
    count: int = 0
    note: str = ""

    @property
    def lookup_address(self) -> int:
        """The address to symbolize: return addresses point after the call."""
        return self.address - 1 if self.kind is FrameKind.RA and self.address else self.address
