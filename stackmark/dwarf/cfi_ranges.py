"""Which addresses call-frame information covers: the FDE ranges of `.eh_frame`
and `.debug_frame`.

A debugger's DWARF unwinder takes a frame exactly when an FDE covers its pc
(GDB: `dwarf2_frame_find_fde`). A binary built with
`-fno-asynchronous-unwind-tables -Wa,--gsframe` and then
`strip --strip-debug` keeps `.eh_frame` entries for crt's `_start` and the
PLT only: every other function has SFrame and no CFI. So whether GDB can
unwind a pc is a question about that pc, answered here.

The entries are walked by `dwarf/cfi_entries.py` (`walk_fdes`: entry
lengths, CIEs, DW_EH_PE pointers; the layout is in its docstring), the
walk `read_cfi` makes too, so both accept and refuse the same sections.
It stops at each FDE's header: only the ranges are read, not the
instructions. This module keeps the merged, sorted ranges and their lookup.
"""

from __future__ import annotations

import bisect

from stackmark.dwarf.cfi_entries import walk_fdes
from stackmark.elf import ElfFile
from stackmark.errors import FormatError

CFI_SECTIONS = (".eh_frame", ".debug_frame")
_SHT_NOBITS = 8  # a separate debug file keeps .eh_frame's header, not its bytes


class CfiRanges:
    """The address ranges [start, end) some FDE covers, merged and sorted."""

    def __init__(self, ranges: list[tuple[int, int]]):
        merged: list[tuple[int, int]] = []
        for start, end in sorted(r for r in ranges if r[1] > r[0]):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        self.ranges = merged
        self._starts = [start for start, _end in merged]

    @classmethod
    def from_elf(cls, elf: ElfFile) -> CfiRanges:
        """The ranges of the file's `.eh_frame` and `.debug_frame`."""
        found: list[tuple[int, int]] = []
        for name in CFI_SECTIONS:
            section = elf.section(name)
            if section is None or section.type == _SHT_NOBITS or section.size == 0:
                continue
            fdes = walk_fdes(
                elf.section_data(section),
                name,
                address=section.addr,
                endian=elf.endian,
                address_size=elf.pointer_size,
                source=elf.name,
            )
            found += [(fde.start, fde.start + fde.size) for fde in fdes]
        return cls(found)

    @classmethod
    def from_files(cls, paths: list[str]) -> CfiRanges:
        """The union over several files of one module (a binary and its debug files);
        a file that cannot be read adds nothing."""
        found: list[tuple[int, int]] = []
        for path in paths:
            try:
                with ElfFile.open(path) as elf:
                    found += cls.from_elf(elf).ranges
            except (FormatError, OSError):
                continue
        return cls(found)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def covers(self, address: int) -> bool:
        """Whether an FDE covers `address`."""
        i = bisect.bisect_right(self._starts, address) - 1
        return i >= 0 and address < self.ranges[i][1]
