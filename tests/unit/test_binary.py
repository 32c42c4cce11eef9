"""The one cursor and the one LEB128 family (stackmark/binary.py), from hand-built bytes.

Expected values are worked out from the encoding rules (DWARF 5 section 7.6):
seven bits a byte, least significant first, bit 7 set on all but the last
byte; a signed value's last byte carries its sign in bit 6.
"""

from __future__ import annotations

import struct

import pytest

from stackmark.binary import (
    Cursor,
    RecordLayout,
    read_sleb,
    read_sleb_lenient,
    read_uleb,
    skip_leb,
    sleb_bytes,
    sleb_rest,
    uleb_bytes,
    uleb_rest,
    unpack_at,
)
from stackmark.errors import FormatError

# 624485 = 0x98765 -> groups of 7 bits, low first: 0x65, 0x0E, 0x26 -> e5 8e 26
# (the example of DWARF 5 figure C.1's neighbours, and of LLVM's LEB128 tests).
ULEB_624485 = b"\xe5\x8e\x26"
# -123456: two's complement low 21 bits 0x1E1DC0 -> 0x40, 0x3B, 0x78 -> c0 bb 78
SLEB_MINUS_123456 = b"\xc0\xbb\x78"


# --- cursor: bounds and offsets --------------------------------------------------------


def test_cursor_reads_fixed_integers_in_its_byte_order() -> None:
    data = b"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
    little = Cursor(data, 0, len(data), little=True)
    assert little.u8("a") == 0x01
    assert little.u16("b") == 0x0302
    assert little.u32("c") == 0x07060504
    assert little.u64("d") == 0x0F0E0D0C0B0A0908
    assert little.at_end()
    big = Cursor(data, 0, len(data), little=False)
    assert big.u16("b") == 0x0102
    assert big.uint(3, "odd width") == 0x030405
    assert big.sint(1, "signed") == 0x06
    assert Cursor(b"\xff\xfe", little=False).sint(2, "signed") == -2


def test_cursor_stops_at_its_end_not_the_buffer_end() -> None:
    cursor = Cursor(b"\x00" * 16, 4, 6, source="blob")
    assert cursor.remaining == 2
    cursor.u16("first")
    with pytest.raises(FormatError) as caught:
        cursor.u8("second")
    assert caught.value.offset == 6
    assert caught.value.source == "blob"
    assert "second" in str(caught.value)
    assert str(caught.value).startswith("blob: offset 0x6: ")


def test_a_failed_read_leaves_the_cursor_where_it_was() -> None:
    cursor = Cursor(b"\x01\x02\x03", 1)
    with pytest.raises(FormatError) as caught:
        cursor.u32("word")
    assert caught.value.offset == 1
    assert cursor.pos == 1
    assert cursor.u16("half") == 0x0302


def test_end_past_the_buffer_is_clamped() -> None:
    cursor = Cursor(b"\x01\x02", 0, 100)
    assert cursor.end == 2
    with pytest.raises(FormatError):
        cursor.bytes(3, "block")


def test_bytes_refuses_a_negative_size() -> None:
    with pytest.raises(FormatError):
        Cursor(b"abc").bytes(-1, "block")


def test_sub_is_a_cursor_over_the_next_record_and_skips_it() -> None:
    cursor = Cursor(b"\xaa\xbb\xcc\xdd\xee", 1, 5)
    record = cursor.sub(2, "record")
    assert (record.pos, record.end, record.base) == (1, 3, 1)
    assert cursor.pos == 3
    assert record.bytes(2, "payload") == b"\xbb\xcc"
    with pytest.raises(FormatError) as caught:
        cursor.sub(3, "too long")
    assert caught.value.offset == 3


def test_a_subclass_keeps_its_own_error_text() -> None:
    class Named(Cursor):
        def overrun(self, what: str, at: int, size: int | None) -> FormatError:
            return FormatError(f"{what}/{at}/{size}", offset=at)

    with pytest.raises(FormatError, match=r"^offset 0x1: word/1/4$"):
        Named(b"\x00\x00\x00\x00", 1).u32("word")
    with pytest.raises(FormatError, match=r"^offset 0x0: leb/0/None$"):
        Named(b"\x80\x80").uleb("leb")
    assert isinstance(Named(b"\x00\x00").sub(1, "record"), Named)


