"""Write small ELF64 little-endian files section by section, for hostile inputs
that compilers will not make (a compressed section that is a zip bomb, one
that lies about its size). Layout: ELF header, section contents, section
header table (null, the given sections, .shstrtab).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SHT_PROGBITS, SHT_STRTAB, SHT_NOTE = 1, 3, 7
SHF_ALLOC, SHF_EXECINSTR, SHF_COMPRESSED = 0x2, 0x4, 0x800
ELFCOMPRESS_ZLIB = 1


@dataclass
class RawSection:
    name: str
    type: int
    flags: int
    data: bytes
    address: int = 0


def build_id_note(build_id: bytes) -> RawSection:
    note = struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id
    return RawSection(".note.gnu.build-id", SHT_NOTE, SHF_ALLOC, note)


def compressed_header(claimed_size: int) -> bytes:
    """Elf64_Chdr: ch_type, ch_reserved, ch_size, ch_addralign."""
    return struct.pack("<IIQQ", ELFCOMPRESS_ZLIB, 0, claimed_size, 1)


def zlib_of_zeros(size: int) -> bytes:
    """zlib data that inflates to `size` zero bytes, made without holding them."""
    packer = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    parts: list[bytes] = []
    left = size
    while left:
        n = min(left, len(chunk))
        parts.append(packer.compress(chunk[:n]))
        left -= n
    parts.append(packer.flush())
    return b"".join(parts)


def elf_file(sections: list[RawSection]) -> bytes:
    names = b"\0"
    offsets: list[int] = []
    for section in [*sections, RawSection(".shstrtab", SHT_STRTAB, 0, b"")]:
        offsets.append(len(names))
        names += section.name.encode() + b"\0"
    all_sections = [*sections, RawSection(".shstrtab", SHT_STRTAB, 0, names)]
    body = bytearray()
    placed: list[tuple[int, int]] = []
    at = 64
    for section in all_sections:
        placed.append((at + len(body), len(section.data)))
        body += section.data
        body += bytes(-len(body) % 8)
    shoff = 64 + len(body)
    count = len(all_sections) + 1
    header = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header += struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, count, count - 1
    )
    table = bytes(64)
    for section, name_at, (offset, size) in zip(all_sections, offsets, placed, strict=True):
        table += struct.pack(
            "<IIQQQQIIQQ",
            name_at,
            section.type,
            section.flags,
            section.address,
            offset,
            size,
            0,
            0,
            1,
            0,
        )
    return header + bytes(body) + table
