"""Find the SFrame row for a PC: FDE by binary search, then the FRE.

The FDE table is binary-searched when the header says it is sorted (and it
really is); otherwise it is scanned in table order, as relocatable objects
keep it. Inside a function the last FRE starting at or before the PC
applies; for PCMASK FDEs (PLT stubs) the PC is first reduced modulo the
repeat-block size (16 bytes for v1, which does not store it).

PCs and rows are in the section's link-time address space (ELF virtual
addresses, "module-relative" in stackmark's model); see `memory.py` for
sections read out of a running process.
"""

from __future__ import annotations

import bisect
import itertools
import os
from dataclasses import dataclass

from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import FrameRowEntry, FuncDescEntry, SFrameSection
from stackmark.formats.sframe.reader import SECTION_NAME, parse_sframe, read_sframe_file
from stackmark.formats.sframe.rules import RowInterpreter
from stackmark.unwind_rules import UnwindRow

V1_PCMASK_BLOCK = 16
"""Repeat-block size assumed for v1 PCMASK FDEs (AMD64 and AArch64 PLT entries)."""


@dataclass(frozen=True, slots=True)
class SFrameMatch:
    """The FDE and FRE that cover a PC, and the unwind row they give.

    `fre` is None for a v3 FDE without FREs (an outermost function).
    """

    fde: FuncDescEntry
    fre: FrameRowEntry | None
    row: UnwindRow


class SFrameTable:
    """Lookups over one decoded SFrame section."""

    def __init__(self, section: SFrameSection):
        self.section = section
        self.header = section.header
        fdes = section.fdes
        starts = [fde.start for fde in fdes]
        self._starts: list[int] | None = None
        if self.header.is_sorted and all(a <= b for a, b in itertools.pairwise(starts)):
            self._starts = starts
        self._fre_starts: dict[int, list[int]] = {}
        self._rows: dict[tuple[int, int], UnwindRow] = {}  # rows of PCINC FDEs, by FRE
        self._interpreter = RowInterpreter(self.header)

    @classmethod
    def from_bytes(cls, data: bytes, address: int = 0, *, source: str | None = None) -> SFrameTable:
        """A table over raw section bytes; FREs are decoded per function on first use."""
        return cls(parse_sframe(data, address, source=source, lazy=True))

    @classmethod
    def from_elf(cls, path: str | os.PathLike[str], *, name: str = SECTION_NAME) -> SFrameTable:
        """The table of the SFrame section `name` of the ELF file at `path`.

        FormatError when it has none, `EmptySFrameSection` when it is empty.
        """
        return cls(read_sframe_file(path, name=name, lazy=True))

    @property
    def binary_search(self) -> bool:
        """Whether lookups binary-search (sorted FDEs) or scan the table."""
        return self._starts is not None

    def find_fde(self, pc: int) -> FuncDescEntry | None:
        """The FDE whose [start, start+size) holds `pc`, or None."""
        index = self._fde_index(pc)
        return None if index < 0 else self.section.fdes[index]

    def _fde_index(self, pc: int) -> int:
        fdes = self.section.fdes
        if self._starts is not None:
            i = bisect.bisect_right(self._starts, pc) - 1
            if i >= 0 and pc < fdes[i].start + fdes[i].size:
                return i
            return -1
        for i, fde in enumerate(fdes):
            if fde.start <= pc < fde.start + fde.size:
                return i
        return -1

    def find(self, pc: int) -> SFrameMatch | None:
        """FDE, FRE and unwind row for `pc`, or None when SFrame does not cover it."""
        index = self._fde_index(pc)
        if index < 0:
            return None
        fde = self.section.fdes[index]
        header = self.header
        if not fde.fres:
            if header.version >= spec.VERSION_3 and not fde.is_flex:
                row = self._interpreter.row(fde, None, fde.start, fde.end)
                return SFrameMatch(fde, None, row)
            return None
        rel = pc - fde.start
        block_base = fde.start
        block_end = fde.end
        if fde.is_pcmask:
            rep = fde.rep_size or (V1_PCMASK_BLOCK if header.version == spec.VERSION_1 else 0)
            if rep:
                block_base = fde.start + rel - rel % rep
                block_end = min(block_base + rep, fde.end)
                rel %= rep
        fre_starts = self._fre_starts.get(index)
        if fre_starts is None:
            fre_starts = [fre.start for fre in fde.fres]
            self._fre_starts[index] = fre_starts
        k = bisect.bisect_right(fre_starts, rel) - 1
        if k < 0:
            return None
        fre = fde.fres[k]
        if not fde.is_pcmask:
            cached = self._rows.get((index, k))
            if cached is not None:
                return SFrameMatch(fde, fre, cached)
        start = block_base + fre.start
        end = block_base + fde.fres[k + 1].start if k + 1 < len(fde.fres) else block_end
        row = self._interpreter.row(fde, fre, start, min(end, block_end))
        if not fde.is_pcmask:
            self._rows[(index, k)] = row
        return SFrameMatch(fde, fre, row)

    def row(self, pc: int) -> UnwindRow | None:
        """The unwind row for `pc`, or None when SFrame does not cover it."""
        match = self.find(pc)
        return match.row if match is not None else None
