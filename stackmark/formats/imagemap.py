"""Compact Image Map format (CIF): the list of loaded images that goes with a CBF backtrace.

Read this beside swift/docs/CompactImageMapFormat.md. Where the document and
the code differ we follow the code: we write what Swift's encoder
(CompactImageMap.swift, the version with the platform field) writes, and
read what its newest decoder reads:

    info byte       0000 00ss                   as in CBF (16/32/64-bit words)
    platform        length byte, UTF-8 bytes
    image count     varint (big-endian base 128, top bit on all but the last byte)
    per image:
      header        r0aa aeee                   r: base relative to the previous base
      base          aaa+1 signed big-endian bytes
      end of text   eee+1 signed big-endian bytes, relative to the base
      build ID      varint length (0: none), bytes
      path          string opcodes, below

    path opcodes    00        end of path
                    01-3f     str: that many bytes follow
                    40-7f     framewk: version byte, then (low6 + 1) name bytes;
                              "/<name>.framework/Versions/<v>/<name>", ends the path
                    80-bf     expand prefix code low6
                    c0-ff     expand prefix code 64 + the next low6 + 1 bytes

Prefix codes 0-11 are fixed (`FIXED_PREFIXES`); from 32 on, each `/` or `\\`
inside a path's str data (past its first byte) defines the next code as the
str data up to that separator. The table lives for the whole map.

Encoder quirks kept for byte-exact output: a varint whose bit length is a
multiple of 7 gets a redundant leading 0x80 (127 -> 80 7f); ties between
absolute and relative bases go to absolute; 16/32-bit addresses are
sign-extended to 64 bits before their lengths are measured. One deviation:
Swift sizes an extended prefix code (64 + n) as floor(bits/8) bytes, which
loses bits from n = 256 on; we write the bytes the code needs.

Decoder (the newest Swift rules): the whole map is rejected (`FormatError`)
for a bad info byte, a short or non-UTF-8 platform, more than 1<<20 images,
a build ID longer than 1024 bytes, an end of text not above the base, or
missing images; and (ours) an end of text past the word size's address
space, which would wrap below the base once masked. A path that cannot be
decoded only loses that path (the image keeps its addresses and build ID);
the problem is listed in `ImageMap.warnings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stackmark.binary import Cursor
from stackmark.errors import FormatError, StackmarkError
from stackmark.model import Module, Segment

FIXED_PREFIXES: tuple[bytes, ...] = (
    b"/lib",
    b"/usr/lib",
    b"/usr/local/lib",
    b"/opt/lib",
    b"/System/Library/Frameworks",
    b"/System/Library/PrivateFrameworks",
    b"/System/iOSSupport",
    b"/Library/Frameworks",
    b"/System/Applications",
    b"/Applications",
    b"C:\\Windows\\System32",
    b"C:\\Program Files",
)
FIRST_DYNAMIC_CODE = 32
"""Codes 12-31 are reserved; prefixes defined by paths start here."""

MAX_IMAGES = 1 << 20
MAX_BUILD_ID = 1024
STR_MAX = 0x3F
SHALLOW_FRAMEWORK = 0x01
"""A framewk version byte meaning "/<name>.framework/<name>" (newest decoder)."""

_SIZE_FIELD = {16: 0, 32: 1, 64: 2}
_WORD_BITS = (16, 32, 64)
_SEPARATORS = frozenset(b"/\\")

OP_PATH_END = 0x00
OP_FRAMEWORK = 0x40
OP_EXPAND = 0x80
OP_EXPAND_EXTENDED = 0xC0
HEADER_RELATIVE = 0x80


class ImageMapError(StackmarkError):
    """An image map that cannot be encoded (end of text below base, platform too long)."""


@dataclass(frozen=True, slots=True)
class Image:
    """One loaded image: where its text is and what it is.

    `base` is the lowest address of the image, `end_of_text` one past its
    executable code. `build_id` is the raw unique ID (GNU build ID bytes),
    None when unknown.
    """

    name: str | None
    path: str | None
    build_id: bytes | None
    base: int
    end_of_text: int

    def to_module(self, module_id: int, module_relative: int = 0) -> Module:
        """A `Module` with one r-x segment [base, end_of_text) that starts at
        `module_relative` in the module's own address space (0 for shared
        objects and PIEs, the first PT_LOAD's address for ET_EXEC)."""
        return Module(
            id=module_id,
            name=self.name or f"image{module_id}",
            build_id=self.build_id.hex() if self.build_id else "",
            segments=[Segment(self.base, self.end_of_text - self.base, "rx", module_relative)],
            path=self.path,
        )

    @staticmethod
    def from_module(module: Module) -> Image:
        """The image of a module: base at its lowest segment, text end at the
        end of its last executable segment (or of its last segment)."""
        if not module.segments:
            raise ImageMapError(f"module {module.name!r} has no segments")
        base = min(s.start for s in module.segments)
        executable = [s for s in module.segments if "x" in s.mode] or module.segments
        return Image(
            name=module.name,
            path=module.path,
            build_id=bytes.fromhex(module.build_id) if module.build_id else None,
            base=base,
            end_of_text=max(s.end for s in executable),
        )


