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
one with "GSYM". `HEADER_LAYOUT` declares these fields once, with LLVM's
names (llvm/include/llvm/DebugInfo/GSYM/Header.h); the decoder, the
encoder and the dump all go through it.
"""

from __future__ import annotations

from typing import Any

from stackmark.binary import Buffer, RecordLayout
from stackmark.formats.gsym.codec import RecordCursor, RecordError, Writer
from stackmark.plain import Record

GSYM_MAGIC = 0x4753594D
GSYM_CIGAM = 0x4D595347  # the magic read in the wrong byte order
MAX_UUID_SIZE = 20
ADDR_OFF_SIZES = (1, 2, 4, 8)

# (spec field name, struct code), in file order.
HEADER_LAYOUT = RecordLayout(
    "Header",
    ("Magic", "I"),
    ("Version", "H"),
    ("AddrOffSize", "B"),
    ("UUIDSize", "B"),
    ("BaseAddress", "Q"),
    ("NumAddresses", "I"),
    ("StrtabOffset", "I"),
    ("StrtabSize", "I"),
    ("UUID", f"{MAX_UUID_SIZE}s"),
)
HEADER_SIZE = HEADER_LAYOUT.size  # 48 (tests/unit/test_gsym_format.py)


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


def raw_fields(data: Buffer, little: bool, at: int = 0) -> dict[str, Any]:
    """The header's fields at `data[at]` by spec name, as stored (`UUID` all 20
    bytes) and unchecked: the caller made sure that HEADER_SIZE bytes are there."""
    values = HEADER_LAYOUT.compiled("<" if little else ">").unpack_from(data, at)
    return dict(zip(HEADER_LAYOUT.names, values, strict=True))


def decode_header(cur: RecordCursor) -> Header:
    """Read and check a version-1 header at the cursor."""
    if cur.remaining < HEADER_SIZE:
        raise RecordError(
            f"not enough data for a GSYM header ({cur.remaining} of {HEADER_SIZE} bytes)",
            offset=cur.pos,
            source=cur.source,
        )
    fields = raw_fields(cur.data, cur.little, cur.pos)
    cur.pos += HEADER_SIZE
    uuid_size = fields["UUIDSize"]
    if uuid_size > MAX_UUID_SIZE:
        raise RecordError(f"invalid UUID size {uuid_size}", offset=7, source=cur.source)
    header = Header(
        version=fields["Version"],
        addr_off_size=fields["AddrOffSize"],
        base_address=fields["BaseAddress"],
        num_addresses=fields["NumAddresses"],
        strtab_offset=fields["StrtabOffset"],
        strtab_size=fields["StrtabSize"],
        uuid=fields["UUID"][:uuid_size],
        magic=fields["Magic"],
    )
    check_header(header, cur.source)
    return header


def spec_fields(header: Header) -> dict[str, int | bytes]:
    """The header's values by spec field name (`UUIDSize` counted, `UUID` unpadded)."""
    return {
        "Magic": header.magic,
        "Version": header.version,
        "AddrOffSize": header.addr_off_size,
        "UUIDSize": len(header.uuid),
        "BaseAddress": header.base_address,
        "NumAddresses": header.num_addresses,
        "StrtabOffset": header.strtab_offset,
        "StrtabSize": header.strtab_size,
        "UUID": header.uuid,
    }


def encode_header(w: Writer, header: Header) -> None:
    """Write the 48 header bytes: the magic is always GSYM's, the UUID zero-padded to
    20 bytes, and each number cut to its field's width as `Writer` does."""
    values = spec_fields(header) | {"Magic": GSYM_MAGIC}
    packed: list[int | bytes] = []
    for name in HEADER_LAYOUT.names:
        value = values[name]
        if isinstance(value, int):
            value &= (1 << 8 * HEADER_LAYOUT.sizes[name]) - 1
        packed.append(value)
    w.raw(HEADER_LAYOUT.compiled("<" if w.little else ">").pack(*packed))


def header_text(header: Header) -> str:
    """The header block as llvm-gsymutil prints it (no trailing blank line)."""
    values = spec_fields(header)
    lines = ["Header:"]
    for name in HEADER_LAYOUT.names:
        value = values[name]
        if isinstance(value, bytes):
            shown = value.hex()
        else:
            shown = f"0x{value:0{2 * HEADER_LAYOUT.sizes[name]}x}"
        lines.append(f"  {name:<12} = {shown}")
    return "\n".join(lines) + "\n"
