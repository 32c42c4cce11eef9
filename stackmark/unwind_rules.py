"""Unwind rules for one row of a stack-trace table.

The contract between table readers (SFrame, and SFrame generated from DWARF
CFI) and the unwinder: "at this PC, the caller's CFA, return address and
frame pointer are found like this". Registers are DWARF register numbers of
the architecture (`Arch` gives the SP, FP and RA numbers).

Shared vocabulary, beside `stackmark/model.py`: the formats that produce
rows (`formats/sframe`) and the unwinder that follows them (`unwind/`)
both import it, and it imports neither.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Arch(enum.Enum):
    """Architectures stackmark unwinds, with their DWARF register numbers."""

    AMD64 = "amd64"
    AARCH64 = "aarch64"
    S390X = "s390x"

    @property
    def sp(self) -> int:
        return {Arch.AMD64: 7, Arch.AARCH64: 31, Arch.S390X: 15}[self]

    @property
    def fp(self) -> int:
        return {Arch.AMD64: 6, Arch.AARCH64: 29, Arch.S390X: 11}[self]

    @property
    def ra(self) -> int:
        """The return-address column (rip for AMD64, x30/LR for AArch64, r14 for s390x)."""
        return {Arch.AMD64: 16, Arch.AARCH64: 30, Arch.S390X: 14}[self]

    @property
    def pointer_size(self) -> int:
        return 8


class RuleKind(enum.Enum):
    """How a register of the caller is recovered."""

    UNDEFINED = "undefined"  # no value: for the RA, this is the outermost frame
    SAME = "same"  # unchanged from the callee (e.g. FP not saved)
    AT = "at"  # stored in memory at base + offset
    VALUE = "value"  # equal to base + offset (no memory read)


CFA = -1
"""`ValueRule.base` meaning "the CFA of this frame" rather than a register."""


@dataclass(frozen=True, slots=True)
class ValueRule:
    """How to get one caller register: from `base` (CFA or a register) and `offset`."""

    kind: RuleKind
    base: int = CFA
    offset: int = 0

    @staticmethod
    def undefined() -> ValueRule:
        return ValueRule(RuleKind.UNDEFINED)

    @staticmethod
    def same() -> ValueRule:
        return ValueRule(RuleKind.SAME)

    @staticmethod
    def at_cfa(offset: int) -> ValueRule:
        return ValueRule(RuleKind.AT, CFA, offset)


@dataclass(frozen=True, slots=True)
class UnwindRow:
    """The unwind rules that hold for module-relative PCs in [start, end).

    CFA = (register `cfa_register` + `cfa_offset`), read from memory there
    when `cfa_deref` is set (v3 flex FDEs, e.g. DRAP functions).
    `ra_mangled`: the RA carries a pointer-authentication code to strip
    (AArch64). `signal_frame`: this function is a signal trampoline.
    `outermost`: nothing calls this frame (stop unwinding here).
    """

    start: int
    end: int
    cfa_register: int
    cfa_offset: int
    ra: ValueRule
    fp: ValueRule
    cfa_deref: bool = False
    ra_mangled: bool = False
    signal_frame: bool = False
    outermost: bool = False
