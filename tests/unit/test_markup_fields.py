"""Field syntax, case by case, as llvm-symbolizer 19 accepts it (notes section 2)."""

from __future__ import annotations

import pytest

from stackmark.markup import fields as fp


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0x1a2B", 0x1A2B),
        ("0x0000000000000001", 1),
        ("0xffffffffffffffff", 2**64 - 1),
        ("0", 0),
        ("00", 0),
        ("0x0", 0),
        ("0X1", None),
        ("42", None),
        ("0x", None),
        ("", None),
        ("0x10000000000000000", None),
        (" 0x1", None),
        ("0x1 ", None),
        ("0x-1", None),
        ("0x+1", None),
        ("0x0x1", None),
    ],
)
def test_address(text: str, value: int | None) -> None:
    assert fp.parse_address(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("7", 7),
        ("0x1F", 31),
        ("0X1f", 31),
        ("010", 8),
        ("0", 0),
        ("0b101", 5),
        ("0o17", 15),
        ("079", None),
        ("08", None),
        ("-1", None),
        ("0x", None),
        ("", None),
        ("18446744073709551615", 2**64 - 1),
        ("18446744073709551616", None),
        ("1 ", None),
    ],
)
def test_module_id(text: str, value: int | None) -> None:
    assert fp.parse_module_id(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("007", 7),
        ("12", 12),
        ("0x1", None),
        ("-1", None),
        ("", None),
        ("18446744073709551616", None),
    ],
)
def test_frame_number(text: str, value: int | None) -> None:
    assert fp.parse_frame_number(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("AbCd", "abcd"), ("abc", "0abc"), ("", None), ("xyz", None), ("12 ", None)],
)
def test_build_id(text: str, value: str | None) -> None:
    assert fp.parse_build_id(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("r", "r"),
        ("RX", "rx"),
        ("rwx", "rwx"),
        ("w", "w"),
        ("x", "x"),
        ("", None),
        ("xr", None),
        ("wr", None),
        ("g", None),
        ("rr", None),
    ],
)
def test_mode(text: str, value: str | None) -> None:
    assert fp.parse_mode(text) == value


@pytest.mark.parametrize(("text", "value"), [("ra", "ra"), ("pc", "pc"), ("RA", None), ("", None)])
def test_pc_type(text: str, value: str | None) -> None:
    assert fp.parse_pc_type(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("000", 0), ("0x10", 16), ("0xAbC", 0xABC), ("0x", None), ("10", None), ("", None)],
)
def test_hexdict_value(text: str, value: int | None) -> None:
    assert fp.parse_hex_value(text) == value
