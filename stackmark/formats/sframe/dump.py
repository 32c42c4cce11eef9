"""`objdump --sframe` text, as three binutils releases print it.

The text is libsframe's dumper, and it changed between releases:

- 2.40 shows only v1: no fixed-offset header lines, RA column "u" when the
  header fixes the RA (AMD64), PCMASK FDEs marked "[m]" with raw offsets,
  ", pauth = B key" on AArch64 FDEs signed with the B key.
- 2.44 shows only v2 (v1 sections: header, then "No further information
  can be displayed."); adds "CFA fixed RA offset", RA "f" for a fixed RA.
- 2.47 (2.45 and later) shows v2 and v3: each flag on its own line,
  PCREL-aware start addresses, `attr = "S"/"F"`, "RA undefined" rows,
  s390x register and padding notation, and flex rows such as `(fp-8)`.

Column widths and trailing blanks are kept exactly, so that our text can be
compared with objdump's byte for byte.
"""

from __future__ import annotations

from stackmark.errors import StackmarkError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import FrameRowEntry, FuncDescEntry, SFrameSection
from stackmark.unwind_rules import Arch

STYLES = ("2.40", "2.44", "2.47")

_FORMAT_NAMES = {
    spec.AbiArch.AMD64_LITTLE: "elf64-x86-64",
    spec.AbiArch.AARCH64_LITTLE: "elf64-littleaarch64",
    spec.AbiArch.AARCH64_BIG: "elf64-bigaarch64",
    spec.AbiArch.S390X_BIG: "elf64-s390",
}

_ERR = -1  # what libsframe's getters return for a missing word


def default_style(version: int, abi: spec.AbiArch | None = None, flags: int = 0) -> str:
    """The binutils release whose objdump shows a section: the one that writes its
    version (v1 2.40, v2 2.44, v3 2.47), or 2.47 where 2.44 cannot show it: s390x
    (SFrame for s390x came with 2.45) and v2 with FUNC_START_PCREL (2.45's errata)."""
    if abi is spec.AbiArch.S390X_BIG or flags & ~_FLAGS_BEFORE_2_45:
        return "2.47"
    return {spec.VERSION_1: "2.40", spec.VERSION_2: "2.44"}.get(version, "2.47")


_FLAGS_BEFORE_2_45 = spec.F_FDE_SORTED | spec.F_FRAME_POINTER
"""The header flags objdump 2.40 and 2.44 know."""


def empty_section_text(file_name: str, abi: spec.AbiArch) -> str:
    """What objdump 2.47 prints on stdout for an empty SFrame section
    (`ld --discard-sframe`): the file line, no contents. It reports
    "SFrame decode failure: Corrupt SFrame." on stderr and exits 0."""
    return f"\n{file_name}:     file format {bfd_format_name(abi)}\n\n"


EMPTY_SECTION_ERROR = "SFrame decode failure: Corrupt SFrame."
"""objdump's and readelf's complaint about an empty SFrame section."""


def bfd_format_name(abi: spec.AbiArch) -> str:
    """BFD's name for the file format objdump prints in its first line."""
    return _FORMAT_NAMES[abi]


def objdump_text(
    section: SFrameSection,
    file_name: str,
    *,
    style: str | None = None,
    section_name: str = ".sframe",
) -> str:
    """The whole `objdump --sframe FILE` output for one file."""
    return (
        f"\n{file_name}:     file format {bfd_format_name(section.abi_arch)}\n\n"
        f"Contents of the SFrame section {section_name}:" + dump_sframe(section, style=style)
    )


def readelf_text(
    section: SFrameSection, *, style: str | None = None, section_name: str = ".sframe"
) -> str:
    """The whole `readelf --sframe FILE` output: objdump's without the file line."""
    return f"Contents of the SFrame section {section_name}:" + dump_sframe(section, style=style)


def readelf_empty_section_text(section_name: str) -> str:
    """What readelf 2.47 prints for an empty SFrame section (and exits 0)."""
    return f"\nSection '{section_name}' has no debugging data.\n"


