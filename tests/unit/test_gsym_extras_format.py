"""The GSYM extras header (stackmark.formats.gsym.extras), pinned by hand.

The expected offsets are the running sums of the field sizes of the layout
in extras.py's docstring; the expected bytes of an empty file are written out
field by field.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import pytest

from stackmark.formats.gsym.codec import RecordError
from stackmark.formats.gsym.extras import (
    HEADER_LAYOUT,
    Extras,
    ExtrasBuilder,
    check_extras_header,
)


def test_the_header_layout_is_the_documented_one() -> None:
    assert [(name, HEADER_LAYOUT.offsets[name]) for name in HEADER_LAYOUT.names] == [
        ("magic", 0),
        ("version", 4),  # 0 + 4
        ("padding", 6),  # 4 + 2
        ("gsym_size", 8),  # 6 + 2
        ("gsym_crc", 16),  # 8 + 8
        ("num_functions", 20),  # 16 + 4, then 4 bytes each
        ("num_nodes", 24),
        ("num_bounds", 28),
        ("num_states", 32),
        ("num_path_entries", 36),
        ("num_paths", 40),
        ("strtab_size", 44),
        ("body_crc", 48),
        ("reserved", 52),
    ]
    assert HEADER_LAYOUT.size == 64  # 52 + 12


def test_an_empty_extras_file_byte_by_byte() -> None:
    gsym = b"gsym"
    # No function: first_node = [0]; one (empty) path: path_first = [0, 0]; the
    # other tables and the strings are empty. 4 + 8 = 12 body bytes, all zero.
    body = bytes(12)
    header = (
        b"SMGX"
        + b"\x02\x00"  # version 2
        + b"\x00\x00"  # padding
        + b"\x04" + bytes(7)  # gsym_size: 4, u64
        + zlib.crc32(gsym).to_bytes(4, "little")
        + bytes(4 * 5)  # functions, nodes, bounds, states, path entries: 0
        + b"\x01\x00\x00\x00"  # num_paths: 1
        + bytes(4)  # strtab_size: 0
        + zlib.crc32(body).to_bytes(4, "little")
        + bytes(12)  # reserved
    )  # fmt: skip
    assert ExtrasBuilder().encode(gsym) == header + body
    extras = Extras(header + body, gsym)
    assert (extras.num_functions, extras.num_paths) == (0, 1)


@pytest.mark.parametrize(
    ("damage", "offset", "message"),
    [
        (lambda data: data[:63], 0, "shorter than its header"),
        (lambda data: b"SMGY" + data[4:], 0, "not a stackmark GSYM extras file"),
        (lambda data: data[:4] + b"\x03" + data[5:], 4, "unsupported extras version 3"),
        (lambda data: data[:8] + b"\x05" + data[9:], 8, "belongs to another GSYM file"),
        (lambda data: data + b"\0", 64, "has 77 bytes, its header implies 76"),
        (lambda data: data[:-1] + b"\x01", 64, r"damaged \(CRC mismatch\)"),
    ],
)
def test_a_damaged_header_names_what_and_where(
    damage: Callable[[bytes], bytes], offset: int, message: str
) -> None:
    gsym = b"gsym"
    data = damage(ExtrasBuilder().encode(gsym))
    for read in (Extras, check_extras_header):
        with pytest.raises(RecordError, match=message) as caught:
            read(data, gsym, "x.gsymx")
        assert caught.value.offset == offset
        assert caught.value.source == "x.gsymx"
