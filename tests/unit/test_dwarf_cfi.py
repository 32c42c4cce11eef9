"""stackmark.dwarf.cfi on `.eh_frame` bytes written out by hand."""

from __future__ import annotations

import struct

import pytest

from stackmark.dwarf.cfi import CfaRule, RegisterRule, RuleKind, read_cfi
from stackmark.errors import FormatError

SECTION_ADDRESS = 0x2000
FUNCTION = 0x1000


def _entry(body: bytes) -> bytes:
    """u32 length, then the body padded with DW_CFA_nop to a multiple of 4."""
    body += b"\0" * (-len(body) % 4)
    return struct.pack("<I", len(body)) + body


def _cie(instructions: bytes, augmentation: bytes = b"zR") -> bytes:
    # id 0, version 1, augmentation, code align 1, data align -8 (sleb 0x78),
    # RA column 16 (rip), "zR": one byte of augmentation data, 0x1b = pcrel|sdata4
    data = b"\x01\x1b" if augmentation == b"zR" else b""
    return _entry(
        struct.pack("<IB", 0, 1) + augmentation + b"\0" + b"\x01\x78\x10" + data + instructions
    )


def _fde(at: int, instructions: bytes, size: int = 0x10) -> bytes:
    # CIE pointer: the distance back from this field (at + 4) to the CIE at 0;
    # pc_begin: pcrel sdata4 = FUNCTION - (SECTION_ADDRESS + at + 8)
    pointer = at + 4
    begin = FUNCTION - (SECTION_ADDRESS + at + 8)
    return _entry(struct.pack("<Iii", pointer, begin, size) + b"\0" + instructions)


# CIE: DW_CFA_def_cfa rsp+8 (0c 07 08), DW_CFA_offset rip at 1*-8 (90 01),
# DW_CFA_restore rbp (c6): a restore in the CIE itself, which gas writes
CIE = _cie(bytes.fromhex("0c07089001c6"))
# FDE: advance 1 (41); def_cfa_offset 16 (0e 10); offset rbp 2*-8 (86 02);
# advance 3 (43); restore r12, which the CIE has no rule for (cc); remember (0a);
# def_cfa_register rbp (0d 06); advance 2 (42); restore_state (0b)
FDE_CODE = bytes.fromhex("410e10860243cc0a0d06420b")


def test_rows_follow_the_instructions() -> None:
    data = CIE + _fde(len(CIE), FDE_CODE)
    (fde,) = read_cfi(data, ".eh_frame", address=SECTION_ADDRESS)
    assert (fde.start, fde.size) == (FUNCTION, 0x10)
    ra = {16: RegisterRule(RuleKind.OFFSET, -8)}
    rbp = {6: RegisterRule(RuleKind.OFFSET, -16)}
    assert [(row.pc - FUNCTION, row.cfa, row.registers) for row in fde.rows()] == [
        (0, CfaRule(7, 8), ra),
        (1, CfaRule(7, 16), ra | rbp),
        (4, CfaRule(6, 16), ra | rbp),  # after remember_state, def_cfa_register
        (6, CfaRule(7, 16), ra | rbp),  # restore_state
    ]


def test_pauth_lr_signing_is_read() -> None:
    # advance 1; DW_CFA_AARCH64_negate_ra_state_with_pc (2c); advance 1; the same again
    data = CIE + _fde(len(CIE), bytes.fromhex("412c412c"))
    rows = read_cfi(data, ".eh_frame", address=SECTION_ADDRESS)[0].rows()
    assert [(row.ra_signed, row.ra_signed_with_pc) for row in rows] == [
        (False, False),
        (True, True),
        (False, False),
    ]


def test_a_location_moving_back_is_a_format_error_at_its_instruction() -> None:
    # a CIE without augmentation: FDE addresses and set_loc are 8-byte absolute
    cie = _cie(bytes.fromhex("0c0708"), augmentation=b"")
    at = len(cie)
    # advance 4 (44), then DW_CFA_set_loc (01) FUNCTION + 2: behind FUNCTION + 4
    code = bytes.fromhex("44") + b"\x01" + struct.pack("<Q", FUNCTION + 2)
    fde = _entry(struct.pack("<IQQ", at + 4, FUNCTION, 0x10) + code)
    (entry,) = read_cfi(cie + fde, ".eh_frame", source="hand")
    with pytest.raises(FormatError, match="moves back from 0x1004 to 0x1002") as caught:
        entry.rows()
    # length 4 + pointer 4 + two addresses 16, then the advance: set_loc is 25 bytes in
    assert caught.value.offset == at + 25 and caught.value.source == "hand"


def test_every_cut_of_the_section_is_a_format_error_or_fewer_entries() -> None:
    data = CIE + _fde(len(CIE), FDE_CODE)
    for cut in range(len(data)):
        try:
            for fde in read_cfi(data[:cut], ".eh_frame", address=SECTION_ADDRESS):
                fde.rows()
        except FormatError as exc:
            assert exc.offset is not None and exc.offset <= cut
            assert exc.reason.startswith(".eh_frame: ")


def test_a_value_cut_by_the_end_of_its_entry_is_named_where_the_entry_ends() -> None:
    at = len(CIE)
    # advance 1 (41), DW_CFA_def_cfa_offset (0e) whose ULEB128 operand has only a
    # first byte with the continuation bit (80): the FDE body is 13 + 3 = 16 bytes,
    # so no padding follows. Its instructions start at at + 4 + 13 = at + 17; the
    # operand would need a byte at at + 17 + 3 = at + 20, the end of the entry.
    data = CIE + _fde(at, bytes.fromhex("410e80"))
    (fde,) = read_cfi(data, ".eh_frame", address=SECTION_ADDRESS, source="hand")
    with pytest.raises(FormatError, match="runs past the end of its entry") as caught:
        fde.rows()
    assert caught.value.offset == at + 20 == len(data)
    # A fixed-width value is named where it starts: DW_CFA_advance_loc2 (03) with one
    # of its two bytes (01), which starts after 41 and 03, at at + 17 + 2 = at + 19.
    data = CIE + _fde(at, bytes.fromhex("410301"))
    (fde,) = read_cfi(data, ".eh_frame", address=SECTION_ADDRESS, source="hand")
    with pytest.raises(FormatError, match="runs past the end of its entry") as caught:
        fde.rows()
    assert caught.value.offset == at + 19


def test_an_augmentation_string_is_looked_for_in_its_own_entry_only() -> None:
    # A CIE of 8 bytes: id 0, version 1, then "zRz" with no NUL before the entry
    # ends at 4 + 8 = 12. The next entry (a whole CIE) has NULs: none may end it.
    cut_short = struct.pack("<IIB", 8, 0, 1) + b"zRz"
    with pytest.raises(FormatError, match="augmentation is not NUL-terminated") as caught:
        read_cfi(cut_short + CIE, ".eh_frame", address=SECTION_ADDRESS)
    assert caught.value.offset == 9  # where the string starts: after length, id, version


def test_every_entry_is_read_within_its_own_bounds_on_a_long_section() -> None:
    # 2,000 FDEs after one CIE: each one read, each pointing back at the same CIE.
    data = bytearray(CIE)
    for _ in range(2000):
        data += _fde(len(data), FDE_CODE)
    fdes = read_cfi(bytes(data), ".eh_frame", address=SECTION_ADDRESS)
    assert len(fdes) == 2000
    assert {fde.cie.offset for fde in fdes} == {0}
    assert {fde.instructions for fde in fdes} == {FDE_CODE + b"\0" * (-(13 + len(FDE_CODE)) % 4)}
