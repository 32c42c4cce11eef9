"""Call-frame information: `.eh_frame` and `.debug_frame`, read into rows.

DWARF 5 section 6.4 ("Call Frame Information"). The entries (CIEs, FDEs,
their pointer encodings) are walked by `dwarf/cfi_entries.py`, the walk
`CfiRanges` makes too; `read_cfi` keeps each FDE with a copy of its
instructions, and `Fde.rows()` runs them.

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

from stackmark.dwarf.cfi_entries import CfiCursor, Cie, walk_fdes

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
    return [
        Fde(
            header.offset,
            header.cie,
            header.start,
            header.size,
            bytes(data[header.instructions_offset : header.end]),
            header.instructions_offset,
            section,
            source,
            endian,
            address_size,
            address,
        )
        for header in walk_fdes(
            data,
            section,
            address=address,
            endian=endian,
            address_size=address_size,
            source=source,
        )
    ]


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
        cursor = CfiCursor(code, fde.section, fde.source, fde.endian, origin=base)
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
