"""Call-frame information: `.eh_frame` and `.debug_frame`, read into rows.

DWARF 5 section 6.4 ("Call Frame Information") and the Linux Standard Base's
`.eh_frame` (pointer encodings, augmentation strings). Layout of one entry:

    u32 length (0xffffffff: then u64; 0 in .eh_frame: terminator)
    CIE:  id (.eh_frame 0; .debug_frame all ones), u8 version, augmentation
          string, [.debug_frame v4: u8 address_size, u8 segment_size],
          uleb code_alignment, sleb data_alignment, return-address column
          (u8 in version 1, else uleb), [augmentation data: "z" length, then
          per letter: L lsda encoding, P personality, R FDE encoding, S
          signal frame, B AArch64 B key], initial instructions
    FDE:  CIE pointer (.eh_frame: distance back from this field; .debug_frame:
          section offset), initial location and range (.eh_frame: in the
          CIE's "R" encoding), ["z": augmentation data], instructions

Everything gas accepts is read: every DW_CFA opcode of DWARF 5 and the GNU
and AArch64 ones (DW_CFA_GNU_args_size, negative_offset_extended,
DW_CFA_AARCH64_negate_ra_state and negate_ra_state_with_pc), and
DW_CFA_restore of a register the CIE gave no rule (back to "no rule").
Rows are computed per FDE on request (`Fde.rows()`). Every read is
bounds-checked; damage raises FormatError naming the section and the
offset. The bytes must already be relocated (relocatable objects).

    entries = read_cfi(data, ".eh_frame", address=0x2000, endian="<", address_size=8)
    for fde in entries:
        for row in fde.rows():   # CfiRow: pc, cfa, registers, ra_signed
            ...
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from stackmark.binary import Cursor
from stackmark.errors import FormatError

# -- DW_CFA opcodes (DWARF 5 7.24, GNU and AArch64 extensions) --------------------
DW_CFA_advance_loc = 0x40  # high two bits; delta in the low six
DW_CFA_offset = 0x80
DW_CFA_restore = 0xC0
DW_CFA_nop = 0x00
DW_CFA_set_loc = 0x01
DW_CFA_advance_loc1 = 0x02
DW_CFA_advance_loc2 = 0x03
DW_CFA_advance_loc4 = 0x04
DW_CFA_offset_extended = 0x05
DW_CFA_restore_extended = 0x06
DW_CFA_undefined = 0x07
DW_CFA_same_value = 0x08
DW_CFA_register = 0x09
DW_CFA_remember_state = 0x0A
DW_CFA_restore_state = 0x0B
DW_CFA_def_cfa = 0x0C
DW_CFA_def_cfa_register = 0x0D
DW_CFA_def_cfa_offset = 0x0E
DW_CFA_def_cfa_expression = 0x0F
DW_CFA_expression = 0x10
DW_CFA_offset_extended_sf = 0x11
DW_CFA_def_cfa_sf = 0x12
DW_CFA_def_cfa_offset_sf = 0x13
DW_CFA_val_offset = 0x14
DW_CFA_val_offset_sf = 0x15
DW_CFA_val_expression = 0x16
DW_CFA_MIPS_advance_loc8 = 0x1D
DW_CFA_AARCH64_negate_ra_state_with_pc = 0x2C
DW_CFA_AARCH64_negate_ra_state = 0x2D  # DW_CFA_GNU_window_save on SPARC
DW_CFA_GNU_args_size = 0x2E
DW_CFA_GNU_negative_offset_extended = 0x2F

# -- DW_EH_PE pointer encodings (LSB, .eh_frame) -----------------------------------
DW_EH_PE_omit = 0xFF
DW_EH_PE_pcrel = 0x10
DW_EH_PE_datarel = 0x30
_EH_PE_FORMATS = {  # low nibble -> (size in bytes, signed); 0 = address size, -1 = LEB128
    0x0: (0, False),
    0x1: (-1, False),
    0x2: (2, False),
    0x3: (4, False),
    0x4: (8, False),
    0x9: (-1, True),
    0xA: (2, True),
    0xB: (4, True),
    0xC: (8, True),
}


class RuleKind(enum.Enum):
    """How a register's caller value is found (DWARF 5 6.4.1)."""

    UNDEFINED = "undefined"
    SAME_VALUE = "same value"
    OFFSET = "offset(N)"  # saved at CFA+N
    VAL_OFFSET = "val_offset(N)"  # is CFA+N
    REGISTER = "register(R)"  # kept in register R
    EXPRESSION = "expression(E)"  # saved at the address E computes
    VAL_EXPRESSION = "val_expression(E)"  # is the value E computes