@dataclass(slots=True)
class ImageMap:
    """The images of one process, with the platform string Swift records."""

    platform: str
    images: list[Image]
    word_bits: int = 64
    warnings: list[str] = field(default_factory=list)

    def to_modules(self) -> list[Module]:
        return [image.to_module(i) for i, image in enumerate(self.images)]


# --- encoder -------------------------------------------------------------------


def _varint(value: int) -> bytes:
    """Swift's varint: starts at shift 7*floor(bits/7), hence 127 -> 80 7f."""
    out = bytearray()
    shift = 7 * (value.bit_length() // 7)
    while shift > 0:
        out.append(0x80 | ((value >> shift) & 0x7F))
        shift -= 7
    out.append(value & 0x7F)
    return bytes(out)


def _sign_extend(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _signed_length(value: int) -> int:
    """Fewest bytes for a signed 64-bit `value` (1..8)."""
    return ((value if value >= 0 else ~value).bit_length() >> 3) + 1


def _signed_bytes(value: int, length: int) -> bytes:
    return (value & ((1 << (8 * length)) - 1)).to_bytes(length, "big")


class _PrefixTable:
    """Codes to path prefixes; shared by every image of a map."""

    def __init__(self) -> None:
        self.codes: dict[int, bytes] = dict(enumerate(FIXED_PREFIXES))
        self.next_code = FIRST_DYNAMIC_CODE

    def define(self, prefix: bytes) -> None:
        self.codes[self.next_code] = prefix
        self.next_code += 1

    def define_separators(self, data: bytes, first: int) -> None:
        """Define a prefix for each separator in data[first:] (never at position 0)."""
        for i in range(max(first, 1), len(data)):
            if data[i] in _SEPARATORS:
                self.define(data[:i])

    def longest_prefix_of(self, path: bytes) -> tuple[int, bytes] | None:
        best: tuple[int, bytes] | None = None
        for code, prefix in self.codes.items():  # insertion order = code order
            if path.startswith(prefix) and (best is None or len(prefix) > len(best[1])):
                best = (code, prefix)
        return best


def _encode_path(out: bytearray, image: Image, table: _PrefixTable) -> None:
    if not image.path:
        out.append(OP_PATH_END)
        return
    rest = image.path.encode("utf-8", "surrogateescape")
    while True:
        found = table.longest_prefix_of(rest) if rest else None
        if found is not None:
            code, prefix = found
            if code < 64:
                out.append(OP_EXPAND | code)
            else:
                extra = code - 64
                length = max(1, (extra.bit_length() + 7) // 8)
                out.append(OP_EXPAND_EXTENDED | (length - 1))
                out += extra.to_bytes(length, "big")
            rest = rest[len(prefix) :]
            continue
        name = (image.name or "").encode("utf-8", "surrogateescape")
        if (
            name
            and len(name) <= 64
            and rest.startswith(b"/" + name + b".framework/Versions/")
            and rest.endswith(b"/" + name)
            and len(rest) == len(name) * 2 + len("/.framework/Versions/x/")
        ):
            version = rest[len(name) + len("/.framework/Versions/")]
            out.append(OP_FRAMEWORK | (len(name) - 1))
            out.append(version)
            out += name
            return
        table.define_separators(rest, 1)
        for i in range(0, len(rest), STR_MAX):
            chunk = rest[i : i + STR_MAX]
            out.append(len(chunk))
            out += chunk
        out.append(OP_PATH_END)
        return


def encode_image_map(image_map: ImageMap) -> bytes:
    """The CIF bytes for `image_map`, as Swift's encoder writes them."""
    bits = image_map.word_bits
    if bits not in _SIZE_FIELD:
        raise ImageMapError(f"unsupported word size {bits} (use 16, 32 or 64)")
    platform = image_map.platform.encode("utf-8")
    if len(platform) > 255:
        raise ImageMapError(f"platform string is {len(platform)} bytes; at most 255 fit")
    out = bytearray((_SIZE_FIELD[bits], len(platform)))
    out += platform
    out += _varint(len(image_map.images))
    table = _PrefixTable()
    previous_base = 0
    for index, image in enumerate(image_map.images):
        for value in (image.base, image.end_of_text):
            if not 0 <= value < 1 << bits:
                raise ImageMapError(
                    f"image {index} ({image.name}): address 0x{value:x} does not fit in {bits} bits"
                )
        if image.end_of_text < image.base:
            raise ImageMapError(
                f"image {index} ({image.name}): end of text 0x{image.end_of_text:x} "
                f"is below its base 0x{image.base:x}"
            )
        base = _sign_extend(image.base, bits)
        text_size = image.end_of_text - image.base
        delta = _sign_extend(base - previous_base, 64)
        base_length, delta_length = _signed_length(base), _signed_length(delta)
        relative = delta_length < base_length
        address_length = delta_length if relative else base_length
        text_length = _signed_length(text_size)
        if text_length > 8:
            raise ImageMapError(f"image {index} ({image.name}): text size does not fit in 64 bits")
        out.append(
            (HEADER_RELATIVE if relative else 0) | ((address_length - 1) << 3) | (text_length - 1)
        )
        out += _signed_bytes(delta if relative else base, address_length)
        out += _signed_bytes(text_size, text_length)
        if image.build_id:
            out += _varint(len(image.build_id))
            out += image.build_id
        else:
            out.append(0)
        _encode_path(out, image, table)
        previous_base = base
    return bytes(out)


# --- decoder -------------------------------------------------------------------


class _Reader(Cursor):
    """The shared `Cursor` over the map bytes, with the image map's texts."""

    __slots__ = ()

    def fail(self, reason: str, offset: int | None = None) -> FormatError:
        return FormatError(
            reason, offset=self.pos if offset is None else offset, source=self.source
        )

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        return self.fail(f"data ends before the {what}", at)

    def take(self, count: int, what: str) -> bytes:
        """`count` bytes; running out inside them says how many were left."""
        if count > self.remaining:
            raise self.fail(
                f"data ends inside the {what} ({count} bytes needed, {self.remaining} left)"
            )
        return self.bytes(count, what)

    def varint(self, what: str, limit: int) -> int:
        start = self.pos
        value = 0
        while True:
            byte = self.u8(what)
            value = (value << 7) | (byte & 0x7F)
            if value > limit:
                raise self.fail(f"{what} exceeds {limit}", start)
            if not byte & 0x80:
                return value


def decode_image_map(data: bytes | bytearray | memoryview, source: str | None = None) -> ImageMap:
    """Decode CIF bytes; `FormatError` (naming `source` and the offset) for a rejected map."""
    reader = _Reader(bytes(data), source=source)
    info = reader.u8("info byte")
    if info >> 2 or info & 3 == 3:
        raise reader.fail(f"unsupported info byte 0x{info:02x}", 0)
    bits = _WORD_BITS[info & 3]
    mask = (1 << bits) - 1
    platform_at = reader.pos
    platform_bytes = reader.take(reader.u8("platform length"), "platform string")
    try:
        platform = platform_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise reader.fail("platform string is not valid UTF-8", platform_at) from None
    count = reader.varint("image count", MAX_IMAGES)
    image_map = ImageMap(platform, [], bits)
    table = _PrefixTable()
    previous_base = 0
    for index in range(count):
        image_at = reader.pos
        header = reader.u8(f"header of image {index}")
        address_length = ((header >> 3) & 7) + 1
        text_length = (header & 7) + 1
        raw_base = int.from_bytes(
            reader.take(address_length, f"base of image {index}"), "big", signed=True
        )
        base = (previous_base + raw_base if header & HEADER_RELATIVE else raw_base) & mask
        text_size = int.from_bytes(
            reader.take(text_length, f"end of text of image {index}"), "big", signed=True
        )
        if text_size <= 0:
            raise reader.fail(
                f"image {index}: end of text is {text_size} bytes from its base", image_at
            )
        if base + text_size > mask:
            raise reader.fail(
                f"image {index}: end of text 0x{base + text_size:x} is past the end of the "
                f"{bits}-bit address space",
                image_at,
            )
        id_length = reader.varint(f"build ID length of image {index}", MAX_BUILD_ID)
        build_id = reader.take(id_length, f"build ID of image {index}") if id_length else None
        path = _decode_path(reader, table, index, image_map.warnings)
        name = _image_name(path) if path is not None else None
        image_map.images.append(Image(name, path, build_id, base, (base + text_size) & mask))
        previous_base = base
    return image_map


def _decode_path(
    reader: _Reader, table: _PrefixTable, index: int, warnings: list[str]
) -> str | None:
    """Read one path's opcodes. A path that cannot be decoded gives None and
    a warning; reading stays in step with the stream whenever the opcodes
    still say how long they are."""
    start = reader.pos
    path = bytearray()
    str_data = bytearray()
    problem: str | None = None

    def lose(reason: str) -> None:
        nonlocal problem
        if problem is None:
            problem = reason

    try:
        while True:
            op_at = reader.pos
            op = reader.u8("path")
            if op == OP_PATH_END:
                break
            if op < OP_FRAMEWORK:  # str
                chunk = reader.take(op, "path string")
                before = len(str_data)
                str_data += chunk
                path += chunk
                for i in range(max(before, 1), len(str_data)):
                    if str_data[i] in _SEPARATORS:
                        table.define(bytes(str_data[:i]))
            elif op < OP_EXPAND:  # framewk: ends the path
                version = reader.u8("framework version")
                name = reader.take((op & 0x3F) + 1, "framework name")
                if version == SHALLOW_FRAMEWORK:
                    path += b"/" + name + b".framework/" + name
                else:
                    path += b"/" + name + b".framework/Versions/" + bytes((version,)) + b"/" + name
                break
            else:  # expand
                if op < OP_EXPAND_EXTENDED:
                    code = op & 0x3F
                else:
                    length = (op & 0x3F) + 1
                    extra = int.from_bytes(reader.take(length, "prefix code"), "big")
                    code = 64 + extra
                prefix = table.codes.get(code)
                if prefix is None:
                    lose(f"undefined prefix code {code} at offset 0x{op_at:x}")
                else:
                    path += prefix
    except FormatError as exc:
        warnings.append(f"image {index}: path lost: {exc.reason} (offset 0x{reader.pos:x})")
        return None
    if problem is not None:
        warnings.append(f"image {index}: path lost: {problem}")
        return None
    if not path:
        return None
    try:
        return path.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(f"image {index}: path at offset 0x{start:x} is not valid UTF-8")
        return None


def _image_name(path: str) -> str:
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[cut + 1 :]
