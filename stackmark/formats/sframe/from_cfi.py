"""Generate SFrame from DWARF call-frame information (`.eh_frame`, `.debug_frame`).

For binaries built without `--gsframe`: each CFI row of a function becomes
an FRE when its CFA, RA and FP rules can be said in SFrame:

- CFA = SP or FP + offset (DEFAULT FDE); on v3 also another register, or a
  value loaded from `*(reg + offset)` (FLEX FDE, e.g. DRAP prologues);
- RA at CFA-8 on AMD64 (the header's fixed offset), at CFA+n on AArch64,
  still in LR (AArch64, no word), undefined (outermost: an FRE without
  words, v2 errata 2 and v3); on v3 also at another CFA offset or kept in
  a register (flex FDE, as gas 2.47 writes them);
- FP unchanged, or at CFA+n; on v3 also at/equal to reg+offset;
- SP = CFA (s390x: CFA-160), as SFrame assumes: a function with another
  rule for SP, with no CFA register, with a return-address column other
  than the architecture's, or with the PC-diversified return-address
  signing of PAuth_LR is left out (as gas 2.47 leaves it out).

s390x (SFrame v2 and v3 only, as gas 2.45+ writes it): the CFA offset is
stored as (offset - 160) / 8; an RA word 0 is padding (RA still in r14,
FP saved); an RA or FP kept in another register is the odd word 2R+1 in
v2 and a flex FDE in v3.

AArch64 return-address signing (DW_CFA_AARCH64_negate_ra_state, with
remember/restore) becomes the FRE's mangled-RA bit, the CIE's "B"
augmentation the FDE's B key; a CIE's "S" augmentation (signal trampoline)
the v3 signal-frame bit. The x86-64 PLT's CFA expression becomes a PCMASK
FDE, as ld makes one. Other callee-saved registers are not SFrame's
business and are ignored. Functions with a rule that cannot be expressed
are left out and reported, with the reason and the first PC concerned.

The CFI is read by `stackmark.dwarf.cfi`, which takes everything gas writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import assert_never

from stackmark.binary import read_sleb
from stackmark.dwarf.cfi import CfaRule, CfiRow, Fde, RegisterRule, RuleKind, read_cfi
from stackmark.elf import SHT_NOBITS, STT_FUNC, ElfFile
from stackmark.elf_relocations import relocated_section_data
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import FrameRowEntry, FuncDescEntry, SFrameSection
from stackmark.formats.sframe.writer import build_fde, build_fre, new_header
from stackmark.unwind_rules import Arch

# DWARF expression opcodes used by the patterns below.
_DW_OP_BREG0, _DW_OP_BREG31 = 0x70, 0x8F
_DW_OP_DEREF = 0x06
_X86_64_PLT_EXPR_HEAD = bytes([0x77, 0x08, 0x80, 0x00, 0x3F, 0x1A])  # rsp+8 + ((rip & 15) ...
_X86_64_PLT_EXPR_TAIL = bytes([0x2A, 0x33, 0x24, 0x22])  # ... >= N) << 3, plus
_X86_64_PLT_BLOCK = 16
_MAX_FUNCTION_SIZE = 0xFFFFFFFF  # an FDE's u32 func_size


@dataclass(frozen=True, slots=True)
class SkippedFunction:
    """A function whose CFI SFrame cannot express."""

    start: int
    size: int
    reason: str
    pc: int  # the first PC whose rule is the problem
    name: str | None = None

    def describe(self) -> str:
        who = f"{self.name} " if self.name else ""
        span = f"[0x{self.start:x}, 0x{self.start + self.size:x})"
        return f"{who}{span}: at 0x{self.pc:x}: {self.reason}"


@dataclass(slots=True)
class GenerationResult:
    """The generated section and what was left out."""

    section: SFrameSection
    cfi_source: str
    skipped: list[SkippedFunction] = field(default_factory=list)


class _Unsupported(Exception):
    def __init__(self, reason: str, pc: int):
        super().__init__(reason)
        self.reason = reason
        self.pc = pc


def generate_from_file(
    path: str | os.PathLike[str], *, version: int = spec.VERSION_3, address: int = 0
) -> GenerationResult:
    """SFrame (as `version`, for a section placed at `address`) from the CFI of an ELF file."""
    name = os.fspath(path)
    with ElfFile.open(name) as elf:
        return generate_from_elf(elf, version=version, address=address)


def generate_from_elf_bytes(
    image: bytes,
    abi: spec.AbiArch,
    *,
    version: int = spec.VERSION_3,
    address: int = 0,
    names: dict[int, str] | None = None,
    source: str = "<memory>",
) -> GenerationResult:
    """Like `generate_from_file`, for an ELF image already in memory (of ABI `abi`)."""
    elf = ElfFile.from_bytes(image, source)
    return generate_from_elf(elf, version=version, address=address, abi=abi, names=names)


def generate_from_elf(
    elf: ElfFile,
    *,
    version: int = spec.VERSION_3,
    address: int = 0,
    abi: spec.AbiArch | None = None,
    names: dict[int, str] | None = None,
) -> GenerationResult:
    """SFrame from the CFI of an opened ELF file."""
    source = elf.name
    abi = abi or spec.abi_for_elf(elf.machine, elf.endian)
    if abi is None:
        raise StackmarkError(
            f"{source}: SFrame describes AMD64, AArch64 and s390x code; this file is "
            f"{elf.machine_name} ({'little' if elf.endian == '<' else 'big'}-endian)"
        )
    if abi is spec.AbiArch.S390X_BIG and version < spec.VERSION_2:
        raise StackmarkError(
            f"{source}: s390x has SFrame from version 2 on (binutils 2.45); "
            f"version {version} cannot describe it"
        )
    names = _function_names(elf) if names is None else names
    fdes_in, cfi_source = _cfi_fdes(elf)
    converter = _Converter(abi, version)
    fdes: list[FuncDescEntry] = []
    skipped: list[SkippedFunction] = []
    for entry in fdes_in:
        if entry.size == 0:
            continue
        try:
            fdes.extend(converter.function(entry))
        except _Unsupported as why:
            skipped.append(
                SkippedFunction(entry.start, entry.size, why.reason, why.pc, names.get(entry.start))
            )
        except FormatError as damaged:  # one FDE's instructions: the others still count
            reason = f"its call-frame instructions are malformed: {damaged}"
            skipped.append(
                SkippedFunction(
                    entry.start, entry.size, reason, entry.start, names.get(entry.start)
                )
            )
    fdes.sort(key=lambda fde: fde.start)
    # v2 without FUNC_START_PCREL: binutils 2.41-2.44 reject the flag, 2.45+ read both.
    header = new_header(abi, version=version, sorted_fdes=True, pcrel=version >= spec.VERSION_3)
    return GenerationResult(SFrameSection(header, fdes, address), cfi_source, skipped)


def _cfi_fdes(elf: ElfFile) -> tuple[list[Fde], str]:
    """The FDEs to convert, and the section(s) they come from.

    `.eh_frame` first; `.debug_frame` adds the functions `.eh_frame` does not
    describe (built with -fno-asynchronous-unwind-tables -g, a program's own
    functions are only in `.debug_frame`, and only the C runtime's startup
    code in `.eh_frame`).
    """
    address_size = 8 if elf.is_64 else 4
    fdes: list[Fde] = []
    sections: list[str] = []
    for name in (".eh_frame", ".debug_frame"):
        section = elf.section(name)
        if section is None or section.type == SHT_NOBITS or section.size == 0:
            continue
        try:
            found = read_cfi(
                relocated_section_data(elf, section),  # a .o's FDE starts are relocations
                name,
                address=section.addr,
                endian=elf.endian,
                address_size=address_size,
                source=elf.name,
            )
        except FormatError as exc:
            raise exc.with_source(elf.name) if exc.source is None else exc from None
        described = {fde.start for fde in fdes}
        more = [fde for fde in found if fde.start not in described]
        if more or not fdes:
            fdes += more
            sections.append(name)
    if not sections:
        raise StackmarkError(f"{elf.name}: no .eh_frame or .debug_frame to generate SFrame from")
    return fdes, " and ".join(sections)


def _function_names(elf: ElfFile) -> dict[int, str]:
    names: dict[int, str] = {}
    for symbol in elf.symbols():
        if symbol.type == STT_FUNC and symbol.is_defined and symbol.value not in names:
            names[symbol.value] = symbol.name
    return names


@dataclass(frozen=True, slots=True)
class _RowRules:
    """One CFI row reduced to what SFrame keeps."""

    flex: bool
    cfa_base_sp: bool
    words: tuple[int, ...]
    unsigned: tuple[bool, ...]
    mangled: bool


class _Converter:
    def __init__(self, abi: spec.AbiArch, version: int):
        self.abi = abi
        self.arch = abi.arch
        self.version = version
        self.fixed_ra = abi.default_fixed_ra_offset
        self.s390x = self.arch is Arch.S390X

    def function(self, entry: Fde) -> list[FuncDescEntry]:
        start, size = entry.start, entry.size
        cie = entry.cie
        if size > _MAX_FUNCTION_SIZE:
            raise _Unsupported(
                f"the function is {size} bytes long; SFrame function sizes are 32-bit", start
            )
        if cie.ra_register != self.arch.ra:
            raise _Unsupported(
                f"the return address column is register {cie.ra_register}, not "
                f"{self.arch.ra} ({self._ra_name()}); SFrame knows only the latter",
                start,
            )
        pauth_key = spec.PAUTH_KEY_B if cie.pauth_b_key else spec.PAUTH_KEY_A
        rows: list[tuple[int, _RowRules]] = []
        plt_from: tuple[int, int] | None = None
        for row in entry.rows():
            pc = row.pc
            if pc >= start + size:
                break
            threshold = _plt_threshold(row.cfa)
            if threshold is not None:
                plt_from = (pc, threshold)
                break
            rules = self._row(row, pc)
            if rows and rows[-1][1] == rules:
                continue
            rows.append((pc, rules))

        flex = any(rules.flex for _, rules in rows)
        if flex and self.version < spec.VERSION_3:
            pc = next(pc for pc, rules in rows if rules.flex)
            raise _Unsupported(
                "the CFA is not SP/FP-based, or the return address or FP is kept in a "
                "register or at an offset SFrame's default rows cannot say; only SFrame v3 "
                f"(flex FDEs) can express it, not v{self.version}",
                pc,
            )
        result = []
        end = plt_from[0] if plt_from else start + size
        if rows and end > start:
            fres = [self._fre(pc - start, rules, flex) for pc, rules in rows]
            result.append(
                build_fde(
                    start,
                    end - start,
                    fres,
                    pauth_key=pauth_key,
                    signal=cie.signal_frame and self.version >= spec.VERSION_3,
                    flex=flex,
                )
            )
        if plt_from is not None:
            result.append(self._plt_fde(plt_from[0], start + size - plt_from[0], plt_from[1]))
        return result

    def _ra_name(self) -> str:
        return {Arch.AMD64: "rip", Arch.AARCH64: "x30", Arch.S390X: "r14"}[self.arch]

    # -- one row ------------------------------------------------------------------------

    def _row(self, row: CfiRow, pc: int) -> _RowRules:
        arch = self.arch
        self._check_sp_rule(row.registers.get(arch.sp), pc)
        if row.ra_signed_with_pc:
            raise _Unsupported(
                "the return address is signed with the PC as a diversifier "
                "(DW_CFA_AARCH64_negate_ra_state_with_pc, PAuth_LR), which SFrame cannot say",
                pc,
            )
        mangled = row.ra_signed and arch is Arch.AARCH64
        ra_rule = row.registers.get(arch.ra)
        if ra_rule is not None and ra_rule.kind is RuleKind.UNDEFINED:
            if self.version < spec.VERSION_2:
                raise _Unsupported(
                    "the return address is undefined (outermost frame); SFrame v1 cannot say so",
                    pc,
                )
            return _RowRules(False, False, (), (), False)  # gas leaves the base bit clear

        cfa = row.cfa
        flex = False
        if cfa.expression is not None:
            base, offset, deref = _breg_expression(cfa.expression, pc, "CFA")
            if not deref:
                raise _Unsupported("CFA expression other than reg+offset or *(reg+offset)", pc)
            cfa_reg, cfa_offset, cfa_deref = base, offset, True
            flex = True
        elif cfa.register is None:
            raise _Unsupported(
                "the CFA has no base register (a CIE without an initial CFA rule, as "
                "'.cfi_startproc simple' leaves it)",
                pc,
            )
        else:
            cfa_reg, cfa_offset, cfa_deref = cfa.register, cfa.offset, False
            if cfa_reg not in (arch.sp, arch.fp):
                flex = True

        cfa_word = self._cfa_word(cfa_offset, pc)
        ra_word, ra_flex = self._ra(ra_rule, pc)
        if ra_flex is not None or (
            self.fixed_ra and ra_word is not None and ra_word != self.fixed_ra
        ):
            flex = True
        fp_plain: int | None
        fp_flex: tuple[int, int] | None
        fp_rule = row.registers.get(arch.fp)
        if (
            self.s390x
            and fp_rule is not None
            and fp_rule.kind is RuleKind.REGISTER
            and (self.version < spec.VERSION_3)
        ):
            fp_plain, fp_flex = spec.s390x_v2_regnum_word(fp_rule.register), None
        else:
            fp_plain, fp_flex = self._fp(fp_rule, pc)
        if fp_flex is not None:
            flex = True

        if flex:
            words: list[int] = [spec.flex_control(cfa_reg, cfa_deref), cfa_word]
            unsigned = [True, False]
            if ra_flex is not None:
                words += list(ra_flex)
                unsigned += [True, False]
            elif ra_word is None or (self.fixed_ra and ra_word == self.fixed_ra):
                if fp_plain is not None or fp_flex is not None:
                    words.append(spec.RA_OFFSET_PADDING)
                    unsigned.append(True)
            else:
                words += [spec.flex_control(None, True), ra_word]
                unsigned += [True, False]
            if fp_flex is not None:
                words += list(fp_flex)
                unsigned += [True, False]
            elif fp_plain is not None:
                words += [spec.flex_control(None, True), fp_plain]
                unsigned += [True, False]
            # flex rows name their CFA register in the words; gas leaves the base bit clear
            return _RowRules(True, False, tuple(words), tuple(unsigned), mangled)

        words = [cfa_word]
        if self.fixed_ra:
            if fp_plain is not None:
                words.append(fp_plain)
        else:
            if ra_word is not None:
                words.append(ra_word)
                if fp_plain is not None:
                    words.append(fp_plain)
            elif fp_plain is not None and self.s390x:
                words += [spec.RA_OFFSET_PADDING, fp_plain]  # RA still in r14
            elif fp_plain is not None:
                raise _Unsupported("FP is saved but the return address is still in LR", pc)
        return _RowRules(False, cfa_reg == arch.sp, tuple(words), (), mangled)

    def _check_sp_rule(self, rule: RegisterRule | None, pc: int) -> None:
        """SFrame takes the caller's SP to be the CFA; any other rule for SP cannot be
        said (gas 2.47 leaves such functions out too). On s390x the ABI fixes the
        caller's SP at CFA-160 whatever the CFI says of r15 (it saves r15 in the
        register save area, or in a floating-point register), and gas keeps them."""
        if self.s390x or rule is None or rule.kind is RuleKind.SAME_VALUE:
            return
        if rule.kind is RuleKind.VAL_OFFSET and rule.offset == 0:
            return
        raise _Unsupported(
            f"the stack pointer is {_rule_text(rule)}; SFrame takes the caller's SP to be the CFA",
            pc,
        )

    def _cfa_word(self, offset: int, pc: int) -> int:
        """The stored CFA offset: s390x keeps (offset - 160) / 8."""
        if not self.s390x:
            return offset
        if (offset + spec.S390X_CFA_OFFSET_ADJUSTMENT) % spec.S390X_CFA_OFFSET_ALIGNMENT:
            raise _Unsupported(
                f"CFA offset {offset} is not 160 plus a multiple of 8, which s390x SFrame "
                "cannot store",
                pc,
            )
        return spec.s390x_encode_cfa_offset(offset)

    def _ra(self, rule: RegisterRule | None, pc: int) -> tuple[int | None, tuple[int, int] | None]:
        """(CFA offset of the saved RA, or a flex (control, offset) pair); (None, None)
        when the RA is still in its register."""
        if rule is None or rule.kind is RuleKind.SAME_VALUE:
            if self.fixed_ra:
                return self.fixed_ra, None  # AMD64: the CIE always says CFA-8
            return None, None
        if rule.kind is RuleKind.OFFSET:
            return rule.offset, None
        if rule.kind is RuleKind.REGISTER:
            if self.s390x and self.version < spec.VERSION_3:
                return spec.s390x_v2_regnum_word(rule.register), None
            return None, (spec.flex_control(rule.register, False), 0)
        raise _Unsupported(f"the return address is {_rule_text(rule)}: no SFrame form", pc)

    def _fp(self, rule: RegisterRule | None, pc: int) -> tuple[int | None, tuple[int, int] | None]:
        """(CFA offset of the saved FP, or a flex (control, offset) pair)."""
        if rule is None or rule.kind in (RuleKind.SAME_VALUE, RuleKind.UNDEFINED):
            return None, None
        if rule.kind is RuleKind.OFFSET:
            return rule.offset, None
        if rule.kind is RuleKind.VAL_OFFSET:
            # FP = CFA+N would be the flex control word 0, which means padding
            raise _Unsupported(
                f"the frame pointer is {_rule_text(rule)}: no SFrame form (the flex "
                "control word for a CFA-based value is 0, the padding word)",
                pc,
            )
        if rule.kind in (RuleKind.EXPRESSION, RuleKind.VAL_EXPRESSION):
            base, offset, deref = _breg_expression(rule.expression, pc, "FP")
            if deref:
                raise _Unsupported("FP expression reads memory twice", pc)
            return None, (spec.flex_control(base, rule.kind is RuleKind.EXPRESSION), offset)
        if rule.kind is RuleKind.REGISTER:
            return None, (spec.flex_control(rule.register, False), 0)
        raise _Unsupported(f"the frame pointer is {_rule_text(rule)}: no SFrame form", pc)

    def _fre(self, offset: int, rules: _RowRules, flex: bool) -> FrameRowEntry:
        if flex and not rules.flex and rules.words:
            # A DEFAULT-shaped row inside a flex function: spell it as flex words.
            cfa_reg = self.arch.sp if rules.cfa_base_sp else self.arch.fp
            words: list[int] = [spec.flex_control(cfa_reg, False), rules.words[0]]
            unsigned = [True, False]
            fp_word = rules.words[1] if self.fixed_ra and len(rules.words) > 1 else None
            if not self.fixed_ra and len(rules.words) > 1:
                if self.s390x and rules.words[1] == spec.RA_OFFSET_PADDING:
                    words.append(spec.RA_OFFSET_PADDING)
                    unsigned.append(True)
                else:
                    words += [spec.flex_control(None, True), rules.words[1]]
                    unsigned += [True, False]
                if len(rules.words) > 2:
                    fp_word = rules.words[2]
            elif fp_word is not None:
                words.append(spec.RA_OFFSET_PADDING)
                unsigned.append(True)
            if fp_word is not None:
                words += [spec.flex_control(None, True), fp_word]
                unsigned += [True, False]
            return build_fre(
                offset, cfa_base_sp=False, words=words, mangled_ra=rules.mangled, unsigned=unsigned
            )
        return build_fre(
            offset,
            cfa_base_sp=rules.cfa_base_sp,
            words=rules.words,
            mangled_ra=rules.mangled,
            unsigned=rules.unsigned,
        )

    def _plt_fde(self, start: int, size: int, threshold: int) -> FuncDescEntry:
        """ld's PCMASK FDE for x86-64 PLT entries: sp+8 until the push, then sp+16."""
        fres = [
            build_fre(0, cfa_base_sp=True, words=[8]),
            build_fre(threshold, cfa_base_sp=True, words=[16]),
        ]
        return build_fde(start, size, fres, pc_mask=True, rep_size=_X86_64_PLT_BLOCK)