def dump_sframe(section: SFrameSection, *, style: str | None = None) -> str:
    """libsframe's dump of the section (what objdump prints after "Contents of ...:")."""
    style = style or default_style(section.version, section.abi_arch, section.header.flags)
    if style not in STYLES:
        raise StackmarkError(f"unknown dump style {style!r} (use one of {', '.join(STYLES)})")
    if section.abi_arch is spec.AbiArch.S390X_BIG and style != "2.47":
        raise StackmarkError(
            f"objdump {style} does not know s390x SFrame (added in 2.45; try --style=2.47)"
        )
    version = section.version
    readable = {"2.40": (1,), "2.44": (1, 2), "2.47": (2, 3)}[style]
    if version not in readable:
        raise StackmarkError(
            f"objdump {style} cannot display SFrame version {version} "
            f"(try --style={default_style(version)})"
        )
    if style in ("2.40", "2.44") and section.header.flags & ~_FLAGS_BEFORE_2_45:
        raise StackmarkError(
            f"objdump {style} cannot display a section with flags 0x{section.header.flags:x} "
            "(it knows only FDE_SORTED and FRAME_POINTER; try --style=2.47)"
        )
    out: list[str] = [_header_text(section, style)]
    if (style == "2.44" and version != spec.VERSION_2) or (
        style == "2.40" and version != spec.VERSION_1
    ):
        out.append("\n No further information can be displayed.  SFrame version not supported\n")
        return "".join(out)
    out.append("\n  Function Index :\n")
    for fde in section.fdes:
        out.append(_function_text(section, fde, style))
        out.append("\n")
    return "".join(out)


# --- header -------------------------------------------------------------------------


def _header_text(section: SFrameSection, style: str) -> str:
    header = section.header
    names = {"2.40": 1, "2.44": 2, "2.47": 3}[style]
    version = f"SFRAME_VERSION_{header.version}" if header.version <= names else "(null)"
    lines = ["\n", "  Header :\n", "\n", f"    Version: {version}\n"]
    if style == "2.47":
        lines.append(_flags_lines(header.flags, header.version))
    else:
        lines.append(f"    Flags: {_flags_old(header.flags)}\n")
    if style != "2.40":
        if header.cfa_fixed_fp_offset:
            lines.append(f"    CFA fixed FP offset: {header.cfa_fixed_fp_offset}\n")
        if header.cfa_fixed_ra_offset:
            lines.append(f"    CFA fixed RA offset: {header.cfa_fixed_ra_offset}\n")
    lines.append(f"    Num FDEs: {_i32(header.num_fdes)}\n")
    lines.append(f"    Num FREs: {_i32(header.num_fres)}\n")
    return "".join(lines)


def _flags_old(flags: int) -> str:
    """2.40/2.44: the frame-pointer flag, when set, replaces the sorted flag's text."""
    if not flags:
        return "NONE"
    text = ""
    if flags & spec.F_FDE_SORTED:
        text = "SFRAME_F_FDE_SORTED"
    if flags & spec.F_FRAME_POINTER:
        text = "SFRAME_F_FRAME_POINTER"
    return text


def _flags_lines(flags: int, version: int) -> str:
    """2.47: one line per flag, a comma after all but the last."""
    if not flags:
        return "    Flags: NONE\n"
    known = [(spec.F_FDE_SORTED, "SFRAME_F_FDE_SORTED")]
    if version == spec.VERSION_2:
        known.append((spec.F_FRAME_POINTER, "SFRAME_F_FRAME_POINTER"))
    known.append((spec.F_FDE_FUNC_START_PCREL, "SFRAME_F_FDE_FUNC_START_PCREL"))
    prefix = "Flags: "
    lines = []
    for bit, name in known:
        if flags & bit:
            flags &= ~bit
            lines.append(f"{prefix:>11}{name}{',' if flags else ''}\n")
            prefix = " "
    if flags:
        lines.append(f"{prefix:>11}{flags}\n")
    return "".join(lines)


# --- functions ------------------------------------------------------------------------


def _function_text(section: SFrameSection, fde: FuncDescEntry, style: str) -> str:
    header = section.header
    start = _displayed_start(section, fde, style)
    out = [f"\n    func idx [{fde.index}]: pc = 0x{start:x}, size = {_i32(fde.size)} bytes"]
    if style == "2.47":
        attrs = ("S" if spec.fde_info_signal(fde.info) else "") + ("F" if fde.is_flex else "")
        if attrs:
            out.append(f', attr = "{attrs}"')
    if header.arch is Arch.AARCH64 and fde.pauth_key == spec.PAUTH_KEY_B:
        out.append(", pauth = B key")
    marker = "[m]" if fde.is_pcmask else "   "
    out.append(f"\n    {'STARTPC':<7}{marker:<8} {'CFA':<10}{'FP':<10}{'RA':<13}")
    for fre in fde.fres:
        pc = fre.start if fde.is_pcmask else (start + fre.start) & 0xFFFFFFFFFFFFFFFF
        out.append(f"\n    {pc:016x}")
        if style == "2.47" and fre.ra_undefined:
            out.append("  RA undefined")
        elif style == "2.47" and fde.is_flex:
            out.append(_flex_columns(section, fre))
        else:
            out.append(_default_columns(section, fre, style))
    return "".join(out)