@dataclass(frozen=True, slots=True)
class RegisterRule:
    kind: RuleKind
    offset: int = 0  # OFFSET, VAL_OFFSET
    register: int = 0  # REGISTER
    expression: bytes = b""  # EXPRESSION, VAL_EXPRESSION


@dataclass(frozen=True, slots=True)
class CfaRule:
    """CFA = register + offset, or the value of a DWARF expression."""

    register: int | None
    offset: int = 0
    expression: bytes | None = None


@dataclass(frozen=True, slots=True)
class CfiRow:
    """The rules from `pc` up to the next row's pc (or the FDE's end)."""

    pc: int
    cfa: CfaRule
    registers: dict[int, RegisterRule]
    ra_signed: bool = False  # AArch64: the return address carries a PAC
    ra_signed_with_pc: bool = False  # AArch64 PAuth_LR: signed with the PC as well


@dataclass(slots=True)
class Cie:
    """A Common Information Entry: what its FDEs share (alignment factors, the
    return-address column, the pointer encoding, the initial instructions)."""

    offset: int
    version: int
    augmentation: str
    code_alignment: int
    data_alignment: int
    ra_register: int
    instructions: bytes
    instructions_offset: int
    fde_encoding: int = 0
    has_augmentation_data: bool = False

    @property
    def signal_frame(self) -> bool:
        """Augmentation "S": the FDEs describe a signal trampoline."""
        return "S" in self.augmentation

    @property
    def pauth_b_key(self) -> bool:
        """Augmentation "B": AArch64 return addresses are signed with the B key."""
        return "B" in self.augmentation


@dataclass(slots=True)
class Fde:
    """A Frame Description Entry: one function's range and instructions; `rows()`
    runs its CIE's instructions, then its own. Offsets are section offsets."""

    offset: int
    cie: Cie
    start: int
    size: int
    instructions: bytes
    instructions_offset: int
    section: str
    source: str | None
    endian: str
    address_size: int
    section_address: int = 0
    _rows: list[CfiRow] | None = field(default=None, repr=False)

    def rows(self) -> list[CfiRow]:
        """The rows of the table (DWARF 5 6.4.3), first at `start`; computed once."""
        if self._rows is None:
            self._rows = _Machine(self).run()
        return self._rows


def read_cfi(
    data: bytes,
    section: str,
    *,
    address: int = 0,
    endian: str = "<",
    address_size: int = 8,
    source: str | None = None,
) -> list[Fde]:
    """Every FDE of a `.eh_frame` (at `address`) or `.debug_frame` section, in section order."""
    is_eh = section.startswith(".eh_frame")
    cursor = _Cursor(data, section, source, endian)
    cies: dict[int, Cie] = {}
    fdes: list[Fde] = []
    while cursor.pos < len(data):
        offset = cursor.pos
        length = cursor.uint(4, "entry length")
        offset_size = 4
        if length == 0xFFFFFFFF:
            length, offset_size = cursor.uint(8, "64-bit entry length"), 8
        if length == 0:
            if is_eh:
                break  # the terminator
            continue
        end = cursor.pos + length
        if end > len(data):
            raise cursor.error(
                f"entry of {length} bytes runs past the end of the section ({len(data)} bytes)",
                offset,
            )
        id_at = cursor.pos
        entry_id = cursor.uint(offset_size, "CIE id or pointer")
        is_cie = entry_id == 0 if is_eh else entry_id == (1 << (8 * offset_size)) - 1
        body = _Cursor(data, section, source, endian, id_at + offset_size, end=end)
        if is_cie:
            cies[offset] = _read_cie(body, offset, address_size)
        else:
            cie_at = id_at - entry_id if is_eh else entry_id
            cie = cies.get(cie_at)
            if cie is None:
                if not 0 <= cie_at < len(data):
                    raise cursor.error(f"FDE's CIE pointer 0x{cie_at:x} is outside", id_at)
                cie = _read_cie_at(data, cie_at, section, source, endian, address_size, is_eh)
                cies[cie_at] = cie
            fdes.append(_read_fde(body, offset, cie, is_eh, address, address_size))
        cursor.pos = end
    return fdes