def _rule_text(rule: RegisterRule) -> str:
    """A register rule in words, for the reasons a function is left out."""
    match rule.kind:
        case RuleKind.OFFSET:
            return f"saved at CFA{rule.offset:+d}"
        case RuleKind.VAL_OFFSET:
            return f"CFA{rule.offset:+d}"
        case RuleKind.REGISTER:
            return f"kept in register {rule.register} (DW_CFA_register)"
        case RuleKind.EXPRESSION:
            return "saved where a DWARF expression says (DW_CFA_expression)"
        case RuleKind.VAL_EXPRESSION:
            return "computed by a DWARF expression (DW_CFA_val_expression)"
        case RuleKind.UNDEFINED:
            return "undefined (DW_CFA_undefined)"
        case RuleKind.SAME_VALUE:
            return "unchanged"
    assert_never(rule.kind)


def _breg_expression(expr: Sequence[int], pc: int, what: str) -> tuple[int, int, bool]:
    """Decode `DW_OP_bregN off [DW_OP_deref]` -> (register, offset, deref)."""
    data = bytes(expr)
    if not data or not _DW_OP_BREG0 <= data[0] <= _DW_OP_BREG31:
        raise _Unsupported(f"{what} expression other than reg+offset or *(reg+offset)", pc)
    try:
        offset, end = read_sleb(data, 1)
    except IndexError:
        raise _Unsupported(f"{what} expression ends inside its offset (damaged)", pc) from None
    rest = data[end:]
    if rest == b"":
        return data[0] - _DW_OP_BREG0, offset, False
    if rest == bytes([_DW_OP_DEREF]):
        return data[0] - _DW_OP_BREG0, offset, True
    raise _Unsupported(f"{what} expression other than reg+offset or *(reg+offset)", pc)


def _plt_threshold(cfa: CfaRule) -> int | None:
    """N of the x86-64 PLT CFA expression rsp+8+(((rip&15)>=N)<<3), else None."""
    if cfa.expression is None:
        return None
    data = cfa.expression
    head, tail = _X86_64_PLT_EXPR_HEAD, _X86_64_PLT_EXPR_TAIL
    if len(data) == len(head) + 1 + len(tail) and data.startswith(head) and data.endswith(tail):
        literal = data[len(head)]
        if 0x30 <= literal <= 0x4F:  # DW_OP_lit0..31
            return literal - 0x30
    return None
