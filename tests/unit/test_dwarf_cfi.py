"""stackmark.dwarf.cfi on `.eh_frame` and `.debug_frame` bytes written out by hand.

The entry walk (`walk_fdes`) is the one `read_cfi` and `CfiRanges` (the GDB
unwinder's question) both make: the cases below that the two parsers once
answered differently are checked through both names."""

from __future__ import annotations

import struct

import pytest

from stackmark.dwarf.cfi import CfaRule, RegisterRule, RuleKind, read_cfi
from stackmark.dwarf.cfi_entries import walk_fdes
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


# -- the walk both readers make: what they once disagreed on -----------------------------

DEBUG_CIE_ID = 0xFFFFFFFF  # a CIE's id in a 32-bit .debug_frame


def _cie_with(
    *,
    version: int = 1,
    augmentation: bytes = b"zR",
    data: bytes = b"\x1b",
    before_factors: bytes = b"",
    cie_id: int = 0,
) -> bytes:
    """A CIE as `_cie` writes it, with every field that the cases vary; its
    augmentation data (a one-byte length, then `data`) only after a "z"."""
    body = struct.pack("<IB", cie_id, version) + augmentation + b"\0" + before_factors
    body += b"\x01\x78\x10"  # code align 1, data align -8, RA column 16
    if augmentation.startswith(b"z"):
        body += bytes([len(data)]) + data
    return _entry(body + bytes.fromhex("0c0708"))


def _absolute_fde(cie_pointer: int, start: int = FUNCTION, size: int = 0x10) -> bytes:
    """An FDE with 8-byte absolute pointers (a CIE without "R") and no augmentation data."""
    return _entry(struct.pack("<IQQ", cie_pointer, start, size))


def _with_fde(cie: bytes) -> bytes:
    """`cie`, then an FDE of it as `_fde` writes it (pc-relative sdata4 pointers)."""
    return cie + _fde(len(cie), b"")


def _both_walks(data: bytes, section: str) -> list[tuple[int, int]]:
    """The (start, size) pairs of read_cfi and of the walk CfiRanges makes, which must agree."""
    full = [(f.start, f.size) for f in read_cfi(data, section, address=SECTION_ADDRESS)]
    headers = [(h.start, h.size) for h in walk_fdes(data, section, address=SECTION_ADDRESS)]
    assert full == headers
    return full


