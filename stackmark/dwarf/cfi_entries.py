"""The entries of `.eh_frame` and `.debug_frame`, walked once for every reader of CFI.

DWARF 5 section 6.4.1 and the Linux Standard Base's `.eh_frame` (pointer
encodings, augmentation strings). Layout of one entry:

    u32 length (0xffffffff: then u64; 0 in .eh_frame: terminator)
    CIE:  id (.eh_frame 0; .debug_frame all ones), u8 version (1, 3 or 4),
          augmentation string, ["eh": GCC 2's address-sized eh_ptr],
          [version 4: u8 address_size (the file's), u8 segment_size (0)],
          uleb code_alignment, sleb data_alignment, return-address column
          (u8 in version 1, else uleb), [augmentation data: "z" length, then
          per letter: L lsda encoding, P personality, R FDE encoding, S
          signal frame, B AArch64 B key, G MTE], initial instructions
    FDE:  CIE pointer (.eh_frame: distance back from this field; .debug_frame:
          section offset), initial location and range (in the CIE's "R"
          encoding, absptr without one; the range by its format only),
          ["z": augmentation data], instructions

Pointer encodings (DW_EH_PE_*): the low nibble is the format (absptr,
uleb128, udata2/4/8, sleb128, sdata2/4/8), the high nibble what it is
relative to. FDE addresses are absolute or pc-relative (what gas and LLVM
write); the personality pointer is only stepped over.

`walk_fdes` yields each FDE's header (`FdeHeader`: its CIE, the range it
covers, where its instructions lie) and copies no instructions. Its two
readers: `dwarf/cfi.py`'s `read_cfi` (every FDE with its instructions and
rows: SFrame generation, `sframe-bt --from-cfi`) and
`dwarf/cfi_ranges.py`'s `CfiRanges` (which pcs FDEs cover, for the GDB
unwinder, which loads this module: its records are `plain` ones, not
dataclasses). Each entry is read within its length, every CIE the walk
meets is parsed, and the CIE an FDE points at must be one; what the walk
refuses is what GDB's `dwarf2/frame.c` cannot use either. Damage raises
FormatError naming the section and the offset.

    for header in walk_fdes(data, ".eh_frame", address=0x2000, endian="<", address_size=8):
        header.start, header.size, header.cie.code_alignment
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from stackmark.binary import Cursor
from stackmark.errors import FormatError
from stackmark.plain import Record

# -- DW_EH_PE pointer encodings (LSB, .eh_frame) -----------------------------------
DW_EH_PE_pcrel = 0x10  # the high nibble: what the value is relative to
DW_EH_PE_funcrel = 0x40  # the last one LSB defines before aligned (0x50)
_EH_PE_FORMATS = {  # low nibble -> (size in bytes, signed); 0 = address size, -1 = LEB128
    0x0: (0, False),
    0x1: (-1, False),
    0x2: (2, False),
    0x3: (4, False),
    0x4: (8, False),
    0x9: (-1, True),
    0xA: (2, True),
    0xB: (4, True),
    0xC: (8, True),
}


class Cie(Record):
    """A Common Information Entry: what its FDEs share (alignment factors, the
    return-address column, the pointer encoding, the initial instructions)."""

    __slots__ = _fields = __match_args__ = (
        "offset",
        "version",
        "augmentation",
        "code_alignment",
        "data_alignment",
        "ra_register",
        "instructions",
        "instructions_offset",
        "fde_encoding",
        "has_augmentation_data",
    )

    def __init__(
        self,
        offset: int,
        version: int,
        augmentation: str,
        code_alignment: int,
        data_alignment: int,
        ra_register: int,
        instructions: bytes,
        instructions_offset: int,
        fde_encoding: int = 0,
        has_augmentation_data: bool = False,
    ) -> None:
        self.offset = offset
        self.version = version
        self.augmentation = augmentation
        self.code_alignment = code_alignment
        self.data_alignment = data_alignment
        self.ra_register = ra_register
        self.instructions = instructions
        self.instructions_offset = instructions_offset
        self.fde_encoding = fde_encoding
        self.has_augmentation_data = has_augmentation_data

    @property
    def signal_frame(self) -> bool:
        """Augmentation "S": the FDEs describe a signal trampoline."""
        return "S" in self.augmentation

    @property
    def pauth_b_key(self) -> bool:
        """Augmentation "B": AArch64 return addresses are signed with the B key."""
        return "B" in self.augmentation


class FdeHeader(NamedTuple):
    """One FDE as the entry walk reads it, up to its instructions: which pcs it
    covers (`start`, `size`) and where its instructions lie
    (`data[instructions_offset:end]`, not copied). Offsets are section offsets."""

    offset: int
    cie: Cie
    start: int
    size: int
    instructions_offset: int
    end: int


def walk_fdes(
    data: bytes,
    section: str,
    *,
    address: int = 0,
    endian: str = "<",
    address_size: int = 8,
    source: str | None = None,
) -> Iterator[FdeHeader]:
    """The FDEs' headers of a `.eh_frame` (at `address`) or `.debug_frame`
    section, in section order: the one walk of the entries (see the module
    docstring), parsing every CIE it meets. `read_cfi` copies each FDE's
    instructions; `CfiRanges` stops at the header."""
    is_eh = section.startswith(".eh_frame")
    size = len(data)
    mask = (1 << (8 * address_size)) - 1
    cursor = CfiCursor(data, section, source, endian)
    # CIE offset -> the CIE and its FDEs' two pointers as one struct (None: read field by field)
    cies: dict[int, tuple[Cie, struct.Struct | None]] = {}
    while cursor.pos < size:
        offset = cursor.pos
        cursor.end = size
        length = cursor.u32("entry length")
        offset_size = 4
        if length == 0xFFFFFFFF:
            length, offset_size = cursor.u64("64-bit entry length"), 8
        if length == 0:
            if is_eh:
                break  # the terminator
            continue
        end = cursor.pos + length
        if end > size:
            raise cursor.error(
                f"entry of {length} bytes runs past the end of the section ({size} bytes)",
                offset,
            )
        cursor.end = end  # every field below is read within the entry
        id_at = cursor.pos
        entry_id = cursor.uint(offset_size, "CIE id or pointer")
        if entry_id == (0 if is_eh else (1 << (8 * offset_size)) - 1):
            cie = _read_cie(cursor, offset, address_size)
            cies[offset] = cie, _fde_range_layout(cie.fde_encoding, address_size, endian)
            cursor.pos = end
            continue
        cie_at = id_at - entry_id if is_eh else entry_id
        known = cies.get(cie_at)
        if known is None:
            if not 0 <= cie_at < size:
                raise cursor.error(f"FDE's CIE pointer {cie_at:#x} is outside the section", id_at)
            cie = _read_cie_at(data, cie_at, section, source, endian, address_size, is_eh)
            known = cies[cie_at] = cie, _fde_range_layout(cie.fde_encoding, address_size, endian)
        cie, layout = known
        at = cursor.pos
        if layout is not None and at + layout.size <= end:
            # The fast path of `_read_fde_range` (the common case: one struct read)
            start, covered = layout.unpack_from(data, at)
            if cie.fde_encoding & DW_EH_PE_pcrel:
                start += address + at
            start, covered = start & mask, covered & mask
            cursor.pos = at + layout.size
        else:
            start, covered = _read_fde_range(cursor, cie, address, address_size)
        if cie.has_augmentation_data:
            skip = cursor.uleb("FDE augmentation data length")
            if skip > end - cursor.pos:
                raise cursor.error(
                    f"FDE augmentation data of {skip} bytes runs past the end of its entry",
                    cursor.pos,
                )
            cursor.pos += skip  # the LSDA pointer, not needed here
        yield FdeHeader(offset, cie, start, covered, cursor.pos, end)
        cursor.pos = end


def _read_cie_at(
    data: bytes,
    at: int,
    section: str,
    source: str | None,
    endian: str,
    address_size: int,
    is_eh: bool,
) -> Cie:
    """A CIE that an FDE points at (it may follow the FDE in .debug_frame)."""
    cursor = CfiCursor(data, section, source, endian, at)
    length = cursor.uint(4, "CIE length")
    offset_size = 4
    if length == 0xFFFFFFFF:
        length, offset_size = cursor.uint(8, "64-bit CIE length"), 8
    end = cursor.pos + length
    if end > len(data):
        raise cursor.error("CIE runs past the end of the section", at)
    cursor.end = end
    entry_id = cursor.uint(offset_size, "CIE id")
    if entry_id != (0 if is_eh else (1 << (8 * offset_size)) - 1):
        raise cursor.error(f"an FDE points at 0x{at:x}, which is not a CIE", at)
    return _read_cie(cursor, at, address_size)


def _read_cie(cursor: CfiCursor, offset: int, address_size: int) -> Cie:
    """The CIE whose version field is at the cursor; `cursor.end` is the CIE's end."""
    version = cursor.u8("CIE version")
    if version not in (1, 3, 4):
        raise cursor.error(f"CIE version {version} (1, 3 and 4 are known)", cursor.pos - 1)
    augmentation = cursor.cstring("CIE augmentation")
    if augmentation == "eh":
        cursor.uint(address_size, "eh data")  # GCC 2's eh_ptr, right after the string
    if version == 4:
        at = cursor.pos
        cie_address_size = cursor.u8("CIE address size")
        if cie_address_size != address_size:
            raise cursor.error(
                f"CIE address size {cie_address_size}, not the file's {address_size}", at
            )
        segment_selector_size = cursor.u8("CIE segment selector size")
        if segment_selector_size != 0:
            raise cursor.error(f"CIE segment selector size {segment_selector_size}", at + 1)
    code_alignment = cursor.uleb("code alignment factor")
    data_alignment = cursor.sleb("data alignment factor")
    ra_register = (
        cursor.u8("return address column") if version == 1 else cursor.uleb("return address column")
    )
    fde_encoding = 0  # DW_EH_PE_absptr
    has_data = augmentation.startswith("z")
    if has_data:
        data_length = cursor.uleb("augmentation data length")
        data_end = cursor.pos + data_length
        entry_end = cursor.end
        if data_end > entry_end:
            raise cursor.error(
                f"CIE augmentation data of {data_length} bytes runs past the end of its entry",
                cursor.pos,
            )
        cursor.end = data_end  # each letter's data is read within the augmentation data
        for letter in augmentation[1:]:
            if letter == "R":
                fde_encoding = cursor.u8("FDE pointer encoding")
            elif letter == "L":
                cursor.u8("LSDA pointer encoding")
            elif letter == "P":
                cursor.skip_encoded(cursor.u8("personality encoding"), address_size, "personality")
            elif letter in "SBG":
                pass  # no data: signal frame, AArch64 B key, MTE-tagged frames
            else:
                break  # unknown letter: the length lets us skip the rest
        cursor.pos, cursor.end = data_end, entry_end
    elif augmentation not in ("", "eh"):
        raise cursor.error(f"unknown CIE augmentation {augmentation!r}", offset)
    instructions_at = cursor.pos
    return Cie(
        offset,
        version,
        augmentation,
        code_alignment,
        data_alignment,
        ra_register,
        cursor.rest(),
        instructions_at,
        fde_encoding,
        has_data,
    )


