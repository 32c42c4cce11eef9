"""What an FRE's data words mean: CFA, RA and FP recovery rules.

DEFAULT FDEs (all versions) store signed offsets in a fixed order: the CFA
offset from SP or FP, then the RA slot (unless the header fixes it, as on
AMD64 where RA = *(CFA-8)), then the FP slot, both relative to the CFA.
s390x scales the CFA offset, uses a zero RA word as padding, and in v2
encodes "held in register R" as an odd word 2R+1.

v3 FLEX FDEs store (control, offset) pairs for CFA, RA and FP. A control
word names a DWARF register (or the CFA) and whether to read memory there;
a lone zero control word in the RA slot means "RA by the default rule".
"""

from __future__ import annotations

from stackmark.errors import FormatError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import FrameRowEntry, FuncDescEntry, SFrameHeader
from stackmark.unwind_rules import CFA, Arch, RuleKind, UnwindRow, ValueRule

_SAME = ValueRule.same()
_UNDEFINED = ValueRule.undefined()


class RowInterpreter:
    """Turns FREs of one section into `UnwindRow`s; header-wide values are
    worked out once, since lookups call this for every PC."""

    def __init__(self, header: SFrameHeader):
        self.header = header
        self.arch = header.arch
        self.sp = self.arch.sp
        self.fp = self.arch.fp
        self.version = header.version
        self.s390x = self.arch is Arch.S390X
        fixed_ra = header.cfa_fixed_ra_offset
        self.fixed_ra = ValueRule.at_cfa(fixed_ra) if fixed_ra else None
        self.fp_index = 1 if fixed_ra else 2
        fixed_fp = header.cfa_fixed_fp_offset
        self.fixed_fp = ValueRule.at_cfa(fixed_fp) if fixed_fp else None

    def row(self, fde: FuncDescEntry, fre: FrameRowEntry | None, start: int, end: int) -> UnwindRow:
        """The unwind rules of `fre` (None: v3's FRE-less outermost FDE) for [start, end)."""
        signal = self.version >= spec.VERSION_3 and spec.fde_info_signal(fde.info)
        if fre is None or not fre.words:
            return UnwindRow(
                start, end, self.sp, 0, _UNDEFINED, _SAME, signal_frame=signal, outermost=True
            )
        if fde.is_flex:
            return _flex_row(self.header, fre, start, end, signal)
        words = fre.words
        info = fre.info
        cfa_offset = words[0]
        if self.s390x:
            cfa_offset = spec.s390x_decode_cfa_offset(cfa_offset)
        cfa_register = self.sp if info & 1 else self.fp
        fp_index = self.fp_index
        if self.fixed_ra is not None:
            ra = self.fixed_ra
        else:
            ra = _stack_slot(self.header, words[1]) if len(words) > 1 else _SAME
        if self.fixed_fp is not None:
            fp = self.fixed_fp
        elif len(words) > fp_index:
            fp = (
                _stack_slot(self.header, words[fp_index])
                if self.s390x
                else ValueRule.at_cfa(words[fp_index])
            )
        else:
            fp = _SAME
        return UnwindRow(
            start,
            end,
            cfa_register,
            cfa_offset,
            ra,
            fp,
            ra_mangled=bool(info & 0x80),
            signal_frame=signal,
        )


def unwind_row(
    header: SFrameHeader, fde: FuncDescEntry, fre: FrameRowEntry | None, start: int, end: int
) -> UnwindRow:
    """The unwind rules of `fre` (None: v3's FRE-less outermost FDE) for [start, end)."""
    return RowInterpreter(header).row(fde, fre, start, end)


def _stack_slot(header: SFrameHeader, word: int) -> ValueRule:
    """An RA/FP word of a DEFAULT FDE: saved at CFA+word, with s390x's special values."""
    if header.arch is Arch.S390X:
        if word == spec.RA_OFFSET_PADDING:
            return ValueRule.same()
        if header.version == spec.VERSION_2 and spec.s390x_v2_word_is_regnum(word):
            return ValueRule(RuleKind.VALUE, word >> 1, 0)
    return ValueRule.at_cfa(word)


def _flex_row(
    header: SFrameHeader, fre: FrameRowEntry, start: int, end: int, signal: bool
) -> UnwindRow:
    words = fre.words
    count = len(words)
    if count < 2:
        raise FormatError(
            f"flex FRE has {count} data word(s); the CFA rule needs a control word and an offset",
            offset=fre.offset if fre.offset >= 0 else None,
        )
    control = fre.unsigned_word(0)
    if not spec.flex_control_reg_p(control):
        raise FormatError(
            f"flex FRE's CFA control word 0x{control:x} names no register",
            offset=fre.offset if fre.offset >= 0 else None,
        )
    cfa_offset = words[1]
    if header.arch is Arch.S390X:
        cfa_offset = spec.s390x_decode_cfa_offset(cfa_offset)

    default_ra = (
        ValueRule.at_cfa(header.cfa_fixed_ra_offset)
        if header.cfa_fixed_ra_offset
        else ValueRule.same()
    )
    fp_at = 4
    if count > 2 and fre.unsigned_word(2) == spec.RA_OFFSET_PADDING:
        ra = default_ra
        fp_at = 3
    elif count > 3:
        ra = _flex_rule(fre.unsigned_word(2), words[3])
    else:
        ra = default_ra
    if count > fp_at + 1:
        fp = _flex_rule(fre.unsigned_word(fp_at), words[fp_at + 1])
    elif header.cfa_fixed_fp_offset:
        fp = ValueRule.at_cfa(header.cfa_fixed_fp_offset)
    else:
        fp = ValueRule.same()
    return UnwindRow(
        start,
        end,
        spec.flex_control_regnum(control),
        cfa_offset,
        ra,
        fp,
        cfa_deref=spec.flex_control_deref_p(control),
        ra_mangled=fre.mangled_ra,
        signal_frame=signal,
    )


def _flex_rule(control: int, offset: int) -> ValueRule:
    base = spec.flex_control_regnum(control) if spec.flex_control_reg_p(control) else CFA
    kind = RuleKind.AT if spec.flex_control_deref_p(control) else RuleKind.VALUE
    return ValueRule(kind, base, offset)
