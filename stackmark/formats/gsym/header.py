"""The GSYM header (version 1: 48 bytes at offset 0).

    off size field
      0    4 Magic        0x4753594D ("GSYM"); its byte order is the file's
      4    2 Version      1
      6    1 AddrOffSize  1, 2, 4 or 8: width of each address-table entry
      7    1 UUIDSize     0..20
      8    8 BaseAddress  address-table entries are offsets from this
     16    4 NumAddresses number of functions
     20    4 StrtabOffset file offset of the string table
     24    4 StrtabSize   its size in bytes
     28   20 UUID         first UUIDSize bytes valid, the rest zero

A little-endian file therefore starts with the bytes "MYSG", a big-endian
one with "GSYM".
"""

from __future__ import annotations

from stackmark.formats.gsym.codec import Buffer, Cursor, RecordError, Writer
from stackmark.plain import Record

GSYM_MAGIC = 0x4753594D
GSYM_CIGAM = 0x4D595347  # the magic read in the wrong byte order
HEADER_SIZE = 48
MAX_UUID_SIZE = 20
ADDR_OFF_SIZES = (1, 2, 4, 8)


class Header(Record):
    """Version-1 header fields (`uuid` holds only the valid bytes).

    A plain record, not a dataclass: every warm lookup reads a header, and
    `dataclasses` would cost start-up time (stackmark.plain says how much)."""

    __slots__ = _fields = __match_args__ = (
        "version",
        "addr_off_size",
        "base_address",
        "num_addresses",
        "strtab_offset",
        "strtab_size",
        "uuid",
        "magic",
    )
    version: int
    addr_off_size: int
    base_address: int
    num_addresses: int
    strtab_offset: int
    strtab_size: int
    uuid: bytes
    magic: int

    def __init__(
        self,
        version: int = 1,
        addr_off_size: int = 4,
        base_address: int = 0,
        num_addresses: int = 0,
        strtab_offset: int = 0,
        strtab_size: int = 0,
        uuid: bytes = b"",
        magic: int = GSYM_MAGIC,
    ) -> None:
        self.version = version
        self.addr_off_size = addr_off_size
        self.base_address = base_address
        self.num_addresses = num_addresses
        self.strtab_offset = strtab_offset
        self.strtab_size = strtab_size
        self.uuid = uuid
        self.magic = magic


def detect_byte_order(data: Buffer, source: str | None) -> bool:
    """True for a little-endian GSYM, False for big-endian; else a RecordError."""
    if len(data) < 4:
        raise RecordError(
            "not enough data for a GSYM header",
            offset=0,
            source=source,
            llvm_reason="not enough data for a GSYM header",
        )
    magic = int.from_bytes(bytes(data[:4]), "little")
    if magic == GSYM_MAGIC:
        return True
    if magic == GSYM_CIGAM:
        return False
    raise RecordError(
        f"not a GSYM file (magic 0x{magic:08x})",
        offset=0,
        source=source,
        llvm_reason="not a GSYM file",
    )


def check_header(header: Header, source: str | None) -> None:
    """LLVM's validity checks: version 1, a legal offset width, UUID <= 20 bytes."""

    def bad(message: str, offset: int) -> RecordError:
        return RecordError(message, offset=offset, source=source)

    if header.version != 1:
        raise bad(f"unsupported GSYM version {header.version}", 4)
    if header.addr_off_size not in ADDR_OFF_SIZES:
        raise bad(f"invalid address offset size {header.addr_off_size}", 6)
    if len(header.uuid) > MAX_UUID_SIZE:
        raise bad(f"invalid UUID size {len(header.uuid)}", 7)


def decode_header(cur: Cursor) -> Header:
    """Read and check a version-1 header at the cursor."""
    if cur.remaining < HEADER_SIZE:
        raise RecordError(
            f"not enough data for a GSYM header ({cur.remaining} of {HEADER_SIZE} bytes)",
            offset=cur.pos,
            source=cur.source,
        )
    magic = cur.u32("magic")
    version = cur.u16("version")
    addr_off_size = cur.u8("address offset size")
    uuid_size = cur.u8("UUID size")
    base_address = cur.u64("base address")
    num_addresses = cur.u32("number of addresses")
    strtab_offset = cur.u32("string table offset")
    strtab_size = cur.u32("string table size")
    uuid_field = cur.bytes(MAX_UUID_SIZE, "UUID")
    if uuid_size > MAX_UUID_SIZE:
        raise RecordError(f"invalid UUID size {uuid_size}", offset=7, source=cur.source)
    header = Header(
        version,
        addr_off_size,
        base_address,
        num_addresses,
        strtab_offset,
        strtab_size,
        uuid_field[:uuid_size],
        magic,
    )
    check_header(header, cur.source)
    return header


def encode_header(w: Writer, header: Header) -> None:
    """Write the 48 header bytes (the UUID zero-padded to 20 bytes)."""
    w.u32(GSYM_MAGIC)
    w.u16(header.version)
    w.u8(header.addr_off_size)
    w.u8(len(header.uuid))
    w.u64(header.base_address)
    w.u32(header.num_addresses)
    w.u32(header.strtab_offset)
    w.u32(header.strtab_size)
    w.raw(header.uuid.ljust(MAX_UUID_SIZE, b"\0"))


def header_text(header: Header) -> str:
    """The header block as llvm-gsymutil prints it (no trailing blank line)."""
    return (
        "Header:\n"
        f"  Magic        = 0x{header.magic:08x}\n"
        f"  Version      = 0x{header.version:04x}\n"
        f"  AddrOffSize  = 0x{header.addr_off_size:02x}\n"
        f"  UUIDSize     = 0x{len(header.uuid):02x}\n"
        f"  BaseAddress  = 0x{header.base_address:016x}\n"
        f"  NumAddresses = 0x{header.num_addresses:08x}\n"
        f"  StrtabOffset = 0x{header.strtab_offset:08x}\n"
        f"  StrtabSize   = 0x{header.strtab_size:08x}\n"
        f"  UUID         = {header.uuid.hex()}\n"
    )
