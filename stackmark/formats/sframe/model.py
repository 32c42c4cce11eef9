"""The decoded contents of an `.sframe` section: header, FDEs and their FREs.

Values are kept as the section stores them (info bytes, raw words), so that
the writer can reproduce a section byte for byte and the dumper can show
what each binutils release would show; properties decode the bit fields.
Addresses are absolute in the address space the section was linked for
(the ELF virtual addresses), never relative to the section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from stackmark.formats.sframe import spec
from stackmark.unwind_rules import Arch


@dataclass(frozen=True, slots=True)
class SFrameHeader:
    """The 28-byte header (the auxiliary header, if any, is skipped)."""

    version: int
    flags: int
    abi_arch: spec.AbiArch
    cfa_fixed_fp_offset: int
    cfa_fixed_ra_offset: int
    auxhdr_len: int = 0
    num_fdes: int = 0
    num_fres: int = 0
    fre_len: int = 0
    fdeoff: int = 0
    freoff: int = 0

    @property
    def size(self) -> int:
        """Header bytes including the auxiliary header: where fdeoff/freoff count from."""
        return spec.HEADER_SIZE + self.auxhdr_len

    @property
    def section_size(self) -> int:
        """The section size the header implies (use it, not PT_GNU_SFRAME's p_memsz)."""
        return self.size + self.freoff + self.fre_len

    @property
    def endian(self) -> str:
        return self.abi_arch.endian

    @property
    def arch(self) -> Arch:
        return self.abi_arch.arch

    @property
    def is_sorted(self) -> bool:
        return bool(self.flags & spec.F_FDE_SORTED)

    @property
    def start_is_pcrel(self) -> bool:
        return bool(self.flags & spec.F_FDE_FUNC_START_PCREL)


@dataclass(frozen=True, slots=True)
class FrameRowEntry:
    """One FRE: from `start` (offset into the function, or into the repeated
    block for PCMASK FDEs) on, the CFA/RA/FP rules that `words` encode.

    `words` are the signed data words; `unsigned_word(i)` gives a word as an
    unsigned value (flex control words are unsigned).
    """

    start: int
    info: int
    words: tuple[int, ...] = ()
    offset: int = -1  # byte offset of the FRE inside the section, when read

    @property
    def base_reg(self) -> int:
        return spec.fre_info_base_reg(self.info)

    @property
    def cfa_base_is_sp(self) -> bool:
        return self.base_reg == spec.BASE_REG_SP

    @property
    def word_size(self) -> int:
        """Bytes per data word (1, 2 or 4)."""
        return spec.WORD_SIZE[spec.fre_info_word_size_code(self.info)]

    @property
    def mangled_ra(self) -> bool:
        return spec.fre_info_mangled_ra(self.info)

    @property
    def ra_undefined(self) -> bool:
        """An FRE without words: the RA is undefined, the outermost frame (v2 errata 2, v3)."""
        return not self.words

    def unsigned_word(self, index: int) -> int:
        return self.words[index] & ((1 << (8 * self.word_size)) - 1)


@dataclass(frozen=True, slots=True)
class FuncDescEntry:
    """One function descriptor (FDE) with its FREs.

    `start` is the absolute start address of the function (the stored field
    resolved against the section address, honouring FUNC_START_PCREL).
    `info2` is the v3 second info byte (0 before v3). `rep_size` is the
    repeat-block size of PCMASK FDEs (0 in v1, which has no such field).
    """

    start: int
    size: int
    info: int
    fres: Sequence[FrameRowEntry] = ()  # a tuple, or decoded on first use (lazy reads)
    info2: int = 0
    rep_size: int = 0
    # Where it was read from (metadata; the writer recomputes these).
    index: int = -1
    raw_start: int = 0
    fre_offset: int = 0

    @property
    def end(self) -> int:
        return self.start + self.size

    @property
    def fre_type(self) -> int:
        return spec.fde_info_fre_type(self.info)

    @property
    def pc_type(self) -> int:
        return spec.fde_info_pc_type(self.info)

    @property
    def is_pcmask(self) -> bool:
        return self.pc_type == spec.PC_TYPE_MASK

    @property
    def pauth_key(self) -> int:
        """AArch64: the key signing return addresses (PAUTH_KEY_A or PAUTH_KEY_B)."""
        return spec.fde_info_pauth_key(self.info)

    @property
    def fde_type(self) -> int:
        """v3: FDE_TYPE_DEFAULT or FDE_TYPE_FLEX (always DEFAULT before v3)."""
        return spec.fde_info2_type(self.info2)

    @property
    def is_flex(self) -> bool:
        return self.fde_type == spec.FDE_TYPE_FLEX

    def signal_frame(self, version: int) -> bool:
        """The signal-frame bit, which only v3 defines."""
        return version >= spec.VERSION_3 and spec.fde_info_signal(self.info)


@dataclass(slots=True)
class SFrameSection:
    """A whole `.sframe` section.

    `address` is the virtual address the section was linked at (func_start
    fields are relative to it); `fdes` are in table order.
    """

    header: SFrameHeader
    fdes: list[FuncDescEntry] = field(default_factory=list)
    address: int = 0

    @property
    def version(self) -> int:
        return self.header.version

    @property
    def arch(self) -> Arch:
        return self.header.arch

    @property
    def abi_arch(self) -> spec.AbiArch:
        return self.header.abi_arch

    @property
    def num_fres(self) -> int:
        return sum(len(fde.fres) for fde in self.fdes)