_AFTER = len(CIE) + len(_fde(len(CIE), b""))  # where an entry after CIE + FDE starts
_SECOND = len(CIE) + len(_fde(len(CIE), b""))
# Each case: a section, the error, its offset, and (in its id) which reader accepted
# it before the two shared one walk: "R" CfiRanges, "C" read_cfi, "R+C" both;
# "text": both refused it, CfiRanges with a text not naming the field.
REFUSED = [
    pytest.param(
        CIE + _fde(len(CIE), b"") + b"\0\0",
        ".eh_frame",
        "entry length at 0x2c runs past the end of its entry",
        _AFTER,  # CIE 24 + FDE 20 = 44 = 0x2c
        id="R: two bytes after the last entry",
    ),
    pytest.param(
        CIE + _fde(len(CIE), b"") + _cie_with(version=2),
        ".eh_frame",
        r"CIE version 2 \(1, 3 and 4 are known\)",
        _AFTER + 8,  # after its length and id
        id="R: a CIE no FDE uses, of an unknown version",
    ),
    pytest.param(
        # the second FDE's pointer goes back to the first FDE (at 24), not to the CIE
        CIE
        + _fde(len(CIE), b"")
        + _entry(struct.pack("<Iii", _SECOND + 4 - len(CIE), 0, 0x10) + b"\0"),
        ".eh_frame",
        "an FDE points at 0x18, which is not a CIE",
        len(CIE),
        id="R: an FDE pointing at an FDE",
    ),
    pytest.param(
        _with_fde(_cie_with(version=2)),
        ".eh_frame",
        r"CIE version 2",
        8,
        id="R: a CIE of version 2",
    ),
    pytest.param(
        _cie_with(version=4, augmentation=b"", before_factors=b"\x04\x00", cie_id=DEBUG_CIE_ID)
        + _absolute_fde(0),
        ".debug_frame",
        "CIE address size 4, not the file's 8",
        10,  # length 4, id 4, version 1, "" 1
        id="R+C: a CIE's address size unlike the file's",
    ),
    pytest.param(
        _cie_with(version=4, augmentation=b"", before_factors=b"\x08\x01", cie_id=DEBUG_CIE_ID)
        + _absolute_fde(0),
        ".debug_frame",
        "CIE segment selector size 1",
        11,
        id="R+C: a segment selector",
    ),
    pytest.param(
        _cie_with(augmentation=b"xy") + _absolute_fde(20 + 4),
        ".eh_frame",
        "unknown CIE augmentation 'xy'",
        0,
        id="R: an augmentation without z that nobody defines",
    ),
    pytest.param(
        # "zR" whose augmentation data says 64 bytes: the CIE has 1 (and padding)
        _with_fde(_entry(struct.pack("<IB", 0, 1) + b"zR\0\x01\x78\x10\x40\x1b\x0c\x07\x08")),
        ".eh_frame",
        "CIE augmentation data of 64 bytes runs past the end of its entry",
        16,  # length 4, id 4, version 1, "zR\0" 3, factors and RA 3, the length 1
        id="R+C: augmentation data longer than its CIE",
    ),
    pytest.param(
        # "zR" with 0 bytes of augmentation data: the R letter's byte is not in it
        _with_fde(_entry(struct.pack("<IB", 0, 1) + b"zR\0\x01\x78\x10\x00\x1b\x0c\x07\x08")),
        ".eh_frame",
        "FDE pointer encoding at 0x10 runs past the end of its entry",
        16,
        id="R+C: a letter's byte after the augmentation data",
    ),
    pytest.param(
        _with_fde(_cie_with(augmentation=b"zPR", data=b"\xff\x1b")),
        ".eh_frame",
        "personality: unsupported pointer encoding 0xff",
        18,  # 4 + 4 + 1 + "zPR\0" 4 + 3 + the length 1 + the encoding 1
        id="C: a personality pointer encoded as omitted",
    ),
    pytest.param(
        _with_fde(_cie_with(augmentation=b"zPR", data=b"\x50" + bytes(8) + b"\x1b")),
        ".eh_frame",
        "personality: unsupported pointer encoding 0x50",
        18,
        id="R: an aligned personality pointer",
    ),
    pytest.param(
        _with_fde(_cie_with(data=b"\xff")),
        ".eh_frame",
        "FDE initial location: unsupported pointer encoding 0xff",
        20 + 8,  # the CIE's 20 bytes, then the FDE's length and CIE pointer
        id="R: FDE pointers encoded as omitted",
    ),
    pytest.param(
        _with_fde(_cie_with(data=b"\x3b")),
        ".eh_frame",
        "FDE initial location: unsupported pointer encoding 0x3b",
        20 + 8,
        id="C: a data-relative FDE location (the GOT's address is not known)",
    ),
    pytest.param(
        _with_fde(_cie_with(data=b"\x9b")),
        ".eh_frame",
        "FDE initial location: unsupported pointer encoding 0x9b",
        20 + 8,
        id="C: an indirect FDE location",
    ),
    pytest.param(
        CIE + _entry(struct.pack("<Iii", len(CIE) + 4, 0, 0x10) + b"\x7f"),
        ".eh_frame",
        "FDE augmentation data of 127 bytes runs past the end of its entry",
        len(CIE) + 17,  # length 4, pointer 4, two pointers 8, the length 1
        id="R+C: FDE augmentation data longer than its FDE",
    ),
    pytest.param(
        CIE + struct.pack("<I", 2) + b"\0\0" + _fde(len(CIE) + 6, b""),
        ".eh_frame",
        "CIE id or pointer at 0x1c runs past the end of its entry",
        len(CIE) + 4,
        id="text: an entry too short for its CIE id",
    ),
    pytest.param(
        # a .debug_frame FDE pointing at a CIE (at 24) whose length runs past the section
        _absolute_fde(24) + struct.pack("<II", 0x1000, DEBUG_CIE_ID),
        ".debug_frame",
        "CIE runs past the end of the section",
        24,
        id="text: the CIE an FDE points at runs past the section",
    ),
]


@pytest.mark.parametrize(("data", "section", "message", "offset"), REFUSED)
def test_what_the_two_readers_once_disagreed_on_is_refused_by_both(
    data: bytes, section: str, message: str, offset: int
) -> None:
    for read in (read_cfi, lambda *a, **k: list(walk_fdes(*a, **k))):
        with pytest.raises(FormatError, match=message) as caught:
            read(data, section, address=SECTION_ADDRESS, source="hand")
        assert caught.value.offset == offset and caught.value.source == "hand"
        assert caught.value.reason.startswith(f"{section}: ")


