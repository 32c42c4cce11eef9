"""SFrame constants, bit fields and record layouts, as the SFrame specification
defines them.

One place for every number of the format (versions 1, 2 and 3), so that the
reader, the writer, the lookup and the dumper read like the spec. Layouts:

    header (28 bytes, all versions)       FDE records
    +0  u16 magic 0xdee2                  v1: i32 start, u32 size, u32 fre_off,
    +2  u8  version                           u32 num_fres, u8 info       (17 bytes)
    +3  u8  flags                         v2: v1 + u8 rep_size + u16 pad (20 bytes)
    +4  u8  abi_arch                      v3: i64 start, u32 size, u32 fre_off (16)
    +5  i8  cfa_fixed_fp_offset               and, at fre_off in the FRE sub-section,
    +6  i8  cfa_fixed_ra_offset               u16 num_fres, u8 info, u8 info2,
    +7  u8  auxhdr_len                        u8 rep_size                  (5 bytes)
    +8  u32 num_fdes
    +12 u32 num_fres                      FRE: start (u8/u16/u32 by fre_type),
    +16 u32 fre_len                            u8 info, N signed words (1/2/4 bytes)
    +20 u32 fdeoff   (from header end)
    +24 u32 freoff   (from header end)

Each fixed-size record is declared once below as a `RecordLayout`: (spec
field name, struct code) pairs with the names of binutils' include/sframe.h
(`sfh_num_fdes`, `sfde_func_start_address`, ...). The reader, the writer and
the tests take sizes, offsets and compiled structs from these declarations
(tests/unit/test_sframe_spec.py pins them to the spec's).
"""

from __future__ import annotations

import enum
import struct

from stackmark.binary import RecordLayout
from stackmark.elf import EM_AARCH64, EM_S390, EM_X86_64
from stackmark.unwind_rules import Arch

MAGIC = 0xDEE2

VERSION_1, VERSION_2, VERSION_3 = 1, 2, 3
SUPPORTED_VERSIONS = (VERSION_1, VERSION_2, VERSION_3)


# The preamble (`sfh_preamble`, the same in every version) and the header.
PREAMBLE_LAYOUT = RecordLayout(
    "sframe_preamble",
    ("sfp_magic", "H"),
    ("sfp_version", "B"),
    ("sfp_flags", "B"),
)
HEADER_LAYOUT = RecordLayout(
    "sframe_header",
    *PREAMBLE_LAYOUT.fields,
    ("sfh_abi_arch", "B"),
    ("sfh_cfa_fixed_fp_offset", "b"),
    ("sfh_cfa_fixed_ra_offset", "b"),
    ("sfh_auxhdr_len", "B"),
    ("sfh_num_fdes", "I"),
    ("sfh_num_fres", "I"),
    ("sfh_fre_len", "I"),
    ("sfh_fdeoff", "I"),
    ("sfh_freoff", "I"),
)
HEADER_SIZE = HEADER_LAYOUT.size  # 28

# FDE records of the FDE sub-section, per version.
FDE_V1_LAYOUT = RecordLayout(
    "sframe_func_desc_entry (v1)",
    ("sfde_func_start_address", "i"),
    ("sfde_func_size", "I"),
    ("sfde_func_start_fre_off", "I"),
    ("sfde_func_num_fres", "I"),
    ("sfde_func_info", "B"),
)
FDE_V2_LAYOUT = RecordLayout(
    "sframe_func_desc_entry_v2",
    *FDE_V1_LAYOUT.fields,
    ("sfde_func_rep_size", "B"),
    ("sfde_func_padding2", "H"),
)
FDE_V3_LAYOUT = RecordLayout(
    "sframe_func_desc_entry_v3",
    ("sfde_func_start_address", "q"),
    ("sfde_func_size", "I"),
    ("sfde_func_start_fre_off", "I"),
)
# v3: the attribute block at sfde_func_start_fre_off, in front of the function's FREs.
FDE_ATTR_V3_LAYOUT = RecordLayout(
    "sframe_func_desc_attr_v3",
    ("sfda_func_num_fres", "H"),
    ("sfda_func_info", "B"),
    ("sfda_func_info2", "B"),
    ("sfda_func_rep_size", "B"),
)
FDE_LAYOUTS = {VERSION_1: FDE_V1_LAYOUT, VERSION_2: FDE_V2_LAYOUT, VERSION_3: FDE_V3_LAYOUT}