def _read_fde_range(
    cursor: CfiCursor, cie: Cie, address: int, address_size: int
) -> tuple[int, int]:
    """(initial location, address range) at the cursor: both in the CIE's "R"
    encoding (absptr without one), the range by its value format only, in
    both sections, as GDB reads them (`dwarf2/frame.c`)."""
    encoding = cie.fde_encoding
    start = cursor.encoded(encoding, address, address_size, "FDE initial location")
    size = cursor.encoded(encoding & 0x0F, address, address_size, "FDE address range")
    return start, size


def _fde_range_layout(encoding: int, address_size: int, endian: str) -> struct.Struct | None:
    """Both FDE pointers of `encoding` as one struct when they are fixed-size
    and absolute or pc-relative (what gas and LLVM write); None: LEB128 or an
    encoding `CfiCursor.encoded` refuses, read (and reported) field by field."""
    form = _EH_PE_FORMATS.get(encoding & 0x0F)
    if encoding & 0xF0 not in (0, DW_EH_PE_pcrel) or form is None or form[0] == -1:
        return None
    width, signed = form
    code = {2: "h", 4: "i", 8: "q"}.get(width or address_size)
    if code is None:
        return None
    return struct.Struct(endian + (code if signed else code.upper()) * 2)


class CfiCursor(Cursor):
    """The shared `Cursor` over one CFI section (the walk narrows `end` to the
    entry it reads) or one run of instructions, whose errors name the section
    and the section offset (`origin` is the section offset of data[0];
    instruction bytes start later)."""

    __slots__ = ("endian", "origin", "section")

    def __init__(
        self,
        data: bytes,
        section: str,
        source: str | None,
        endian: str,
        pos: int = 0,
        origin: int = 0,
        end: int | None = None,
    ) -> None:
        super().__init__(data, pos, end, little=endian == "<", source=source)
        self.section = section
        self.endian = endian
        self.origin = origin

    def error(self, message: str, offset: int) -> FormatError:
        return FormatError(f"{self.section}: {message}", offset=offset, source=self.source)

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        # A LEB128 is named where it runs out: the end of the entry.
        offset = self.origin + (self.end if size is None else at)
        return self.error(f"{what} at 0x{offset:x} runs past the end of its entry", offset)

    def cstring(self, what: str) -> str:
        nul = self.data.find(b"\0", self.pos, self.end)
        if nul < 0:
            raise self.error(f"{what} is not NUL-terminated", self.pos)
        text = self.data[self.pos : nul].decode("ascii", "replace")
        self.pos = nul + 1
        return text

    def block(self, what: str) -> bytes:
        return self.bytes(self.uleb(f"{what} length"), what)

    def _raw_encoded(self, encoding: int, address_size: int, what: str) -> int:
        """The value of a DW_EH_PE pointer by its format (the low nibble), unapplied."""
        form = _EH_PE_FORMATS.get(encoding & 0x0F)
        if form is None:
            raise self.error(f"{what}: unsupported pointer encoding 0x{encoding:02x}", self.pos)
        size, signed = form
        if size == -1:
            return self.sleb(what) if signed else self.uleb(what)
        size = size or address_size
        return self.sint(size, what) if signed else self.uint(size, what)

    def encoded(self, encoding: int, address: int, address_size: int, what: str) -> int:
        """A DW_EH_PE-encoded address: absolute, or pc-relative resolved against
        `address` (the section's). The others need a base this reader does not
        have (datarel: the GOT; textrel, funcrel) or a load (indirect), and
        are refused: gas and LLVM write FDE addresses absolute or pc-relative."""
        at = self.pos
        if encoding & 0xF0 not in (0, DW_EH_PE_pcrel):
            raise self.error(f"{what}: unsupported pointer encoding 0x{encoding:02x}", at)
        value = self._raw_encoded(encoding, address_size, what)
        if encoding & DW_EH_PE_pcrel:
            value += address + at
        return value & ((1 << (8 * address_size)) - 1)

    def skip_encoded(self, encoding: int, address_size: int, what: str) -> None:
        """Step over a DW_EH_PE pointer whose value is not needed (the
        personality routine): only its format says its size, whatever it is
        relative to, and whether it is indirect. Aligned pointers (0x50) are
        refused: their size depends on padding."""
        if encoding & 0x70 > DW_EH_PE_funcrel:
            raise self.error(f"{what}: unsupported pointer encoding 0x{encoding:02x}", self.pos)
        self._raw_encoded(encoding, address_size, what)