def test_gcc2_eh_data_is_right_after_the_augmentation_string() -> None:
    # "eh" (GCC 2): an 8-byte eh_ptr follows the string, then the factors; read_cfi
    # once read the pointer after the return-address column, misreading both.
    cie = _entry(
        struct.pack("<IB", 0, 1) + b"eh\0" + struct.pack("<Q", 0xAAAA) + b"\x01\x78\x10\x0c\x07\x08"
    )
    data = cie + _absolute_fde(len(cie) + 4)
    (fde,) = read_cfi(data, ".eh_frame")
    assert (fde.cie.code_alignment, fde.cie.data_alignment, fde.cie.ra_register) == (1, -8, 16)
    assert fde.cie.instructions.startswith(bytes.fromhex("0c0708"))
    assert _both_walks(data, ".eh_frame") == [(FUNCTION, 0x10)]


def test_letters_the_readers_once_read_differently() -> None:
    # "zGR": the MTE letter G has no data, and R after it still applies (CfiRanges
    # stopped at G and read absolute pointers).
    data = _with_fde(_cie_with(augmentation=b"zGR"))
    assert _both_walks(data, ".eh_frame") == [(FUNCTION, 0x10)]
    # A text-relative personality pointer (0x23: udata4) is skipped by its size
    # (read_cfi refused it, although its value is never used).
    data = _cie_with(augmentation=b"zPR", data=b"\x23" + bytes(4) + b"\x1b")
    assert _both_walks(data + _fde(len(data), b""), ".eh_frame") == [(FUNCTION, 0x10)]
    # In .debug_frame too the CIE's "R" encoding applies (as in GDB): udata4 (0x03)
    # pointers, then an empty augmentation data length (read_cfi read 8 bytes each).
    cie = _cie_with(data=b"\x03", cie_id=DEBUG_CIE_ID)
    data = cie + _entry(struct.pack("<IIIB", 0, FUNCTION, 0x10, 0))
    assert _both_walks(data, ".debug_frame") == [(FUNCTION, 0x10)]


@pytest.mark.parametrize(
    ("encoding", "pointers"),
    [
        # absolute: FUNCTION and the size 0x10, in each format
        (0x00, struct.pack("<QQ", FUNCTION, 0x10)),  # absptr: the address size
        (0x01, b"\x80\x20\x10"),  # uleb128: 0x1000 = 0x80 0x20
        (0x02, struct.pack("<HH", FUNCTION, 0x10)),
        (0x03, struct.pack("<II", FUNCTION, 0x10)),
        (0x04, struct.pack("<QQ", FUNCTION, 0x10)),
        (0x09, b"\x80\x20\x10"),  # sleb128
        (0x0A, struct.pack("<hh", FUNCTION, 0x10)),
        (0x0B, struct.pack("<ii", FUNCTION, 0x10)),
        (0x0C, struct.pack("<qq", FUNCTION, 0x10)),
        # pc-relative: FUNCTION - (SECTION_ADDRESS + 28) = -0x101c, the field being at
        # offset 28 (CIE 20 bytes, then the FDE's length and pointer); the size stays absolute
        (0x1B, struct.pack("<ii", FUNCTION - SECTION_ADDRESS - 28, 0x10)),
        (0x1C, struct.pack("<qq", FUNCTION - SECTION_ADDRESS - 28, 0x10)),
        # sleb128 -0x101c: low 7 bits 0x64 (with the continuation bit: e4), then -0x21 (5f)
        (0x19, b"\xe4\x5f\x10"),
    ],
)
def test_fde_pointers_in_every_encoding(encoding: int, pointers: bytes) -> None:
    cie = _cie_with(data=bytes([encoding]))
    assert len(cie) == 20
    data = cie + _entry(struct.pack("<I", 24) + pointers + b"\0")
    assert _both_walks(data, ".eh_frame") == [(FUNCTION, 0x10)]
    # An FDE of 5 bytes, its entry ending inside the initial location: refused in
    # every encoding, naming the field where it starts (20 + 8 = 28 = 0x1c), or for
    # a LEB128, where the entry ends (0x1d).
    cut = cie + struct.pack("<II", 5, 24) + pointers[:1]
    at = 0x1D if encoding & 0x0F in (0x01, 0x09) else 0x1C
    with pytest.raises(FormatError, match=f"FDE initial location at 0x{at:x} runs past the end"):
        _both_walks(cut, ".eh_frame")