def _displayed_start(section: SFrameSection, fde: FuncDescEntry, style: str) -> int:
    """The pc objdump prints: 2.40/2.44 ignore FUNC_START_PCREL (and 2.40/2.44 read
    the start as a 32-bit field); 2.47 honours the flag."""
    if style == "2.47":
        value = fde.start
    else:
        value = section.address + _i32(fde.raw_start)
    return value & 0xFFFFFFFFFFFFFFFF


def _default_columns(section: SFrameSection, fre: FrameRowEntry, style: str) -> str:
    header = section.header
    words = fre.words
    s390x = header.arch is Arch.S390X
    fixed_ra = header.cfa_fixed_ra_offset
    fixed_fp = header.cfa_fixed_fp_offset if style == "2.47" else 0

    cfa = _word(words, 0)
    if s390x and cfa is not None:
        cfa = spec.s390x_decode_cfa_offset(cfa)
    base = "sp" if fre.cfa_base_is_sp else "fp"
    text = f"  {base + '+' + str(cfa if cfa is not None else _ERR):<10}"

    fp_index = 1 if fixed_ra else 2
    fp = _word(words, fp_index)
    if fixed_fp and not fre.ra_undefined:
        fp = fixed_fp  # 2.47 reports a fixed FP offset over any FRE word
    if fp is None:
        fp_text = "u"
    elif s390x and header.version == spec.VERSION_2 and spec.s390x_v2_word_is_regnum(fp):
        fp_text = f"r{fp >> 1}"
    else:
        fp_text = f"c{fp:+d}"
    text += f"{fp_text:<10}"

    ra = _word(words, 1)
    if fixed_ra:
        ra_text = "u" if style == "2.40" else "f"
    elif ra is None:
        # 2.40 leaves the FP column's text in its buffer; it is "u" whenever RA is absent.
        ra_text = fp_text if style == "2.40" else "u"
    elif style == "2.47" and ra == spec.RA_OFFSET_PADDING:
        ra_text = "U"
    elif style == "2.47" and s390x and header.version == spec.VERSION_2 and ra & 1:
        ra_text = f"r{ra >> 1}"
    else:
        ra_text = f"c{ra:+d}"
    ra_text += "[s]" if fre.mangled_ra else "   "
    return text + f"{ra_text:<13}"


def _flex_columns(section: SFrameSection, fre: FrameRowEntry) -> str:
    header = section.header
    words = fre.words
    count = len(words)
    abi = header.abi_arch

    def disp(control: int, offset: int) -> str:
        # libsframe reads the register and deref bits only of register-based words
        if not spec.flex_control_reg_p(control):
            return f"c{offset:+d}"
        text = f"{_register_name(abi.arch, spec.flex_control_regnum(control))}{offset:+d}"
        return f"({text})" if spec.flex_control_deref_p(control) else text

    cfa_offset = words[1] if count > 1 else _ERR
    if abi.arch is Arch.S390X and count > 1:
        cfa_offset = spec.s390x_decode_cfa_offset(cfa_offset)
    cfa_control = fre.unsigned_word(0) if count > 0 else 0
    text = f"  {disp(cfa_control, cfa_offset):<10}"

    ra_control = fre.unsigned_word(2) if count > 2 else None
    fp_at = 3 if ra_control == spec.RA_OFFSET_PADDING else 4
    if count > fp_at + 1:
        fp_text = disp(fre.unsigned_word(fp_at), words[fp_at + 1])
    elif count > fp_at and header.cfa_fixed_fp_offset:
        fp_text = disp(fre.unsigned_word(fp_at), header.cfa_fixed_fp_offset)
    else:
        fp_text = "u"
    text += f"{fp_text:<10}"

    if ra_control is None:
        ra_text = "f" if header.cfa_fixed_ra_offset else "u"
    elif ra_control == spec.RA_OFFSET_PADDING:
        ra_text = "U"
    else:
        ra_offset = words[3] if count > 3 else header.cfa_fixed_ra_offset or _ERR
        ra_text = disp(ra_control, ra_offset)
    ra_text += "[s]" if fre.mangled_ra else "   "
    return text + f"{ra_text:<13}"


def _register_name(arch: Arch, number: int) -> str:
    if number == arch.sp:
        return "sp"
    if number == arch.fp:
        return "fp"
    return f"r{number}"


def _word(words: tuple[int, ...], index: int) -> int | None:
    return words[index] if index < len(words) else None


def _i32(value: int) -> int:
    """A value as C's `%d` of an int32 prints it."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value
