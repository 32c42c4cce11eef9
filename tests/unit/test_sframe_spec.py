"""The SFrame record layouts of stackmark.formats.sframe.spec, pinned to the spec.

The expected tables are copied by hand from the packed structs of binutils'
include/sframe.h (and the SFrame format manual for v1's 17-byte FDE): each
field's name, offset and C type. The offsets are the running sums of the C
types' sizes, worked out in the comments.
"""

from __future__ import annotations

import pytest

from stackmark.binary import RecordLayout
from stackmark.formats.sframe import spec

# C type -> (bytes, signed)
C_TYPES = {
    "uint8_t": (1, False),
    "int8_t": (1, True),
    "uint16_t": (2, False),
    "uint32_t": (4, False),
    "int32_t": (4, True),
    "int64_t": (8, True),
}

# (field, offset, C type), in file order; the record's size last.
SPEC_RECORDS: dict[str, tuple[list[tuple[str, int, str]], int]] = {
    "sframe_header": (
        [
            ("sfp_magic", 0, "uint16_t"),  # sfh_preamble: 2 + 1 + 1 = 4 bytes
            ("sfp_version", 2, "uint8_t"),
            ("sfp_flags", 3, "uint8_t"),
            ("sfh_abi_arch", 4, "uint8_t"),
            ("sfh_cfa_fixed_fp_offset", 5, "int8_t"),
            ("sfh_cfa_fixed_ra_offset", 6, "int8_t"),
            ("sfh_auxhdr_len", 7, "uint8_t"),
            ("sfh_num_fdes", 8, "uint32_t"),
            ("sfh_num_fres", 12, "uint32_t"),
            ("sfh_fre_len", 16, "uint32_t"),
            ("sfh_fdeoff", 20, "uint32_t"),
            ("sfh_freoff", 24, "uint32_t"),
        ],
        28,  # 24 + 4
    ),
    "fde v1": (
        [
            ("sfde_func_start_address", 0, "int32_t"),
            ("sfde_func_size", 4, "uint32_t"),
            ("sfde_func_start_fre_off", 8, "uint32_t"),
            ("sfde_func_num_fres", 12, "uint32_t"),
            ("sfde_func_info", 16, "uint8_t"),
        ],
        17,  # 16 + 1
    ),
    "fde v2": (
        [
            ("sfde_func_start_address", 0, "int32_t"),
            ("sfde_func_size", 4, "uint32_t"),
            ("sfde_func_start_fre_off", 8, "uint32_t"),
            ("sfde_func_num_fres", 12, "uint32_t"),
            ("sfde_func_info", 16, "uint8_t"),
            ("sfde_func_rep_size", 17, "uint8_t"),
            ("sfde_func_padding2", 18, "uint16_t"),
        ],
        20,  # 18 + 2
    ),
    "fde v3": (
        [
            ("sfde_func_start_address", 0, "int64_t"),
            ("sfde_func_size", 8, "uint32_t"),
            ("sfde_func_start_fre_off", 12, "uint32_t"),
        ],
        16,  # 12 + 4
    ),
    "fde attributes v3": (
        [
            ("sfda_func_num_fres", 0, "uint16_t"),
            ("sfda_func_info", 2, "uint8_t"),
            ("sfda_func_info2", 3, "uint8_t"),
            ("sfda_func_rep_size", 4, "uint8_t"),
        ],
        5,  # 4 + 1
    ),
    "fre addr1": ([("sfre_start_address", 0, "uint8_t"), ("sfre_info", 1, "uint8_t")], 2),
    "fre addr2": ([("sfre_start_address", 0, "uint16_t"), ("sfre_info", 2, "uint8_t")], 3),
    "fre addr4": ([("sfre_start_address", 0, "uint32_t"), ("sfre_info", 4, "uint8_t")], 5),
}

OURS: dict[str, RecordLayout] = {
    "sframe_header": spec.HEADER_LAYOUT,
    "fde v1": spec.FDE_LAYOUTS[spec.VERSION_1],
    "fde v2": spec.FDE_LAYOUTS[spec.VERSION_2],
    "fde v3": spec.FDE_LAYOUTS[spec.VERSION_3],
    "fde attributes v3": spec.FDE_ATTR_V3_LAYOUT,
    "fre addr1": spec.FRE_LAYOUTS[spec.FRE_TYPE_ADDR1],
    "fre addr2": spec.FRE_LAYOUTS[spec.FRE_TYPE_ADDR2],
    "fre addr4": spec.FRE_LAYOUTS[spec.FRE_TYPE_ADDR4],
}


def _is_signed(code: str) -> bool:
    return code.islower() and code != "s"


@pytest.mark.parametrize("record", sorted(SPEC_RECORDS))
def test_each_record_has_the_specs_fields_offsets_types_and_size(record: str) -> None:
    expected_fields, expected_size = SPEC_RECORDS[record]
    layout = OURS[record]
    assert layout.size == expected_size
    assert layout.compiled("<").size == layout.compiled(">").size == expected_size
    codes = dict(layout.fields)
    got = [
        (name, layout.offsets[name], layout.sizes[name], _is_signed(codes[name]))
        for name in layout.names
    ]
    want = [(name, offset, *C_TYPES[c_type]) for name, offset, c_type in expected_fields]
    assert got == want


def test_the_sizes_the_reader_and_writer_step_by_are_the_layouts() -> None:
    assert spec.HEADER_SIZE == 28
    assert spec.PREAMBLE_LAYOUT.size == 4
    assert spec.HEADER_LAYOUT.fields[:3] == spec.PREAMBLE_LAYOUT.fields
    assert spec.FDE_SIZE == {spec.VERSION_1: 17, spec.VERSION_2: 20, spec.VERSION_3: 16}
    assert spec.FDE_ATTR_SIZE_V3 == 5
    assert spec.FRE_START_SIZE == {
        spec.FRE_TYPE_ADDR1: 1,
        spec.FRE_TYPE_ADDR2: 2,
        spec.FRE_TYPE_ADDR4: 4,
    }
    # FRE data words: SFRAME_FRE_OFFSET_1B/2B/4B (0, 1, 2), signed
    assert spec.WORD_SIZE == {0: 1, 1: 2, 2: 4}
    assert all(_is_signed(code) for code in spec.WORD_CODE.values())


def test_a_v2_fde_packs_by_name_into_the_bytes_worked_out_by_hand() -> None:
    values = {
        "sfde_func_start_address": -0x20,  # int32 e0 ff ff ff
        "sfde_func_size": 0x1234,  # 34 12 00 00
        "sfde_func_start_fre_off": 0x10,  # 10 00 00 00
        "sfde_func_num_fres": 3,  # 03 00 00 00
        "sfde_func_info": 0x11,  # PCMASK, ADDR2
        "sfde_func_rep_size": 16,
        "sfde_func_padding2": 0,
        "sfda_func_info2": 7,  # a v3 name: ignored by the v2 layout
    }
    packed = spec.FDE_V2_LAYOUT.pack("<", values)
    assert packed == bytes.fromhex("e0ffffff 34120000 10000000 03000000 11 10 0000")
    big = spec.FDE_V2_LAYOUT.pack(">", values)
    assert big == bytes.fromhex("ffffffe0 00001234 00000010 00000003 11 10 0000")
    picked = spec.FDE_V2_LAYOUT.picker("sfde_func_info", "sfde_func_start_address")
    assert picked(spec.FDE_V2_LAYOUT.compiled(">").unpack(big)) == (0x11, -0x20)
