"""Which addresses call-frame information covers: the FDE ranges of `.eh_frame`
and `.debug_frame`.

A debugger's DWARF unwinder takes a frame exactly when an FDE covers its pc
(GDB: `dwarf2_frame_find_fde`). A binary built with
`-fno-asynchronous-unwind-tables -Wa,--gsframe` and then
`strip --strip-debug` keeps `.eh_frame` entries for crt's `_start` and the
PLT only: every other function has SFrame and no CFI. So whether GDB can
unwind a pc is a question about that pc, answered here; only the ranges
are read, not the instructions.

Both sections are a sequence of entries (DWARF 5 section 6.4.1; the Linux
Standard Base for `.eh_frame`):

    length          u32; 0xffffffff: a u64 length follows (64-bit DWARF);
                    0 in .eh_frame: the terminator
    CIE id/pointer  .debug_frame: u32 (u64 when 64-bit), all ones for a CIE,
                    else the section offset of the FDE's CIE;
                    .eh_frame: u32, 0 for a CIE, else the distance back from
                    this field to the FDE's CIE
    CIE:  version u8, augmentation string,
          [address_size u8, segment_selector_size u8: version 4],
          code_alignment uleb, data_alignment sleb,
          return_address_register (u8 in version 1, else uleb),
          [augmentation data length uleb, then per letter after 'z':
           'R' FDE pointer encoding u8, 'P' encoding u8 + pointer,
           'L' LSDA encoding u8; 'S', 'B' nothing]
    FDE:  initial_location, address_range: in .debug_frame address_size
          bytes each; in .eh_frame encoded with the CIE's 'R' encoding
          (the range by its value format only)

Pointer encodings (DW_EH_PE_*): the low nibble is the format (absptr,
uleb128, udata2/4/8, sleb128, sdata2/4/8), the high nibble how it applies
(pcrel: from the field's own address; the others do not occur in FDE
initial locations of linked x86-64 and AArch64 code and are refused).
"""

from __future__ import annotations

import bisect

from stackmark.binary import Cursor
from stackmark.elf import ElfFile
from stackmark.errors import FormatError

CFI_SECTIONS = (".eh_frame", ".debug_frame")
_SHT_NOBITS = 8  # a separate debug file keeps .eh_frame's header, not its bytes

_DW_EH_PE_OMIT = 0xFF
_DW_EH_PE_PCREL = 0x10
_DW_EH_PE_INDIRECT = 0x80
_FIXED_SIZES = {0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}
_SIGNED = {0x09, 0x0A, 0x0B, 0x0C}


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
            data = elf.section_data(section)
            reader = _Reader(data, section.addr, name, elf)
            found += reader.fde_ranges()
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