def _read_cie_at(
    data: bytes,
    at: int,
    section: str,
    source: str | None,
    endian: str,
    address_size: int,
    is_eh: bool,
) -> Cie:
    """A CIE that an FDE points at (it may follow the FDE in .debug_frame)."""
    cursor = _Cursor(data, section, source, endian, at)
    length = cursor.uint(4, "CIE length")
    offset_size = 4
    if length == 0xFFFFFFFF:
        length, offset_size = cursor.uint(8, "64-bit CIE length"), 8
    end = cursor.pos + length
    if end > len(data):
        raise cursor.error("CIE runs past the end of the section", at)
    entry_id = cursor.uint(offset_size, "CIE id")
    if entry_id != (0 if is_eh else (1 << (8 * offset_size)) - 1):
        raise cursor.error(f"an FDE points at 0x{at:x}, which is not a CIE", at)
    return _read_cie(_Cursor(data, section, source, endian, cursor.pos, end=end), at, address_size)


def _read_cie(cursor: _Cursor, offset: int, address_size: int) -> Cie:
    version = cursor.uint(1, "CIE version")
    if version not in (1, 3, 4):
        raise cursor.error(f"CIE version {version} (1, 3 and 4 are known)", cursor.pos - 1)
    augmentation = cursor.cstring("CIE augmentation")
    if version == 4:
        cursor.uint(1, "CIE address size")
        cursor.uint(1, "CIE segment selector size")
    code_alignment = cursor.uleb("code alignment factor")
    data_alignment = cursor.sleb("data alignment factor")
    ra_register = (
        cursor.uint(1, "return address column")
        if version == 1
        else cursor.uleb("return address column")
    )
    fde_encoding = 0
    has_data = augmentation.startswith("z")
    if has_data:
        data_length = cursor.uleb("augmentation data length")
        data_end = cursor.pos + data_length
        for letter in augmentation[1:]:
            if letter == "R":
                fde_encoding = cursor.uint(1, "FDE pointer encoding")
            elif letter == "L":
                cursor.uint(1, "LSDA pointer encoding")
            elif letter == "P":
                encoding = cursor.uint(1, "personality encoding")
                cursor.encoded(encoding, 0, address_size, "personality routine")
            elif letter in "SBG":
                pass  # no data: signal frame, AArch64 B key, MTE-tagged frames
            else:
                break  # unknown letter: the length lets us skip the rest
        cursor.pos = data_end
    elif augmentation not in ("", "eh"):
        raise cursor.error(f"unknown CIE augmentation {augmentation!r}", offset)
    elif augmentation == "eh":
        cursor.uint(address_size, "eh data")
    instructions_at = cursor.pos
    return Cie(
        offset,
        version,
        augmentation,
        code_alignment,
        data_alignment,
        ra_register,
        cursor.rest(),
        instructions_at,
        fde_encoding,
        has_data,
    )


def _read_fde(
    cursor: _Cursor, offset: int, cie: Cie, is_eh: bool, address: int, address_size: int
) -> Fde:
    if is_eh:
        encoding = cie.fde_encoding
        start = cursor.encoded(encoding, address, address_size, "FDE initial location")
        size = cursor.encoded(encoding & 0x0F, address, address_size, "FDE address range")
    else:
        start = cursor.uint(address_size, "FDE initial location")
        size = cursor.uint(address_size, "FDE address range")
    if cie.has_augmentation_data:
        length = cursor.uleb("FDE augmentation data length")
        cursor.pos += length  # the LSDA pointer, not needed here
    instructions_at = cursor.pos
    return Fde(
        offset,
        cie,
        start,
        size,
        cursor.rest(),
        instructions_at,
        cursor.section,
        cursor.source,
        cursor.endian,
        address_size,
        address,
    )


