"""Write small 64-bit little-endian Mach-O files for hostile inputs that linkers
will not make (a section past the end of the file, a symbol naming a section
that does not exist, a name outside the file).

Layout: mach_header_64; LC_SEGMENT_64 `__TEXT` with one section `__text`;
LC_SYMTAB; LC_UUID; then the section's bytes, the nlist_64 entries and the
string table.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

MH_MAGIC_64, CPU_TYPE_X86_64, MH_EXECUTE, MH_DSYM = 0xFEEDFACF, 0x01000007, 0x2, 0xA
LC_SEGMENT_64, LC_SYMTAB, LC_UUID = 0x19, 0x2, 0x1B
S_ATTR_PURE_INSTRUCTIONS = 0x80000000
N_SECT, N_EXT = 0xE, 0x1
TEXT_ADDRESS = 0x100000F00


@dataclass
class Nlist:
    name_offset: int
    value: int
    sect: int = 1
    type: int = N_SECT | N_EXT


@dataclass
class TinyMachO:
    code: bytes = bytes(0x40)
    symbols: list[Nlist] = field(default_factory=list)
    strings: bytes = b"\0"
    section_offset: int | None = None
    """Where the section header says its bytes are (default: where they are)."""
    section_size: int | None = None
    uuid: bytes = bytes(range(16))
    filetype: int = MH_EXECUTE
    cpusubtype: int = 3

    def build(self) -> bytes:
        header_size = 32
        segment_size = 72 + 80
        commands = segment_size + 24 + 24
        code_at = header_size + commands
        symbols_at = code_at + len(self.code)
        strings_at = symbols_at + 16 * len(self.symbols)
        out = struct.pack(
            "<IiiIIIII",
            MH_MAGIC_64,
            CPU_TYPE_X86_64,
            self.cpusubtype,
            self.filetype,
            3,
            commands,
            0,
            0,
        )
        size = len(self.code) if self.section_size is None else self.section_size
        offset = code_at if self.section_offset is None else self.section_offset
        out += struct.pack(
            "<II16sQQQQiiII",
            LC_SEGMENT_64,
            segment_size,
            b"__TEXT",
            TEXT_ADDRESS - 0xF00,
            0x100000,
            0,
            code_at + len(self.code),
            5,
            5,
            1,
            0,
        )
        out += struct.pack(
            "<16s16sQQIIIIIIII",
            b"__text",
            b"__TEXT",
            TEXT_ADDRESS,
            size,
            offset,
            4,
            0,
            0,
            S_ATTR_PURE_INSTRUCTIONS,
            0,
            0,
            0,
        )
        out += struct.pack(
            "<IIIIII", LC_SYMTAB, 24, symbols_at, len(self.symbols), strings_at, len(self.strings)
        )
        out += struct.pack("<II16s", LC_UUID, 24, self.uuid)
        out += self.code
        for symbol in self.symbols:
            out += struct.pack(
                "<IBBhQ", symbol.name_offset, symbol.type, symbol.sect, 0, symbol.value
            )
        return out + self.strings
