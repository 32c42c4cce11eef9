"""Data shared by every part of stackmark: modules, segments, frames.

One model, used everywhere: the markup context describes a process with
`Module` and `Segment`; symbol sources answer with `SourceFrame` chains;
the unwinder, CBF and markup emission share `BacktraceFrame`.
"""

from __future__ import annotations

import enum

from stackmark.plain import FrozenRecord, Record

# Plain records rather than dataclasses: this module is on the start-up path
# of every command (see stackmark/plain.py); they behave as the frozen (or
# not) slotted dataclasses they were.

# ---------------------------------------------------------------------------
# Process layout
# ---------------------------------------------------------------------------


class Segment(FrozenRecord):
    """One mapped piece of a module (markup `mmap`, an ELF PT_LOAD at run time).

    `module_relative` is the address in the module's own (ELF virtual
    address) space that `start` corresponds to.
    """

    __slots__ = _fields = __match_args__ = ("start", "size", "mode", "module_relative")
    start: int
    size: int
    mode: str  # subset of "rwx", in that order
    module_relative: int

    def __init__(self, start: int, size: int, mode: str, module_relative: int) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "start", start)
        setattr_(self, "size", size)
        setattr_(self, "mode", mode)
        setattr_(self, "module_relative", module_relative)

    @property
    def end(self) -> int:
        """One past the last byte."""
        return self.start + self.size

    def contains(self, address: int) -> bool:
        return self.start <= address < self.start + self.size

    def to_module_relative(self, address: int) -> int:
        return address - self.start + self.module_relative


class Module(Record):
    """A loaded object: executable or shared library.

    `id` is the markup module ID (for modules not from markup, the index in
    the process' module list). `build_id` is lower-case hex, "" when unknown.
    `path` is where the debugger/core found the file, when known.
    """

    __slots__ = _fields = __match_args__ = ("id", "name", "build_id", "segments", "path")
    id: int
    name: str
    build_id: str
    segments: list[Segment]
    path: str | None

    def __init__(
        self,
        id: int,
        name: str,
        build_id: str,
        segments: list[Segment] | None = None,
        path: str | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.build_id = build_id
        self.segments = [] if segments is None else segments
        self.path = path

    @property
    def load_bias(self) -> int:
        """Runtime address minus module-relative address (0 for ET_EXEC)."""
        if not self.segments:
            return 0
        first = min(self.segments, key=lambda s: s.start)
        return first.start - first.module_relative

    @property
    def has_no_file(self) -> bool:
        """The kernel's vDSO (or another module the kernel maps): no file on any disk
        holds it, so being unresolved is expected, not a problem to warn about."""
        return self.name in FILELESS_MODULE_NAMES


FILELESS_MODULE_NAMES = frozenset(
    {
        "linux-vdso.so.1",  # the vDSO as glibc's dl_iterate_phdr names it (x86-64, arm64)
        "linux-gate.so.1",  # i386
        "linux-vdso64.so.1",  # ppc64, s390x
        "linux-vdso32.so.1",
        "[vdso]",  # as /proc/PID/maps, GDB and LLDB name it
        "[vsyscall]",
    }
)
"""Names of modules the kernel maps with no file behind them."""


# ---------------------------------------------------------------------------
# Symbolization results
# ---------------------------------------------------------------------------


class SourceFrame(FrozenRecord):
    """One entry of an inline chain at an address.

    `linkage_name` is the mangled name when known, `name` the short
    (DW_AT_name) name. `file` is None and `line` 0 when unknown (symbol
    table only). `column` is 0 when unknown.

    `__init__` only assigns the fields: the compiled GSYM cache lookup
    (`stackmark/_native/_gsym_lookup.c`) fills the slots of new frames the
    same way without calling it.
    """

    __slots__ = _fields = __match_args__ = ("linkage_name", "name", "file", "line", "column")
    linkage_name: str | None
    name: str | None
    file: str | None
    line: int
    column: int

    def __init__(
        self,
        linkage_name: str | None,
        name: str | None,
        file: str | None,
        line: int,
        column: int = 0,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "linkage_name", linkage_name)
        setattr_(self, "name", name)
        setattr_(self, "file", file)
        setattr_(self, "line", line)
        setattr_(self, "column", column)

    @property
    def function(self) -> str | None:
        """The best raw (undemangled) name: the linkage name, else the short name."""
        return self.linkage_name or self.name


class DataSymbol(FrozenRecord):
    """A symbol table entry covering a data address."""

    __slots__ = _fields = __match_args__ = ("name", "start", "size")
    name: str
    start: int
    size: int

    def __init__(self, name: str, start: int, size: int) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "name", name)
        setattr_(self, "start", start)
        setattr_(self, "size", size)


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


class BacktraceFrame(FrozenRecord):
    """One physical frame of a backtrace.

    `address` is the runtime address as recorded (not adjusted by -1).
    `count` is only meaningful for OMITTED frames. `note` carries how the
    frame was found (e.g. "sframe", "frame pointer") for display.
    """

    __slots__ = _fields = __match_args__ = ("kind", "address", "count", "note")
    kind: FrameKind
    address: int
    count: int
    note: str

    def __init__(self, kind: FrameKind, address: int = 0, count: int = 0, note: str = "") -> None:
        setattr_ = object.__setattr__
        setattr_(self, "kind", kind)
        setattr_(self, "address", address)
        setattr_(self, "count", count)
        setattr_(self, "note", note)

    @property
    def lookup_address(self) -> int:
        """The address to symbolize: return addresses point after the call."""
        return self.address - 1 if self.kind is FrameKind.RA and self.address else self.address