class _Cursor(Cursor):
    """The shared `Cursor` over one CFI entry (or the whole section), whose
    errors name the section and the section offset (`origin` is the section
    offset of data[0]; instruction bytes start later)."""

    __slots__ = ("endian", "origin", "section")

    def __init__(
        self,
        data: bytes,
        section: str,
        source: str | None,
        endian: str,
        pos: int = 0,
        origin: int = 0,
        end: int | None = None,
    ) -> None:
        super().__init__(data, pos, end, little=endian == "<", source=source)
        self.section = section
        self.endian = endian
        self.origin = origin

    def error(self, message: str, offset: int) -> FormatError:
        return FormatError(f"{self.section}: {message}", offset=offset, source=self.source)

    def overrun(self, what: str, at: int, size: int | None) -> FormatError:
        # A LEB128 is named where it runs out: the end of the entry.
        offset = self.origin + (self.end if size is None else at)
        return self.error(f"{what} at 0x{offset:x} runs past the end of its entry", offset)

    def cstring(self, what: str) -> str:
        nul = self.data.find(b"\0", self.pos, self.end)
        if nul < 0:
            raise self.error(f"{what} is not NUL-terminated", self.pos)
        text = self.data[self.pos : nul].decode("ascii", "replace")
        self.pos = nul + 1
        return text

    def block(self, what: str) -> bytes:
        return self.bytes(self.uleb(f"{what} length"), what)

    def encoded(self, encoding: int, address: int, address_size: int, what: str) -> int:
        """A DW_EH_PE-encoded pointer; pc-relative ones resolved against `address`.

        An indirect pointer (personality routines) gives the address of the
        pointer, and a data-relative one its raw value: neither value is needed
        here (gas writes FDE addresses absolute or pc-relative)."""
        if encoding == DW_EH_PE_omit:
            return 0
        at = self.pos
        form = _EH_PE_FORMATS.get(encoding & 0x0F)
        if form is None:
            raise self.error(f"{what}: unsupported pointer encoding 0x{encoding:02x}", at)
        size, signed = form
        if size == -1:
            value = self.sleb(what) if signed else self.uleb(what)
        else:
            size = size or address_size
            value = self.sint(size, what) if signed else self.uint(size, what)
        application = encoding & 0x70
        if application == DW_EH_PE_pcrel:
            value += address + at
        elif application not in (0, DW_EH_PE_datarel):
            raise self.error(f"{what}: unsupported pointer application 0x{application:02x}", at)
        return value & ((1 << (8 * address_size)) - 1)


@dataclass(slots=True)
class _State:
    cfa: CfaRule
    registers: dict[int, RegisterRule]
    ra_signed: bool = False
    ra_signed_with_pc: bool = False

    def copy(self) -> _State:
        return _State(self.cfa, dict(self.registers), self.ra_signed, self.ra_signed_with_pc)


