"""Every attribute form, including the ones gcc never emits, decoded from hand-built bytes.

The compiled fixtures exercise the forms gcc produces (see test_dwarf_info);
this covers the rest of DWARF 5 table 7.6 (block2/block4, data16, strx3,
addrx3, ref_udata, indirect, flag, negative sdata, ...) with values taken
from the standard's encoding rules.
"""

from __future__ import annotations

import struct

import pytest

from stackmark.binary import read_sleb, read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import (
    Encoding,
    IndirectValue,
    decode_attributes,
    parse_abbrev_table,
    read_form,
    skip_attributes,
)
from stackmark.dwarf.sections import Section
from stackmark.errors import FormatError


def uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        done = (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40)
        out.append(byte | (0 if done else 0x80))
        if done:
            return bytes(out)


ENC64 = Encoding(5, 8, 4, "<")

# (attribute, form, encoded value, expected raw value)
CASES = [
    (0x80, C.DW_FORM_addr, struct.pack("<Q", 0x401000), 0x401000),
    (0x81, C.DW_FORM_block2, struct.pack("<H", 3) + b"abc", b"abc"),
    (0x82, C.DW_FORM_block4, struct.pack("<I", 2) + b"xy", b"xy"),
    (0x83, C.DW_FORM_data2, struct.pack("<H", 0xBEEF), 0xBEEF),
    (0x84, C.DW_FORM_data4, struct.pack("<I", 0xDEADBEEF), 0xDEADBEEF),
    (0x85, C.DW_FORM_data8, struct.pack("<Q", 1 << 63), 1 << 63),
    (0x86, C.DW_FORM_string, b"inline\0", "inline"),
    (0x87, C.DW_FORM_block, uleb(200) + bytes(range(200)), bytes(range(200))),
    (0x88, C.DW_FORM_block1, b"\x01\xff", b"\xff"),
    (0x89, C.DW_FORM_data1, b"\x7f", 0x7F),
    (0x8A, C.DW_FORM_flag, b"\x01", 1),
    (0x8B, C.DW_FORM_sdata, sleb(-129), -129),
    (0x8C, C.DW_FORM_strp, struct.pack("<I", 0x44), 0x44),
    (0x8D, C.DW_FORM_udata, uleb(624485), 624485),
    (0x8E, C.DW_FORM_ref_addr, struct.pack("<I", 0x1234), 0x1234),
    (0x8F, C.DW_FORM_ref1, b"\x10", 0x10),
    (0x90, C.DW_FORM_ref2, struct.pack("<H", 0x200), 0x200),
    (0x91, C.DW_FORM_ref4, struct.pack("<I", 0x30000), 0x30000),
    (0x92, C.DW_FORM_ref8, struct.pack("<Q", 0x400000000), 0x400000000),
    (0x93, C.DW_FORM_ref_udata, uleb(300), 300),
    (0x94, C.DW_FORM_sec_offset, struct.pack("<I", 0x55), 0x55),
    (0x95, C.DW_FORM_exprloc, uleb(2) + b"\x91\x7c", b"\x91\x7c"),
    (0x96, C.DW_FORM_flag_present, b"", 1),
    (0x97, C.DW_FORM_strx, uleb(129), 129),
    (0x98, C.DW_FORM_addrx, uleb(3), 3),
    (0x99, C.DW_FORM_ref_sup4, struct.pack("<I", 7), 7),
    (0x9A, C.DW_FORM_strp_sup, struct.pack("<I", 8), 8),
    (0x9B, C.DW_FORM_data16, bytes(range(16)), bytes(range(16))),
    (0x9C, C.DW_FORM_line_strp, struct.pack("<I", 9), 9),
    (0x9D, C.DW_FORM_ref_sig8, struct.pack("<Q", 0xFEEDFACECAFEBEEF), 0xFEEDFACECAFEBEEF),
    (0x9E, C.DW_FORM_loclistx, uleb(4), 4),
    (0x9F, C.DW_FORM_rnglistx, uleb(5), 5),
    (0xA0, C.DW_FORM_ref_sup8, struct.pack("<Q", 6), 6),
    (0xA1, C.DW_FORM_strx1, b"\x01", 1),
    (0xA2, C.DW_FORM_strx2, struct.pack("<H", 2), 2),
    (0xA3, C.DW_FORM_strx3, b"\x03\x02\x01", 0x010203),
    (0xA4, C.DW_FORM_strx4, struct.pack("<I", 4), 4),
    (0xA5, C.DW_FORM_addrx1, b"\x05", 5),
    (0xA6, C.DW_FORM_addrx2, struct.pack("<H", 6), 6),
    (0xA7, C.DW_FORM_addrx3, b"\x07\x00\x01", 0x010007),
    (0xA8, C.DW_FORM_addrx4, struct.pack("<I", 8), 8),
    (0xA9, C.DW_FORM_GNU_addr_index, uleb(9), 9),
    (0xAA, C.DW_FORM_GNU_str_index, uleb(10), 10),
    (0xAB, C.DW_FORM_GNU_ref_alt, struct.pack("<I", 11), 11),
    (0xAC, C.DW_FORM_GNU_strp_alt, struct.pack("<I", 12), 12),
]