# Header flags.
F_FDE_SORTED = 0x1
F_FRAME_POINTER = 0x2  # v1/v2 only; advisory, never set by gas or ld
F_FDE_FUNC_START_PCREL = 0x4  # v2 "errata 1" and v3

# Size of one FDE record in the FDE sub-section, per version (17, 20, 16 bytes).
FDE_SIZE = {version: layout.size for version, layout in FDE_LAYOUTS.items()}
FDE_ATTR_SIZE_V3 = FDE_ATTR_V3_LAYOUT.size  # 5

# FRE start-address encodings (FDE info bits 0-3).
FRE_TYPE_ADDR1, FRE_TYPE_ADDR2, FRE_TYPE_ADDR4 = 0, 1, 2

# The fixed part of an FRE, by FRE type; its data words follow (FRE info bits 1-6).
FRE_LAYOUTS = {
    fre_type: RecordLayout(
        f"sframe_frame_row_entry_addr{size}",
        ("sfre_start_address", code),
        ("sfre_info", "B"),
    )
    for fre_type, size, code in (
        (FRE_TYPE_ADDR1, 1, "B"),
        (FRE_TYPE_ADDR2, 2, "H"),
        (FRE_TYPE_ADDR4, 4, "I"),
    )
}
FRE_START_SIZE = {
    fre_type: layout.offsets["sfre_info"] for fre_type, layout in FRE_LAYOUTS.items()
}  # bytes of sfre_start_address: 1, 2, 4

# PC types (FDE info bit 4).
PC_TYPE_INC = 0  # FRE starts are offsets from the function start
PC_TYPE_MASK = 1  # FRE starts are offsets into a repeating block (PLT stubs)

# FDE types (v3 info2 bits 0-4).
FDE_TYPE_DEFAULT = 0
FDE_TYPE_FLEX = 1

# AArch64 pointer-authentication keys (FDE info bit 5).
PAUTH_KEY_A, PAUTH_KEY_B = 0, 1

# FRE data words (signed stack offsets; FRE info bits 5-6 give their size):
# size code (SFRAME_FRE_OFFSET_1B, _2B, _4B) -> struct code, and -> bytes.
WORD_CODE = {0: "b", 1: "h", 2: "i"}
WORD_SIZE = {size_code: struct.calcsize(code) for size_code, code in WORD_CODE.items()}
WORD_SIZE_CODE = {size: size_code for size_code, size in WORD_SIZE.items()}
MAX_WORDS = 15

# FRE CFA base register (FRE info bit 0).
BASE_REG_FP, BASE_REG_SP = 0, 1

# A zero RA word is padding: "RA not saved" (s390x, and flex FDEs' control word).
RA_OFFSET_PADDING = 0

# s390x stores the CFA offset as (offset - 160) / 8 to fit one byte.
S390X_CFA_OFFSET_ADJUSTMENT = -160
S390X_CFA_OFFSET_ALIGNMENT = 8

# Limits of the FRE start encodings (exclusive).
ADDR1_LIMIT, ADDR2_LIMIT, ADDR4_LIMIT = 1 << 8, 1 << 16, 1 << 32


class AbiArch(enum.IntEnum):
    """Header `abi_arch`: the architecture and byte order of the section."""

    AARCH64_BIG = 1
    AARCH64_LITTLE = 2
    AMD64_LITTLE = 3
    S390X_BIG = 4

    @property
    def arch(self) -> Arch:
        if self in (AbiArch.AARCH64_BIG, AbiArch.AARCH64_LITTLE):
            return Arch.AARCH64
        if self is AbiArch.AMD64_LITTLE:
            return Arch.AMD64
        return Arch.S390X

    @property
    def endian(self) -> str:
        """The `struct` byte-order character for this ABI."""
        return ">" if self in (AbiArch.AARCH64_BIG, AbiArch.S390X_BIG) else "<"

    @property
    def default_fixed_ra_offset(self) -> int:
        """What gas writes as `cfa_fixed_ra_offset` (AMD64 keeps its RA at CFA-8)."""
        return -8 if self is AbiArch.AMD64_LITTLE else 0


_ABI_FOR_MACHINE = {
    (EM_X86_64, "<"): AbiArch.AMD64_LITTLE,
    (EM_AARCH64, "<"): AbiArch.AARCH64_LITTLE,
    (EM_AARCH64, ">"): AbiArch.AARCH64_BIG,
    (EM_S390, ">"): AbiArch.S390X_BIG,
}