class _Machine:
    """Runs a CIE's initial instructions, then an FDE's, collecting the rows."""

    def __init__(self, fde: Fde) -> None:
        self.fde = fde
        self.cie = fde.cie

    def run(self) -> list[CfiRow]:
        fde, cie = self.fde, self.cie
        state = _State(CfaRule(None), {})
        self._execute(cie.instructions, cie.instructions_offset, state, None, [])
        initial_rules = dict(state.registers)
        rows: list[CfiRow] = []
        last = self._execute(fde.instructions, fde.instructions_offset, state, initial_rules, rows)
        self._emit(rows, last, state)
        return rows

    def _emit(self, rows: list[CfiRow], pc: int, state: _State) -> None:
        row = CfiRow(pc, state.cfa, dict(state.registers), state.ra_signed, state.ra_signed_with_pc)
        if rows and rows[-1].pc == pc:
            rows[-1] = row
        elif pc < self.fde.start + self.fde.size or not rows:
            rows.append(row)

    def _execute(
        self,
        code: bytes,
        base: int,
        state: _State,
        initial: dict[int, RegisterRule] | None,
        rows: list[CfiRow],
    ) -> int:
        """Run `code` (at section offset `base`); returns the pc reached.

        `initial` is None while running the CIE's instructions: a restore
        there means "no rule", as gas writes it.
        """
        fde, cie = self.fde, self.cie
        cursor = _Cursor(code, fde.section, fde.source, fde.endian, origin=base)
        factor_code, factor_data = cie.code_alignment, cie.data_alignment
        pc = fde.start
        stack: list[_State] = []
        while cursor.pos < len(code):
            at = base + cursor.pos
            op = cursor.uint(1, "DW_CFA opcode")
            high, low = op & 0xC0, op & 0x3F
            new_pc: int | None = None
            if high == DW_CFA_advance_loc:
                new_pc = pc + low * factor_code
            elif high == DW_CFA_offset:
                self._set(
                    state, low, RegisterRule(RuleKind.OFFSET, cursor.uleb("offset") * factor_data)
                )
            elif high == DW_CFA_restore:
                self._restore(state, low, initial)
            elif op == DW_CFA_nop:
                pass
            elif op == DW_CFA_set_loc:
                new_pc = cursor.encoded(
                    cie.fde_encoding, fde.section_address + base, fde.address_size, "set_loc"
                )
            elif op == DW_CFA_advance_loc1:
                new_pc = pc + cursor.uint(1, "advance") * factor_code
            elif op == DW_CFA_advance_loc2:
                new_pc = pc + cursor.uint(2, "advance") * factor_code
            elif op == DW_CFA_advance_loc4:
                new_pc = pc + cursor.uint(4, "advance") * factor_code
            elif op == DW_CFA_MIPS_advance_loc8:
                new_pc = pc + cursor.uint(8, "advance") * factor_code
            elif op in (DW_CFA_offset_extended, DW_CFA_offset_extended_sf):
                register = cursor.uleb("register")
                raw = (
                    cursor.uleb("offset") if op == DW_CFA_offset_extended else cursor.sleb("offset")
                )
                self._set(state, register, RegisterRule(RuleKind.OFFSET, raw * factor_data))
            elif op == DW_CFA_GNU_negative_offset_extended:
                register = cursor.uleb("register")
                offset = -cursor.uleb("offset") * factor_data
                self._set(state, register, RegisterRule(RuleKind.OFFSET, offset))
            elif op in (DW_CFA_val_offset, DW_CFA_val_offset_sf):
                register = cursor.uleb("register")
                raw = cursor.uleb("offset") if op == DW_CFA_val_offset else cursor.sleb("offset")
                self._set(state, register, RegisterRule(RuleKind.VAL_OFFSET, raw * factor_data))
            elif op == DW_CFA_restore_extended:
                self._restore(state, cursor.uleb("register"), initial)
            elif op == DW_CFA_undefined:
                self._set(state, cursor.uleb("register"), RegisterRule(RuleKind.UNDEFINED))
            elif op == DW_CFA_same_value:
                self._set(state, cursor.uleb("register"), RegisterRule(RuleKind.SAME_VALUE))
            elif op == DW_CFA_register:
                register = cursor.uleb("register")
                other = cursor.uleb("register")
                self._set(state, register, RegisterRule(RuleKind.REGISTER, register=other))
            elif op in (DW_CFA_expression, DW_CFA_val_expression):
                register = cursor.uleb("register")
                kind = RuleKind.EXPRESSION if op == DW_CFA_expression else RuleKind.VAL_EXPRESSION
                self._set(
                    state, register, RegisterRule(kind, expression=cursor.block("expression"))
                )
            elif op == DW_CFA_remember_state:
                stack.append(state.copy())
            elif op == DW_CFA_restore_state:
                if not stack:
                    raise cursor.error("DW_CFA_restore_state without remember_state", at)
                saved = stack.pop()
                # the CFA rule and the RA-signing state travel with the registers' rules
                state.cfa, state.registers = saved.cfa, saved.registers
                state.ra_signed, state.ra_signed_with_pc = saved.ra_signed, saved.ra_signed_with_pc
            elif op == DW_CFA_def_cfa:
                register = cursor.uleb("register")
                state.cfa = CfaRule(register, cursor.uleb("offset"))
            elif op == DW_CFA_def_cfa_sf:
                register = cursor.uleb("register")
                state.cfa = CfaRule(register, cursor.sleb("offset") * factor_data)
            elif op == DW_CFA_def_cfa_register:
                state.cfa = CfaRule(cursor.uleb("register"), state.cfa.offset)
            elif op == DW_CFA_def_cfa_offset:
                state.cfa = CfaRule(state.cfa.register, cursor.uleb("offset"))
            elif op == DW_CFA_def_cfa_offset_sf:
                state.cfa = CfaRule(state.cfa.register, cursor.sleb("offset") * factor_data)
            elif op == DW_CFA_def_cfa_expression:
                state.cfa = CfaRule(None, 0, cursor.block("CFA expression"))
            elif op == DW_CFA_AARCH64_negate_ra_state:
                state.ra_signed = not state.ra_signed
            elif op == DW_CFA_AARCH64_negate_ra_state_with_pc:
                state.ra_signed = not state.ra_signed
                state.ra_signed_with_pc = state.ra_signed
            elif op == DW_CFA_GNU_args_size:
                cursor.uleb("argument size")  # no rule changes
            else:
                raise cursor.error(f"unknown call-frame instruction 0x{op:02x}", at)
            if new_pc is not None and initial is not None:
                if new_pc < pc:
                    raise cursor.error(f"the location moves back from 0x{pc:x} to 0x{new_pc:x}", at)
                self._emit(rows, pc, state)
                pc = new_pc
        return pc

    @staticmethod
    def _set(state: _State, register: int, rule: RegisterRule) -> None:
        state.registers[register] = rule

    @staticmethod
    def _restore(state: _State, register: int, initial: dict[int, RegisterRule] | None) -> None:
        rule = None if initial is None else initial.get(register)
        if rule is None:
            state.registers.pop(register, None)
        else:
            state.registers[register] = rule
