"""Generate SFrame from DWARF call-frame information (`.eh_frame`, `.debug_frame`).

For binaries built without `--gsframe`: each CFI row of a function becomes
an FRE when its CFA, RA and FP rules can be said in SFrame:

- CFA = SP or FP + offset (DEFAULT FDE); on v3 also another register, or a
  value loaded from `*(reg + offset)` (FLEX FDE, e.g. DRAP prologues);
- RA at CFA-8 on AMD64 (the header's fixed offset), at CFA+n on AArch64,
  still in LR (AArch64, no word), undefined (outermost: an FRE without
  words, v2 errata 2 and v3);
- FP unchanged, or at CFA+n; on v3 also at/equal to reg+offset.

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

pyelftools is imported only here, lazily (it is slow to import).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stackmark.elf import STT_FUNC, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import FrameRowEntry, FuncDescEntry, SFrameSection
from stackmark.formats.sframe.writer import build_fde, build_fre, new_header
from stackmark.unwind.rules import Arch

# DWARF expression opcodes used by the patterns below.
_DW_OP_BREG0, _DW_OP_BREG31 = 0x70, 0x8F
_DW_OP_DEREF = 0x06
_X86_64_PLT_EXPR_HEAD = bytes([0x77, 0x08, 0x80, 0x00, 0x3F, 0x1A])  # rsp+8 + ((rip & 15) ...
_X86_64_PLT_EXPR_TAIL = bytes([0x2A, 0x33, 0x24, 0x22])  # ... >= N) << 3, plus
_X86_64_PLT_BLOCK = 16

# DW_CFA opcodes that move the location (pyelftools decodes their arguments).
_DW_CFA_SET_LOC, _DW_CFA_ADVANCE_LOC1, _DW_CFA_ADVANCE_LOC2, _DW_CFA_ADVANCE_LOC4 = 1, 2, 3, 4
_DW_CFA_ADVANCE_LOC, _DW_CFA_MIPS_ADVANCE_LOC8 = 0x40, 0x1D
_DW_CFA_REMEMBER_STATE, _DW_CFA_RESTORE_STATE = 0x0A, 0x0B
_DW_CFA_AARCH64_NEGATE_RA_STATE = 0x2D
_DW_CFA_GNU_ARGS_SIZE = 0x2E


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
        abi = spec.abi_for_elf(elf.machine, elf.endian)
        if abi is None:
            raise StackmarkError(
                f"{name}: SFrame describes AMD64, AArch64 and s390x code; this file is "
                f"{elf.machine_name} ({'little' if elf.endian == '<' else 'big'}-endian)"
            )
        names = _function_names(elf)
        image = elf.read(0, elf.size)
    return generate_from_elf_bytes(
        image, abi, version=version, address=address, names=names, source=name
    )


def generate_from_elf_bytes(
    image: bytes,
    abi: spec.AbiArch,
    *,
    version: int = spec.VERSION_3,
    address: int = 0,
    names: dict[int, str] | None = None,
    source: str = "<memory>",
) -> GenerationResult:
    """Like `generate_from_file`, for an ELF image already in memory."""
    if abi is spec.AbiArch.S390X_BIG and version < spec.VERSION_2:
        raise StackmarkError(
            f"{source}: s390x has SFrame from version 2 on (binutils 2.45); "
            f"version {version} cannot describe it"
        )
    entries, cfi_source = _cfi_entries(image, source)
    converter = _Converter(abi, version)
    fdes: list[FuncDescEntry] = []
    skipped: list[SkippedFunction] = []
    for entry in entries:
        if not hasattr(entry, "cie") or entry.cie is None:
            continue  # CIEs and terminators
        start = entry.header["initial_location"]
        size = entry.header["address_range"]
        if size == 0:
            continue
        try:
            fdes.extend(converter.function(entry, start, size))
        except _Unsupported as why:
            skipped.append(
                SkippedFunction(start, size, why.reason, why.pc, (names or {}).get(start))
            )
    fdes.sort(key=lambda fde: fde.start)
    # v2 without FUNC_START_PCREL: binutils 2.41-2.44 reject the flag, 2.45+ read both.
    header = new_header(abi, version=version, sorted_fdes=True, pcrel=version >= spec.VERSION_3)
    return GenerationResult(SFrameSection(header, fdes, address), cfi_source, skipped)


def _cfi_entries(image: bytes, source: str) -> tuple[list[Any], str]:
    """pyelftools' CIEs and FDEs, and the section(s) they come from.

    `.eh_frame` first; `.debug_frame` adds the functions `.eh_frame` does not
    describe (built with -fno-asynchronous-unwind-tables -g, a program's own
    functions are only in `.debug_frame`, and only the C runtime's startup
    code in `.eh_frame`).

    pyelftools has no single error type for a damaged file (ELFError,
    DWARFError, struct and construct errors, OverflowError, ...): whatever it
    raises here becomes a FormatError naming the file.
    """
    from elftools.elf.elffile import ELFFile  # lazy: slow to import

    entries: list[Any] = []
    sections: list[str] = []
    try:
        dwarf = ELFFile(io.BytesIO(image)).get_dwarf_info(relocate_dwarf_sections=False)
        if dwarf.has_EH_CFI():
            entries = list(dwarf.EH_CFI_entries())
            sections.append(".eh_frame")
        if dwarf.has_CFI():
            described = {_fde_start(e) for e in entries} - {None}
            more = [e for e in dwarf.CFI_entries() if _fde_start(e) not in described]
            if any(_fde_start(e) is not None for e in more):
                entries += more
                sections.append(".debug_frame")
    except Exception as exc:  # the pyelftools boundary (see above)
        raise FormatError(
            f"cannot read the call-frame information: {type(exc).__name__}: {exc}", source=source
        ) from None
    if not sections:
        raise StackmarkError(f"{source}: no .eh_frame or .debug_frame to generate SFrame from")
    return entries, " and ".join(sections)


def _fde_start(entry: Any) -> int | None:
    """An FDE's first address; None for CIEs and terminators."""
    if getattr(entry, "cie", None) is None:
        return None
    return int(entry.header["initial_location"])


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

    def function(self, entry: Any, start: int, size: int) -> list[FuncDescEntry]:
        augmentation = bytes(entry.cie.header.get("augmentation") or b"")
        signal = b"S" in augmentation
        pauth_key = spec.PAUTH_KEY_B if b"B" in augmentation else spec.PAUTH_KEY_A
        table = _decoded_table(entry, start)
        mangled_at = self._ra_state_changes(entry, start) if self.arch is Arch.AARCH64 else []

        rows: list[tuple[int, _RowRules]] = []
        plt_from: tuple[int, int] | None = None
        for row in table:
            pc = row["pc"]
            if pc >= start + size:
                break
            threshold = _plt_threshold(row["cfa"])
            if threshold is not None:
                plt_from = (pc, threshold)
                break
            rules = self._row(row, pc, _state_at(mangled_at, pc))
            if rows and rows[-1][1] == rules:
                continue
            rows.append((pc, rules))

        flex = any(rules.flex for _, rules in rows)
        if flex and self.version < spec.VERSION_3:
            pc = next(pc for pc, rules in rows if rules.flex)
            raise _Unsupported(
                "the CFA is not SP/FP-based, or FP is saved relative to another register; "
                f"only SFrame v3 (flex FDEs) can express it, not v{self.version}",
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
                    signal=signal and self.version >= spec.VERSION_3,
                    flex=flex,
                )
            )
        if plt_from is not None:
            result.append(self._plt_fde(plt_from[0], start + size - plt_from[0], plt_from[1]))
        return result

    # -- one row ------------------------------------------------------------------------

    def _row(self, row: dict[Any, Any], pc: int, mangled: bool) -> _RowRules:
        arch = self.arch
        ra_rule = row.get(arch.ra)
        if ra_rule is not None and ra_rule.type == "UNDEFINED":
            if self.version < spec.VERSION_2:
                raise _Unsupported(
                    "the return address is undefined (outermost frame); SFrame v1 cannot say so",
                    pc,
                )
            return _RowRules(False, False, (), (), False)  # gas leaves the base bit clear

        cfa = row["cfa"]
        flex = False
        if cfa.expr is not None:
            base, offset, deref = _breg_expression(cfa.expr, pc, "CFA")
            if not deref:
                raise _Unsupported("CFA expression other than reg+offset or *(reg+offset)", pc)
            cfa_reg, cfa_offset, cfa_deref = base, offset, True
            flex = True
        else:
            cfa_reg, cfa_offset, cfa_deref = cfa.reg, cfa.offset, False
            if cfa_reg not in (arch.sp, arch.fp):
                flex = True

        cfa_word = self._cfa_word(cfa_offset, pc)
        ra_word: int | None
        ra_flex: tuple[int, int] | None = None
        fp_plain: int | None
        fp_flex: tuple[int, int] | None
        ra_register = self._s390x_register(ra_rule)
        if ra_register is None:
            ra_word = self._ra_offset(ra_rule, pc)
        elif self.version < spec.VERSION_3:
            ra_word = spec.s390x_v2_regnum_word(ra_register)
        else:
            ra_word, ra_flex, flex = None, (spec.flex_control(ra_register, False), 0), True
        fp_rule = row.get(arch.fp)
        fp_register = self._s390x_register(fp_rule)
        if fp_register is not None and self.version < spec.VERSION_3:
            fp_plain, fp_flex = spec.s390x_v2_regnum_word(fp_register), None
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
            if ra_word is not None and ra_word != self.fixed_ra:
                raise _Unsupported(
                    f"return address saved at CFA{ra_word:+d}, not at CFA{self.fixed_ra:+d}",
                    pc,
                )
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

    def _s390x_register(self, rule: Any) -> int | None:
        """On s390x, the register an RA/FP rule says the value is kept in, else None."""
        if self.s390x and rule is not None and rule.type == "REGISTER":
            return int(rule.arg)
        return None

    def _ra_offset(self, rule: Any, pc: int) -> int | None:
        """CFA offset of the saved RA; None when the RA is still in its register."""
        if rule is None or rule.type == "SAME_VALUE":
            if self.fixed_ra:
                return self.fixed_ra  # AMD64: the CIE always says CFA-8
            return None
        if rule.type == "OFFSET":
            return int(rule.arg)
        raise _Unsupported(f"return address rule {rule.type} has no SFrame form", pc)

    def _fp(self, rule: Any, pc: int) -> tuple[int | None, tuple[int, int] | None]:
        """(CFA offset of the saved FP, or a flex (control, offset) pair)."""
        if rule is None or rule.type in ("SAME_VALUE", "UNDEFINED"):
            return None, None
        if rule.type == "OFFSET":
            return int(rule.arg), None
        if rule.type == "VAL_OFFSET":
            return None, (spec.flex_control(None, False), int(rule.arg))
        if rule.type in ("EXPRESSION", "VAL_EXPRESSION"):
            base, offset, deref = _breg_expression(rule.arg, pc, "FP")
            if deref:
                raise _Unsupported("FP expression reads memory twice", pc)
            return None, (spec.flex_control(base, rule.type == "EXPRESSION"), offset)
        if rule.type == "REGISTER":
            return None, (spec.flex_control(int(rule.arg), False), 0)
        raise _Unsupported(f"frame pointer rule {rule.type} has no SFrame form", pc)

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

    # -- AArch64 return-address signing state ---------------------------------------------

    def _ra_state_changes(self, entry: Any, start: int) -> list[tuple[int, bool]]:
        """(pc, signed) after each change of the RA-signing state, in pc order."""
        factor = entry.cie["code_alignment_factor"]
        pc, state = start, False
        saved: list[bool] = []
        changes: list[tuple[int, bool]] = []
        for instruction in _cie_then_fde(entry):
            op, args = instruction.opcode, instruction.args
            if op == _DW_CFA_ADVANCE_LOC or op in (
                _DW_CFA_ADVANCE_LOC1,
                _DW_CFA_ADVANCE_LOC2,
                _DW_CFA_ADVANCE_LOC4,
                _DW_CFA_MIPS_ADVANCE_LOC8,
            ):
                pc += args[0] * factor
            elif op == _DW_CFA_SET_LOC:
                pc = args[0]
            elif op == _DW_CFA_AARCH64_NEGATE_RA_STATE:
                state = not state
                changes.append((pc, state))
            elif op == _DW_CFA_REMEMBER_STATE:
                saved.append(state)
            elif op == _DW_CFA_RESTORE_STATE and saved:
                state = saved.pop()
                changes.append((pc, state))
        return changes


