"""Breakpad debug IDs of ELF build IDs (stackmark.symbols.debug_id), worked by hand."""

from __future__ import annotations

import pytest

from stackmark.errors import StackmarkError
from stackmark.formats.breakpad import parse_breakpad
from stackmark.symbols.debug_id import build_id_prefix, debug_id_from_build_id, is_debug_id


def test_debug_id_swaps_the_guid_fields_and_appends_age_zero() -> None:
    # A dump_syms output published with Mozilla's symbolication service tests:
    # INFO CODE_ID 80AE0509E7CE335AE3CAB61C274274DE96049B64 goes with the debug ID
    # 0905AE80CEE75A33E3CAB61C274274DE0: 80ae0509 -> 0905AE80, e7ce -> CEE7,
    # 335a -> 5A33, the next 8 bytes as they are, 4 bytes dropped, age 0.
    build_id = "80ae0509e7ce335ae3cab61c274274de96049b64"
    assert debug_id_from_build_id(build_id) == "0905AE80CEE75A33E3CAB61C274274DE0"
    assert build_id_prefix("0905AE80CEE75A33E3CAB61C274274DE0") == build_id[:32]


def test_a_short_build_id_is_padded_with_zero_bytes() -> None:
    # 8 bytes 0102030405060708 -> GUID 04030201-0605-0807 and 8 zero bytes.
    assert debug_id_from_build_id("0102030405060708") == "04030201060508070000000000000000" + "0"


def test_the_breakpad_reader_undoes_what_debug_id_does() -> None:
    build_id = "19c58144ab4a6df75b565f9606724a7243fa2f91"
    debug_id = debug_id_from_build_id(build_id)
    module = parse_breakpad(f"MODULE Linux x86_64 {debug_id} prog\n")
    assert module.build_id().hex() == build_id[:32]


@pytest.mark.parametrize(
    "text", ["", "xyz", "0905AE80", "0905AE80CEE75A33E3CAB61C274274DE", "../" * 11]
)
def test_what_is_not_a_debug_id(text: str) -> None:
    assert not is_debug_id(text)
    with pytest.raises(StackmarkError):
        build_id_prefix(text)


def test_a_build_id_that_is_not_hex_has_no_debug_id() -> None:
    for bad in ("", "zz", "abc"):
        with pytest.raises(StackmarkError):
            debug_id_from_build_id(bad)