def test_a_record_layout_gives_sizes_and_offsets_from_its_codes() -> None:
    layout = RecordLayout("demo", ("magic", "4s"), ("count", "H"), ("base", "Q"))
    # 4 + 2 + 8 = 14: packed, no alignment padding before the u64.
    assert layout.size == 14
    assert layout.offsets == {"magic": 0, "count": 4, "base": 6}
    values = {"magic": b"DEMO", "count": 0x0102, "base": 3, "other": 9}
    assert layout.pack(">", values) == b"DEMO\x01\x02" + bytes(7) + b"\x03"
    assert layout.picker("base", "magic")((b"DEMO", 1, 3)) == (3, b"DEMO")


def test_cursor_reads_a_record_by_its_field_names_and_checks_its_size() -> None:
    layout = RecordLayout("pair", ("first", "H"), ("second", "B"))
    cursor = Cursor(b"\x00\x01\x02\x03\x04\x05", 1, little=False)
    assert cursor.record(layout, "pair") == {"first": 0x0102, "second": 0x03}
    assert cursor.pos == 4
    with pytest.raises(FormatError) as caught:
        cursor.record(layout, "second pair")
    assert caught.value.offset == 4
    assert "second pair" in str(caught.value)
    assert cursor.unpack(struct.Struct("<H"), "half") == (0x0504,)


# --- cursor: LEB128 ---------------------------------------------------------------------


def test_cursor_leb128_values_by_hand() -> None:
    cursor = Cursor(ULEB_624485 + SLEB_MINUS_123456 + b"\x7f\x80\x01")
    assert cursor.uleb("u") == 624485
    assert cursor.sleb("s") == -123456
    assert cursor.sleb("minus one") == -1  # 0x7f: bit 6 set, one byte
    assert cursor.uleb("128") == 128  # 80 01
    assert cursor.at_end()


def test_cursor_leb128_is_exact_beyond_64_bits_unless_asked_to_wrap() -> None:
    # 2**70 + 5: ten groups of seven bits; the top group holds bit 70 (1 << 0 of group 10).
    wide = b"\x85" + b"\x80" * 9 + b"\x01"
    assert Cursor(wide).uleb("wide") == (1 << 70) + 5

    class Llvm(Cursor):
        WRAP_LEB_TO_64_BITS = True

    assert Llvm(wide).uleb("wide") == 5
    # -(2**70) - 1 as SLEB128: low 64 bits of it are 0xFFFF...FFFF = -1 as int64.
    negative = sleb_bytes(-(1 << 70) - 1)
    assert Cursor(negative).sleb("wide") == -(1 << 70) - 1
    assert Llvm(negative).sleb("wide") == -1
    # 2**63 wraps to int64's minimum.
    assert Llvm(sleb_bytes(1 << 63)).sleb("edge") == -(1 << 63)


def test_overlong_encodings_decode_to_their_value() -> None:
    # 1 padded to five bytes (81 80 80 80 00), as assemblers leave room for relocations.
    padded = b"\x81\x80\x80\x80\x00"
    assert Cursor(padded).uleb("padded") == 1
    assert read_uleb(padded, 0) == (1, 5)
    assert skip_leb(padded, 0) == 5
    # -1 padded: ff ff 7f -> 21 bits of ones, sign bit set.
    assert read_sleb(b"\xff\xff\x7f", 0) == (-1, 3)
    assert Cursor(b"\xff\xff\x7f").sleb("padded") == -1


def test_a_leb128_cut_by_the_end_names_where_it_starts() -> None:
    cursor = Cursor(b"\x00\x00\x85\x80", 2, source="cut")
    with pytest.raises(FormatError) as caught:
        cursor.uleb("count")
    assert caught.value.offset == 2
    assert cursor.pos == 2
    with pytest.raises(FormatError):
        cursor.sleb("delta")


# --- random access ------------------------------------------------------------------------