class _Reader(Cursor):
    """The shared `Cursor` over one section, walking its entries (see the module
    docstring); a read past the section's end names what it reads and where."""

    __slots__ = ("address", "cies", "is_eh", "name", "pointer_size")

    def __init__(self, data: bytes, address: int, name: str, elf: ElfFile):
        super().__init__(data, little=elf.endian == "<", source=elf.name)
        self.address = address
        self.name = name
        self.pointer_size = elf.pointer_size
        self.is_eh = name == ".eh_frame"
        self.cies: dict[int, tuple[int, int]] = {}  # offset -> (FDE encoding, address size)

    def error(self, message: str, offset: int) -> FormatError:
        return FormatError(f"{self.name}: {message}", offset=offset, source=self.source)

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        return self.error(f"{what} runs past the end of the section", at)

    def fde_ranges(self) -> list[tuple[int, int]]:
        ranges = []
        self.pos = 0
        while self.pos + 4 <= self.end:
            entry = self.pos
            length = self.u32("entry length")
            offset_size = 4
            if length == 0xFFFFFFFF:
                length = self.u64("64-bit entry length")
                offset_size = 8
            if length == 0:
                if self.is_eh:
                    break  # the terminator
                continue
            end = self.pos + length
            if end > self.end:
                raise self.error(f"entry of {length} bytes runs past the end of the section", entry)
            id_pos = self.pos
            cie_id = self.uint(offset_size, "CIE id")
            is_cie = cie_id == 0 if self.is_eh else cie_id == (1 << (8 * offset_size)) - 1
            if not is_cie:
                cie = id_pos - cie_id if self.is_eh else cie_id
                found = self._fde_range(end, cie, entry)
                if found is not None:
                    ranges.append(found)
            self.pos = end
        return ranges

    def _fde_range(self, end: int, cie: int, entry: int) -> tuple[int, int] | None:
        """The range of the FDE whose initial location is at the cursor."""
        at = self.pos
        encoding, address_size = self._cie(cie, entry)
        if encoding == _DW_EH_PE_OMIT:
            return None
        self.pos = at
        start = self._pointer(encoding, address_size, entry, "FDE initial location")
        span = self._pointer(encoding & 0x0F, address_size, entry, "FDE address range")
        if self.pos > end:
            raise self.error("FDE runs past its length", entry)
        return start, start + span

    def _cie(self, offset: int, fde: int) -> tuple[int, int]:
        """(FDE pointer encoding, address size) of the CIE at `offset`."""
        known = self.cies.get(offset)
        if known is not None:
            return known
        if not 0 <= offset < self.end:
            raise self.error(f"FDE names a CIE at 0x{offset:x}, outside the section", fde)
        parsed = self._parse_cie(offset)
        self.cies[offset] = parsed
        return parsed

    def _parse_cie(self, offset: int) -> tuple[int, int]:
        self.pos = offset
        offset_size = 4
        if self.u32("CIE length") == 0xFFFFFFFF:
            self.pos += 8
            offset_size = 8
        self.pos += offset_size  # the CIE id
        version = self.u8("CIE version")
        nul = self.data.find(b"\0", self.pos, self.end)
        if nul < 0:
            raise self.error("CIE augmentation string runs past the end of the section", self.pos)
        augmentation = self.bytes(nul - self.pos, "CIE augmentation").decode("ascii", "replace")
        self.pos = nul + 1
        address_size = self.pointer_size
        if version >= 4:
            address_size = self.u8("CIE address size")
            self.u8("CIE segment selector size")
        if augmentation.startswith("eh"):  # GCC 2's eh_ptr: an address-sized field
            self.pos += self.pointer_size
        self.uleb("code alignment factor")
        self.sleb("data alignment factor")
        if version == 1:
            self.pos += 1  # a u8 return address register
        else:
            self.uleb("return address register")
        encoding = 0  # absptr
        if augmentation.startswith("z"):
            self.uleb("augmentation data length")
            for letter in augmentation[1:]:
                if letter == "R":
                    encoding = self.u8("FDE pointer encoding")
                elif letter == "P":
                    personality = self.u8("personality encoding")  # skipped: only its size matters
                    self._pointer(personality & 0x0F, address_size, offset, "personality")
                elif letter == "L":
                    self.pos += 1  # the LSDA encoding
                elif letter not in "SB":
                    break  # an extension we do not know: the 'R' letter comes first anyway
        return encoding, address_size

    def _pointer(self, encoding: int, address_size: int, entry: int, what: str) -> int:
        """The pointer in DW_EH_PE `encoding` at the cursor."""
        form = encoding & 0x0F
        field_address = self.address + self.pos
        if form == 0x01:
            value = self.uleb(what)
        elif form == 0x09:
            value = self.sleb(what)
        else:
            size = address_size if form == 0x00 else _FIXED_SIZES.get(form)
            if size is None:
                raise self.error(f"unknown pointer encoding 0x{encoding:02x}", entry)
            value = self.sint(size, what) if form in _SIGNED else self.uint(size, what)
        application = encoding & 0x70
        if application == _DW_EH_PE_PCREL:
            value += field_address
        elif application != 0:
            raise self.error(f"unsupported pointer encoding 0x{encoding:02x}", entry)
        if encoding & _DW_EH_PE_INDIRECT:
            raise self.error(f"unsupported indirect pointer encoding 0x{encoding:02x}", entry)
        return value & ((1 << (8 * max(address_size, 4))) - 1)