def abbrev_bytes(code: int, tag: int, children: bool, specs: list[tuple[int, int, bytes]]) -> bytes:
    out = uleb(code) + uleb(tag) + bytes([1 if children else 0])
    for attr, form, extra in specs:
        out += uleb(attr) + uleb(form) + extra
    return out + b"\0\0"


def test_every_form_decodes_and_skips_to_the_same_place() -> None:
    specs = [(attr, form, b"") for attr, form, _, _ in CASES]
    specs.append((0xB0, C.DW_FORM_implicit_const, sleb(-42)))
    specs.append((0xB1, C.DW_FORM_indirect, b""))
    table_bytes = abbrev_bytes(1, C.DW_TAG_subprogram, False, specs) + b"\0"
    table = parse_abbrev_table(Section(".debug_abbrev", table_bytes, 0, len(table_bytes), "t"), 0)
    abbrev = table[1]
    plan = abbrev.plan(ENC64)
    payload = b"".join(encoded for _, _, encoded, _ in CASES)
    payload += uleb(C.DW_FORM_data2) + struct.pack("<H", 0x4242)  # the indirect attribute
    buf = b"\x55" * 3 + payload + b"\x99"
    values, end = decode_attributes(buf, 3, plan, ENC64)
    assert end == 3 + len(payload)
    assert skip_attributes(buf, 3, plan.skip, ENC64) == end
    for attr, _, _, expected in CASES:
        assert values[attr] == expected, hex(attr)
    assert values[0xB0] == -42
    assert values[0xB1] == IndirectValue(C.DW_FORM_data2, 0x4242)
    assert plan.forms[0xA3] == C.DW_FORM_strx3


@pytest.mark.parametrize("attr,form,encoded,expected", CASES)
def test_single_form_read(attr: int, form: int, encoded: bytes, expected: object) -> None:
    value, end = read_form(b"\0" + encoded + b"\0", 1, form, ENC64)
    assert value == expected and end == 1 + len(encoded)


def test_offset_and_address_sizes_follow_the_unit() -> None:
    enc32 = Encoding(4, 4, 8, ">")  # 64-bit DWARF, 4-byte addresses, big-endian
    assert read_form(struct.pack(">Q", 5), 0, C.DW_FORM_strp, enc32) == (5, 8)
    assert read_form(struct.pack(">I", 6), 0, C.DW_FORM_addr, enc32) == (6, 4)
    v2 = Encoding(2, 4, 4, "<")  # DWARF 2: ref_addr is address-sized
    assert read_form(struct.pack("<I", 7), 0, C.DW_FORM_ref_addr, v2) == (7, 4)


def test_leb128_edge_values() -> None:
    for value in (0, 1, 127, 128, 16383, 16384, (1 << 64) - 1, 1 << 70):
        assert read_uleb(uleb(value), 0) == (value, len(uleb(value)))
    for value in (0, -1, 63, 64, -64, -65, -(1 << 63), (1 << 63) - 1):
        assert read_sleb(sleb(value), 0) == (value, len(sleb(value)))


def test_abbreviation_table_running_off_the_section_is_an_error() -> None:
    data = abbrev_bytes(1, C.DW_TAG_variable, False, [(C.DW_AT_name, C.DW_FORM_string, b"")])
    cut = data[:-3]
    with pytest.raises(FormatError, match="abbreviation table"):
        parse_abbrev_table(Section(".debug_abbrev", cut, 0, len(cut), "t"), 0)


def test_unknown_form_is_reported() -> None:
    specs = [(C.DW_AT_name, 0x7E, b"")]
    data = abbrev_bytes(1, C.DW_TAG_variable, False, specs) + b"\0"
    table = parse_abbrev_table(Section(".debug_abbrev", data, 0, len(data), "t"), 0)
    with pytest.raises(ValueError, match="unknown attribute form 0x7e"):
        table[1].plan(ENC64)
