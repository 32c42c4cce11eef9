"""Write `.sframe` sections (versions 1, 2 and 3) from the decoded model.

The writer keeps every info byte as given, so a section read by `reader`
and written again in its own version comes out byte for byte the same.
`build_fre` and `build_fde` make entries with the encodings gas would
choose (smallest FRE start type for the function size, smallest data word
size per FRE), for sections generated from other unwind information.

Version differences handled here:
- v1: 17-byte FDEs, no repeat-block size, no PCREL starts, no flex FDEs;
- v2: 20-byte FDEs with rep_size; PCREL starts when the flag is asked for;
- v3: 16-byte index entries plus a 5-byte attribute block in front of each
  function's FREs; PCREL starts always (libsframe requires the flag).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import replace

from stackmark.errors import StackmarkError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import (
    FrameRowEntry,
    FuncDescEntry,
    SFrameHeader,
    SFrameSection,
)


class SFrameEncodeError(StackmarkError):
    """The model cannot be written in the requested SFrame version."""


def build_fre(
    start: int,
    *,
    cfa_base_sp: bool,
    words: Sequence[int],
    mangled_ra: bool = False,
    unsigned: Sequence[bool] = (),
) -> FrameRowEntry:
    """An FRE with the smallest word size holding `words` (`unsigned[i]`: word i is
    an unsigned flex control word)."""
    if len(words) > spec.MAX_WORDS:
        raise SFrameEncodeError(f"an FRE holds at most {spec.MAX_WORDS} words, not {len(words)}")
    unsigned_flags = tuple(unsigned)
    size = spec.smallest_word_size(list(words), unsigned_flags)
    signed_words = tuple(_as_signed(w, size) for w in words)
    base = spec.BASE_REG_SP if cfa_base_sp else spec.BASE_REG_FP
    return FrameRowEntry(start, spec.fre_info(base, len(words), size, mangled_ra), signed_words)


def build_fde(
    start: int,
    size: int,
    fres: Sequence[FrameRowEntry],
    *,
    pc_mask: bool = False,
    rep_size: int = 0,
    pauth_key: int = spec.PAUTH_KEY_A,
    signal: bool = False,
    flex: bool = False,
) -> FuncDescEntry:
    """An FDE whose FRE start encoding is the smallest for a function of `size` bytes."""
    limit = max([size, *(fre.start for fre in fres)])
    fre_type = spec.smallest_fre_type(limit)
    pc_type = spec.PC_TYPE_MASK if pc_mask else spec.PC_TYPE_INC
    return FuncDescEntry(
        start=start,
        size=size,
        info=spec.fde_info(fre_type, pc_type, pauth_key, signal),
        fres=tuple(fres),
        info2=spec.FDE_TYPE_FLEX if flex else spec.FDE_TYPE_DEFAULT,
        rep_size=rep_size,
    )


def new_header(
    abi: spec.AbiArch,
    *,
    version: int = spec.VERSION_3,
    sorted_fdes: bool = True,
    pcrel: bool | None = None,
) -> SFrameHeader:
    """A header as gas/ld write it (counts and offsets are filled in by `encode_sframe`)."""
    flags = spec.F_FDE_SORTED if sorted_fdes else 0
    if pcrel or (pcrel is None and version >= spec.VERSION_3):
        flags |= spec.F_FDE_FUNC_START_PCREL
    return SFrameHeader(version, flags, abi, 0, abi.default_fixed_ra_offset)


def encode_sframe(
    section: SFrameSection, *, version: int | None = None, address: int | None = None
) -> bytes:
    """The bytes of `section` as SFrame `version` (default: its own) linked at `address`.

    The header's flags are kept, except that v3 always gets FUNC_START_PCREL
    and v1 never does; counts and offsets are recomputed.
    """
    header = section.header
    version = version or header.version
    address = section.address if address is None else address
    if version not in spec.SUPPORTED_VERSIONS:
        raise SFrameEncodeError(f"cannot write SFrame version {version}")
    flags = _flags_for(version, header.flags)
    pcrel = bool(flags & spec.F_FDE_FUNC_START_PCREL)
    endian = header.endian
    auxhdr = b"\0" * header.auxhdr_len
    header_size = spec.HEADER_SIZE + header.auxhdr_len
    stride = spec.FDE_SIZE[version]

    # FRE blocks: in FDE order, or, for a section written back in the version it
    # was read in, in the order it had (ld puts the PLT's FREs last).
    fdes = section.fdes
    order = list(range(len(fdes)))
    if version == header.version and all(fde.index >= 0 for fde in fdes):
        order.sort(key=lambda i: fdes[i].fre_offset)
    fre_blob = bytearray()
    fre_offsets = [0] * len(fdes)
    for i in order:
        fde = fdes[i]
        _check_fde(fde, version, i)
        fre_offsets[i] = len(fre_blob)
        if version == spec.VERSION_3:
            fre_blob += spec.FDE_ATTR_V3_LAYOUT.pack(
                endian,
                {
                    "sfda_func_num_fres": len(fde.fres),
                    "sfda_func_info": fde.info,
                    "sfda_func_info2": fde.info2,
                    "sfda_func_rep_size": fde.rep_size,
                },
            )
        for fre in fde.fres:
            fre_blob += _encode_fre(fre, fde, endian, i)

    fde_layout = spec.FDE_LAYOUTS[version]
    # PC-relative starts count from the sfde_func_start_address field itself.
    start_field_at = fde_layout.offsets["sfde_func_start_address"]
    start_bits = 8 * fde_layout.sizes["sfde_func_start_address"]
    fde_blob = bytearray()
    for i, fde in enumerate(fdes):
        field_at = header_size + i * stride + start_field_at  # fdeoff is 0
        raw_start = fde.start - address - (field_at if pcrel else 0)
        if not -(1 << (start_bits - 1)) <= raw_start < (1 << (start_bits - 1)):
            if version == spec.VERSION_3:
                raise SFrameEncodeError(f"FDE {i}: start 0x{fde.start:x} is out of range")
            raise SFrameEncodeError(
                f"FDE {i}: start 0x{fde.start:x} is more than 2 GiB from the section at "
                f"0x{address:x}; SFrame v{version} cannot express it (use v3)"
            )
        fde_blob += fde_layout.pack(
            endian,
            {
                "sfde_func_start_address": raw_start,
                "sfde_func_size": fde.size,
                "sfde_func_start_fre_off": fre_offsets[i],
                "sfde_func_num_fres": len(fde.fres),
                "sfde_func_info": fde.info & 0x7F,  # bit 7 (signal frame) exists only in v3
                "sfde_func_rep_size": fde.rep_size,
                "sfde_func_padding2": 0,
            },
        )
    num_fres = sum(len(fde.fres) for fde in fdes)

    head = spec.HEADER_LAYOUT.pack(
        endian,
        {
            "sfp_magic": spec.MAGIC,
            "sfp_version": version,
            "sfp_flags": flags,
            "sfh_abi_arch": int(header.abi_arch),
            "sfh_cfa_fixed_fp_offset": header.cfa_fixed_fp_offset,
            "sfh_cfa_fixed_ra_offset": header.cfa_fixed_ra_offset,
            "sfh_auxhdr_len": header.auxhdr_len,
            "sfh_num_fdes": len(fdes),
            "sfh_num_fres": num_fres,
            "sfh_fre_len": len(fre_blob),
            "sfh_fdeoff": 0,
            "sfh_freoff": len(fde_blob),
        },
    )
    return head + auxhdr + bytes(fde_blob) + bytes(fre_blob)


def with_version(section: SFrameSection, version: int) -> SFrameSection:
    """`section` with its header set up for writing as `version` (flags as gas would set)."""
    flags = _flags_for(version, section.header.flags)
    header = replace(section.header, version=version, flags=flags)
    return SFrameSection(header, section.fdes, section.address)


def _flags_for(version: int, flags: int) -> int:
    """v3 always has PCREL starts and no frame-pointer flag; v1 has no PCREL flag."""
    if version == spec.VERSION_3:
        return (flags | spec.F_FDE_FUNC_START_PCREL) & ~spec.F_FRAME_POINTER
    if version == spec.VERSION_1:
        return flags & ~spec.F_FDE_FUNC_START_PCREL
    return flags


def _check_fde(fde: FuncDescEntry, version: int, index: int) -> None:
    if version < spec.VERSION_3 and fde.is_flex:
        raise SFrameEncodeError(
            f"FDE {index} (0x{fde.start:x}) is a flex FDE, which only SFrame v3 can express"
        )
    if version == spec.VERSION_3 and len(fde.fres) > 0xFFFF:
        raise SFrameEncodeError(
            f"FDE {index} (0x{fde.start:x}) has {len(fde.fres)} FREs; v3 allows 65535"
        )
    if fde.fre_type not in spec.FRE_START_SIZE:
        raise SFrameEncodeError(f"FDE {index} has unknown FRE type {fde.fre_type}")
    if not 0 <= fde.size <= 0xFFFFFFFF:
        raise SFrameEncodeError(
            f"FDE {index} (0x{fde.start:x}) is {fde.size} bytes long; SFrame sizes are 32-bit"
        )


def _encode_fre(fre: FrameRowEntry, fde: FuncDescEntry, endian: str, index: int) -> bytes:
    limit = 1 << (8 * spec.FRE_START_SIZE[fde.fre_type])
    if not 0 <= fre.start < limit:
        raise SFrameEncodeError(
            f"FDE {index}: FRE start {fre.start} does not fit its FRE type {fde.fre_type}"
        )
    count = spec.fre_info_word_count(fre.info)
    if count != len(fre.words):
        raise SFrameEncodeError(
            f"FDE {index}: FRE at +{fre.start} has {len(fre.words)} words, its info says {count}"
        )
    size = fre.word_size
    words = [_as_signed(w, size) for w in fre.words]
    fixed = spec.FRE_LAYOUTS[fde.fre_type].pack(
        endian, {"sfre_start_address": fre.start, "sfre_info": fre.info}
    )
    word_code = spec.WORD_CODE[spec.WORD_SIZE_CODE[size]]
    return fixed + struct.pack(endian + word_code * count, *words)


def _as_signed(word: int, size: int) -> int:
    """`word` as the signed value of `size` bytes with the same bits (unsigned control
    words above the signed range wrap); SFrameEncodeError when it does not fit."""
    bits = 8 * size
    if -(1 << (bits - 1)) <= word < (1 << (bits - 1)):
        return word
    if 0 <= word < (1 << bits):
        return word - (1 << bits)
    raise SFrameEncodeError(f"word {word} does not fit in {size} byte(s)")