def abi_for_elf(machine: int, endian: str) -> AbiArch | None:
    """The `abi_arch` for an ELF file's e_machine and byte order; None if SFrame has none."""
    return _ABI_FOR_MACHINE.get((machine, endian))


# --- FDE info byte -------------------------------------------------------------


def fde_info(fre_type: int, pc_type: int, pauth_key: int = 0, signal: bool = False) -> int:
    """Compose an FDE info byte (v3's signal bit 7 only when `signal`)."""
    return (int(signal) << 7) | ((pauth_key & 1) << 5) | ((pc_type & 1) << 4) | (fre_type & 0xF)


def fde_info_fre_type(info: int) -> int:
    return info & 0xF


def fde_info_pc_type(info: int) -> int:
    return (info >> 4) & 1


def fde_info_pauth_key(info: int) -> int:
    return (info >> 5) & 1


def fde_info_signal(info: int) -> bool:
    """The v3 signal-frame bit (bit 7; unused in v1/v2)."""
    return bool((info >> 7) & 1)


def fde_info2_type(info2: int) -> int:
    """The v3 FDE type (DEFAULT or FLEX) from `info2`."""
    return info2 & 0x1F


# --- FRE info byte -------------------------------------------------------------


def fre_info(base_reg: int, word_count: int, word_size: int, mangled_ra: bool = False) -> int:
    """Compose an FRE info byte; `word_size` is in bytes (1, 2 or 4)."""
    return (
        (int(mangled_ra) << 7)
        | (WORD_SIZE_CODE[word_size] << 5)
        | ((word_count & 0xF) << 1)
        | (base_reg & 1)
    )


def fre_info_base_reg(info: int) -> int:
    return info & 1


def fre_info_word_count(info: int) -> int:
    return (info >> 1) & 0xF


def fre_info_word_size_code(info: int) -> int:
    return (info >> 5) & 3


def fre_info_mangled_ra(info: int) -> bool:
    return bool((info >> 7) & 1)


# --- v3 flex FDE control words ---------------------------------------------------


def flex_control(register: int | None, deref: bool) -> int:
    """A flex control word: `register` None means "based on the CFA"."""
    if register is None:
        return int(deref) << 1
    return (register << 3) | (int(deref) << 1) | 1


def flex_control_reg_p(control: int) -> bool:
    return bool(control & 1)


def flex_control_deref_p(control: int) -> bool:
    return bool((control >> 1) & 1)


def flex_control_regnum(control: int) -> int:
    return control >> 3


# --- s390x -----------------------------------------------------------------------------


def s390x_decode_cfa_offset(word: int) -> int:
    return word * S390X_CFA_OFFSET_ALIGNMENT - S390X_CFA_OFFSET_ADJUSTMENT


def s390x_encode_cfa_offset(offset: int) -> int:
    return (offset + S390X_CFA_OFFSET_ADJUSTMENT) // S390X_CFA_OFFSET_ALIGNMENT


def s390x_v2_word_is_regnum(word: int) -> bool:
    """v2 s390x: an odd RA/FP word names a DWARF register (word >> 1)."""
    return bool(word & 1)


def s390x_v2_regnum_word(register: int) -> int:
    """v2 s390x: the RA/FP word saying "kept in DWARF register `register`"."""
    return (register << 1) | 1


def smallest_fre_type(limit: int) -> int:
    """The FRE start encoding gas picks for a function of `limit` bytes."""
    if limit < ADDR1_LIMIT:
        return FRE_TYPE_ADDR1
    if limit < ADDR2_LIMIT:
        return FRE_TYPE_ADDR2
    return FRE_TYPE_ADDR4


def smallest_word_size(words: tuple[int, ...] | list[int], unsigned: tuple[bool, ...] = ()) -> int:
    """Bytes per word that hold every word (signed; or unsigned where `unsigned[i]`)."""
    size = 1
    for i, word in enumerate(words):
        as_unsigned = i < len(unsigned) and unsigned[i]
        for candidate in (1, 2, 4):
            bits = candidate * 8
            if as_unsigned:
                fits = 0 <= word < (1 << bits)
            else:
                fits = -(1 << (bits - 1)) <= word < (1 << (bits - 1))
            if fits:
                size = max(size, candidate)
                break
        else:
            raise ValueError(f"SFrame word {word} does not fit in 4 bytes")
    return size