def test_unpack_at_checks_both_ends() -> None:
    layout = struct.Struct("<HI")  # 6 bytes
    data = bytes(range(10))

    def overrun(what: str, at: int, size: int) -> FormatError:
        return FormatError(f"{what}: {size} bytes", offset=at, source="table")

    assert unpack_at(layout, data, 4, 10, "entry", overrun) == (0x0504, 0x09080706)
    with pytest.raises(FormatError) as caught:
        unpack_at(layout, data, 5, 10, "entry", overrun)
    assert (caught.value.offset, caught.value.reason) == (5, "entry: 6 bytes")
    with pytest.raises(FormatError):
        unpack_at(layout, data, 0, 5, "entry", overrun)  # the end, not the buffer, bounds it
    with pytest.raises(FormatError):
        unpack_at(layout, data, -1, 10, "entry", overrun)


# --- the unchecked fast paths -----------------------------------------------------------


def test_read_uleb_and_read_sleb_by_hand() -> None:
    assert read_uleb(b"\x00" + ULEB_624485, 1) == (624485, 4)
    assert read_sleb(SLEB_MINUS_123456, 0) == (-123456, 3)
    assert read_uleb(b"\x7f", 0) == (127, 1)
    assert read_sleb(b"\x3f", 0) == (63, 1)
    assert read_sleb(b"\x40", 0) == (-64, 1)
    assert read_uleb(b"\x85" + b"\x80" * 9 + b"\x01", 0) == ((1 << 70) + 5, 11)


def test_the_fast_paths_raise_index_error_past_the_buffer() -> None:
    # The DWARF readers catch IndexError once around a record (sections.guarded).
    for decode in (read_uleb, read_sleb, skip_leb):
        with pytest.raises(IndexError):
            decode(b"\x80\x80", 0)


def test_fast_paths_agree_with_the_cursor_on_every_small_value() -> None:
    for value in [*range(-300, 300), 1 << 32, -(1 << 40), (1 << 64) - 1, -(1 << 63)]:
        signed = sleb_bytes(value)
        assert read_sleb(signed, 0) == (value, len(signed))
        assert Cursor(signed).sleb("v") == value
        assert skip_leb(signed, 0) == len(signed)
        if value >= 0:
            unsigned = uleb_bytes(value)
            assert read_uleb(unsigned, 0) == (value, len(unsigned))
            assert Cursor(unsigned).uleb("v") == value


def test_read_sleb_lenient_keeps_what_a_cut_value_has() -> None:
    # 0xc0 alone: six value bits 0x40 with the continuation bit set, then the end.
    # Bit 6 of the last byte read is set, so the value is sign-extended: 0x40 - 0x80.
    assert read_sleb_lenient(b"\xc0", 0, 1) == (-64, 1)
    # whole: 0x11 + 0x7c * 128 = 15889, minus 2**14 = -495
    assert read_sleb_lenient(b"\x91\x7c", 0, 2) == (-495, 2)
    assert read_sleb_lenient(b"", 0, 0) == (0, 0)
    # Eleven bytes: shift 77 >= 64, so no sign extension; the low 64 bits wrap to -1.
    assert read_sleb_lenient(b"\xff" * 9 + b"\x01", 0, 10)[0] == -1


# --- iterator and encoders ----------------------------------------------------------------


def test_rest_decoders_finish_a_value_whose_first_byte_was_taken() -> None:
    it = iter(ULEB_624485[1:])
    assert uleb_rest(it, ULEB_624485[0]) == 624485
    it = iter(SLEB_MINUS_123456[1:])
    assert sleb_rest(it, SLEB_MINUS_123456[0]) == -123456
    assert uleb_rest(iter(b"\x80" * 9 + b"\x01"), 0x85) == 5  # 2**70 + 5, low 64 bits
    with pytest.raises(StopIteration):
        uleb_rest(iter(b""), 0x80)


def test_encoders_by_hand() -> None:
    assert uleb_bytes(624485) == ULEB_624485
    assert sleb_bytes(-123456) == SLEB_MINUS_123456
    assert uleb_bytes(0) == b"\x00"
    assert sleb_bytes(63) == b"\x3f"
    assert sleb_bytes(64) == b"\xc0\x00"  # 64 alone would read as -64
    assert sleb_bytes(-65) == b"\xbf\x7f"
    assert uleb_bytes(1, 5) == b"\x81\x80\x80\x80\x00"
    assert uleb_bytes(624485, 3) == ULEB_624485
    assert uleb_bytes(1 << 14, 2) == b"\x80\x00"  # cut to 14 bits