def _decoded_table(entry: Any, start: int) -> list[dict[Any, Any]]:
    """pyelftools' rows for one FDE, or `_Unsupported` when they cannot be decoded.

    DW_CFA_GNU_args_size (bytes of outgoing arguments at a call site, for
    landing pads) changes no CFA or register rule, but pyelftools 0.33 cannot
    decode a table that contains it (and its error message then fails to
    format), so it is dropped first: glibc's libc.so.6 has it.
    """
    for owner in (entry.cie, entry):
        owner.instructions = [i for i in owner.instructions if i.opcode != _DW_CFA_GNU_ARGS_SIZE]
    try:
        rows: list[dict[Any, Any]] = entry.get_decoded().table
    except Exception as exc:  # the pyelftools boundary, as in _cfi_entries
        raise _Unsupported(
            f"its call-frame instructions cannot be decoded: {type(exc).__name__}: {exc}", start
        ) from None
    return rows


def _cie_then_fde(entry: Any) -> Iterable[Any]:
    yield from entry.cie.instructions
    yield from entry.instructions


def _state_at(changes: Sequence[tuple[int, bool]], pc: int) -> bool:
    state = False
    for at, value in changes:
        if at > pc:
            break
        state = value
    return state


def _breg_expression(expr: Sequence[int], pc: int, what: str) -> tuple[int, int, bool]:
    """Decode `DW_OP_bregN off [DW_OP_deref]` -> (register, offset, deref)."""
    data = bytes(expr)
    if not data or not _DW_OP_BREG0 <= data[0] <= _DW_OP_BREG31:
        raise _Unsupported(f"{what} expression other than reg+offset or *(reg+offset)", pc)
    offset, used = _sleb128(data, 1)
    rest = data[1 + used :]
    if rest == b"":
        return data[0] - _DW_OP_BREG0, offset, False
    if rest == bytes([_DW_OP_DEREF]):
        return data[0] - _DW_OP_BREG0, offset, True
    raise _Unsupported(f"{what} expression other than reg+offset or *(reg+offset)", pc)


def _plt_threshold(cfa: Any) -> int | None:
    """N of the x86-64 PLT CFA expression rsp+8+(((rip&15)>=N)<<3), else None."""
    if cfa.expr is None:
        return None
    data = bytes(cfa.expr)
    head, tail = _X86_64_PLT_EXPR_HEAD, _X86_64_PLT_EXPR_TAIL
    if len(data) == len(head) + 1 + len(tail) and data.startswith(head) and data.endswith(tail):
        literal = data[len(head)]
        if 0x30 <= literal <= 0x4F:  # DW_OP_lit0..31
            return literal - 0x30
    return None


def _sleb128(data: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    used = 0
    while True:
        if at + used >= len(data):
            raise ValueError("truncated SLEB128 in a DWARF expression")
        byte = data[at + used]
        used += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if byte & 0x40:
                result -= 1 << shift
            return result, used
