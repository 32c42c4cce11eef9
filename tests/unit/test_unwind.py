"""The unwinder's rules on hand-built stacks: each test lays out memory and
unwind rows the way a compiler would, and says which frames must come out
and why the walk must stop. (Real programs against GDB: tests/integration.)"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest

from stackmark.model import FrameKind, Module, Segment
from stackmark.unwind.tables import NoTable, UnwindTable
from stackmark.unwind.target import RegisterState, UnreadableMemory
from stackmark.unwind.unwinder import BY_CALL_SITE, BY_FRAME_POINTER, BY_SFRAME, Unwinder
from stackmark.unwind_rules import Arch, RuleKind, UnwindRow, ValueRule

RSP, RBP = Arch.AMD64.sp, Arch.AMD64.fp
SP64, X29, X30 = Arch.AARCH64.sp, Arch.AARCH64.fp, Arch.AARCH64.ra


class FakeTarget:
    """Registers, sparse memory (8-byte words and code bytes) and modules."""

    def __init__(
        self,
        arch: Arch,
        pc: int,
        registers: dict[int, int],
        words: dict[int, int],
        modules: Sequence[Module],
        *,
        code: dict[int, bytes] | None = None,
        int32: dict[int, int] | None = None,
        mask: int | None = None,
    ):
        self.arch = arch
        self._registers = RegisterState(pc, registers)
        self.words = words
        self.code = code or {}
        self.int32 = int32 or {}
        self._modules = list(modules)
        self.mask = mask
        self.reads = 0

    def registers(self) -> RegisterState:
        return self._registers

    def read_memory(self, address: int, size: int) -> bytes:
        self.reads += 1
        if size == 8 and address in self.words:
            return struct.pack("<Q", self.words[address])
        if size == 4 and address in self.int32:
            return struct.pack("<i", self.int32[address])
        for start, blob in self.code.items():
            if start <= address and address + size <= start + len(blob):
                return blob[address - start : address - start + size]
        raise UnreadableMemory(address, size)

    def modules(self) -> Sequence[Module]:
        return self._modules

    def code_address_mask(self) -> int | None:
        return self.mask


class Rows:
    """An unwind table from a list of rows."""

    def __init__(self, rows: list[UnwindRow]):
        self.rows = rows

    def row(self, pc: int) -> UnwindRow | None:
        return next((r for r in self.rows if r.start <= pc < r.end), None)


def module(name: str, start: int, size: int = 0x1000, mode: str = "rx") -> Module:
    """A module whose module-relative addresses equal its runtime ones."""
    return Module(0, name, "", [Segment(start, size, mode, start)])


def amd64_row(start: int, end: int, cfa_offset: int, fp_at: int | None = None, *,
              base: int = RSP) -> UnwindRow:  # fmt: skip
    fp = ValueRule.at_cfa(fp_at) if fp_at is not None else ValueRule.same()
    return UnwindRow(start, end, base, cfa_offset, ValueRule.at_cfa(-8), fp)


APP = module("app", 0x1000)
LIB = module("lib", 0x5000)  # no unwind table


def loader(tables: dict[str, list[UnwindRow]]):  # type: ignore[no-untyped-def]
    def load(mod: Module) -> UnwindTable | NoTable:
        rows = tables.get(mod.name)
        return Rows(rows) if rows is not None else NoTable("no table here")

    return load


def addresses(result) -> list[int]:  # type: ignore[no-untyped-def]
    return [f.frame.address for f in result.frames]


# -- SFrame rows ------------------------------------------------------------------


F0 = amd64_row(0x1100, 0x1200, 8)  # leaf: CFA = rsp + 8
F1 = amd64_row(0x1200, 0x1300, 16, fp_at=-16)  # pushes rbp: CFA = rsp + 16, rbp at CFA-16
F2 = amd64_row(0x1300, 0x1400, 32)


def test_rows_give_cfa_ra_and_fp_caller_by_caller() -> None:
    words = {0x7000: 0x1250, 0x7008: 0xBEEF, 0x7010: 0x1350, 0x7018: 0, 0x7030: 0}
    # frame 0 at 0x1150: CFA 0x7008, RA [0x7000] = 0x1250
    # frame 1 at 0x1250: CFA 0x7018, RA [0x7010] = 0x1350, rbp [0x7008] = 0xbeef
    # frame 2 at 0x1350: CFA 0x7038, RA [0x7030] = 0: outermost
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000, RBP: 1}, words, [APP])
    result = Unwinder(target, loader({"app": [F0, F1, F2]})).unwind()
    assert addresses(result) == [0x1150, 0x1250, 0x1350]
    assert [f.frame.kind for f in result.frames] == [FrameKind.PC, FrameKind.RA, FrameKind.RA]
    assert [f.cfa for f in result.frames] == [0x7008, 0x7018, 0x7038]
    assert [f.frame.note for f in result.frames] == ["", BY_SFRAME, BY_SFRAME]
    assert result.frames[2].state.registers[RBP] == 0xBEEF
    assert result.stop_reason == "return address 0: outermost frame"


def test_return_addresses_are_looked_up_at_pc_minus_one() -> None:
    """A call that never returns ends its function: its RA is the next
    function's first byte, which must still unwind as the caller."""
    words = {0x7000: 0x1300, 0x7010: 0x1234, 0x7018: 0}
    # RA 0x1300 is F2's start; the caller really is F1's code (0x12ff), CFA rsp+16.
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP])
    result = Unwinder(target, loader({"app": [F0, F1, F2]})).unwind()
    assert addresses(result)[:3] == [0x1150, 0x1300, 0x1234]
    assert result.frames[1].cfa == 0x7018  # F1's rule, not F2's (which would say 0x7028)


def test_frame_zero_is_looked_up_at_its_pc() -> None:
    target = FakeTarget(Arch.AMD64, 0x1200, {RSP: 0x7000}, {0x7008: 0x1150, 0x7100: 0}, [APP])
    result = Unwinder(target, loader({"app": [F0, F1]})).unwind()
    assert result.frames[0].cfa == 0x7010  # F1 (starts at 0x1200), not F0


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (UnwindRow(0x1100, 0x1200, RSP, 8, ValueRule.undefined(), ValueRule.same()),
         "return address undefined: outermost frame"),
        (UnwindRow(0x1100, 0x1200, RSP, 0, ValueRule.undefined(), ValueRule.same(), outermost=True),
         "outermost frame (SFrame)"),
    ],
)  # fmt: skip
def test_outermost_rows_stop(row: UnwindRow, reason: str) -> None:
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, {}, [APP])
    result = Unwinder(target, loader({"app": [row]})).unwind()
    assert addresses(result) == [0x1150]
    assert result.stop_reason == reason
    assert not result.truncated  # the stack ended: nothing was cut


def test_a_cfa_that_does_not_grow_stops() -> None:
    shrinking = amd64_row(0x1200, 0x1300, -32)
    words = {0x7000: 0x1250, 0x6FE0: 0x1150}
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP])
    result = Unwinder(target, loader({"app": [F0, shrinking]})).unwind()
    assert addresses(result) == [0x1150, 0x1250]
    assert result.stop_reason == "CFA 0x6fe8 does not increase (previous frame 0x7008)"


def test_an_unreadable_stack_stops_with_the_address() -> None:
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, {}, [APP])
    result = Unwinder(target, loader({"app": [F0]})).unwind()
    assert addresses(result) == [0x1150]
    assert result.stop_reason == "cannot read memory at 0x7000 (8 bytes)"


def test_a_return_address_outside_the_code_stops() -> None:
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, {0x7000: 0x9999}, [APP])
    result = Unwinder(target, loader({"app": [F0]})).unwind()
    assert addresses(result) == [0x1150]
    assert result.stop_reason == "return address 0x9999 is outside the loaded code"


def test_depth_limit() -> None:
    recursion = amd64_row(0x1100, 0x1200, 16)  # each frame: 16 bytes, RA = 0x1180
    words = {0x7008 + 16 * i: 0x1180 for i in range(100)}
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP])
    result = Unwinder(target, loader({"app": [recursion]}), max_frames=25).unwind()
    assert addresses(result) == [0x1150] + [0x1180] * 24
    assert result.stop_reason == "depth limit of 25 frames reached"
    assert result.truncated and result.backtrace_with_markers[-1].kind is FrameKind.TRUNCATED
    assert len(result.backtrace_with_markers) == 26


def test_a_register_the_row_needs_must_be_known() -> None:
    """DRAP-style rows (CFA from r10) only work where r10 is known: frame 0."""
    drap = UnwindRow(0x1200, 0x1300, 10, 0, ValueRule.at_cfa(-8), ValueRule.same())
    words = {0x7000: 0x1250, 0x7008: 0x1250}
    target = FakeTarget(Arch.AMD64, 0x1250, {RSP: 0x7000, 10: 0x7010}, words, [APP])
    result = Unwinder(target, loader({"app": [drap]})).unwind()
    assert addresses(result) == [0x1250, 0x1250]
    assert result.frames[0].cfa == 0x7010
    assert result.stop_reason == "cannot compute the CFA: register r10 is not known in this frame"


def test_dereferenced_cfa() -> None:
    """v3 flex rows: CFA = *(rbp - 8)."""
    row = UnwindRow(0x1100, 0x1200, RBP, -8, ValueRule.at_cfa(-8), ValueRule(RuleKind.AT, RBP, 0),
                    cfa_deref=True)  # fmt: skip
    words = {0x6FF8: 0x7100, 0x70F8: 0x1150, 0x7000: 0x8000}
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x6000, RBP: 0x7000}, words, [APP])
    result = Unwinder(target, loader({"app": [row, F1]})).unwind()
    assert result.frames[0].cfa == 0x7100
    assert result.frames[1].state.registers == {RSP: 0x7100, RBP: 0x8000}


# -- frame-pointer fallback ------------------------------------------------------------


def test_frame_pointer_chain_where_a_module_has_no_table() -> None:
    words = {
        0x7100: 0x7200, 0x7108: 0x5300,  # frame 0 (lib): saved rbp, RA
        0x7200: 0x7300, 0x7208: 0x5400,  # frame 1 (lib)
        0x7300: 0, 0x7308: 0x5500,  # frame 2 (lib): rbp 0 follows
    }  # fmt: skip
    target = FakeTarget(Arch.AMD64, 0x5100, {RSP: 0x7000, RBP: 0x7100}, words, [APP, LIB])
    result = Unwinder(target, loader({"app": []})).unwind()
    assert addresses(result) == [0x5100, 0x5300, 0x5400, 0x5500]
    assert [f.cfa for f in result.frames[:3]] == [0x7110, 0x7210, 0x7310]
    assert result.frames[1].frame.note == f"{BY_FRAME_POINTER} (lib: no table here)"
    assert result.stop_reason == "lib: no table here; frame pointer 0: outermost frame"


@pytest.mark.parametrize(
    ("ra", "reason"),
    [
        (0, "lib: no table here; the frame-pointer chain gave return address 0"),
        (0x9999, "lib: no table here; the frame-pointer chain gave return address 0x9999, "
                 "outside the loaded code"),
    ],
)  # fmt: skip
def test_a_frame_pointer_chain_that_ends_in_junk_says_it_was_a_guess(ra: int, reason: str) -> None:
    """A libc without tables: a frame that does not keep the chain leaves a saved RA of 0
    or garbage. That is the chain's guess failing, not the outermost frame."""
    words = {0x7100: 0x7200, 0x7108: ra}
    target = FakeTarget(Arch.AMD64, 0x5100, {RSP: 0x7000, RBP: 0x7100}, words, [APP, LIB])
    result = Unwinder(target, loader({"app": []})).unwind()
    assert addresses(result) == [0x5100]
    assert result.stop_reason == reason


def test_frame_pointer_fallback_where_no_row_covers_the_pc() -> None:
    words = {0x7100: 0, 0x7108: 0x1150}
    target = FakeTarget(Arch.AMD64, 0x1900, {RSP: 0x7000, RBP: 0x7100}, words, [APP])
    result = Unwinder(target, loader({"app": [F0]})).unwind()
    assert addresses(result)[:2] == [0x1900, 0x1150]
    assert (
        result.frames[1].frame.note == f"{BY_FRAME_POINTER} (no SFrame entry covers the pc in app)"
    )


def test_a_frame_pointer_below_the_stack_pointer_is_not_followed() -> None:
    target = FakeTarget(Arch.AMD64, 0x5100, {RSP: 0x7000, RBP: 0x10}, {}, [LIB])
    result = Unwinder(target, loader({})).unwind()
    assert addresses(result) == [0x5100]
    assert "frame pointer 0x10 is below the SP" in result.stop_reason


def test_frame_zero_outside_every_module_was_called() -> None:
    """A call through a null pointer: pc 0, the RA on top of the stack."""
    words = {0x7000: 0x1150, 0x7008: 0}
    target = FakeTarget(Arch.AMD64, 0, {RSP: 0x7000}, words, [APP])
    result = Unwinder(target, loader({"app": [F0]})).unwind()
    assert addresses(result) == [0, 0x1150]
    assert result.frames[0].cfa == 0x7008
    assert result.frames[1].frame.note == BY_CALL_SITE


# -- signal frames -----------------------------------------------------------------------


SIGRETURN = bytes.fromhex("48c7c00f0000000f05")


def kernel_siginfo(siginfo: int, cr2: int, fault_address: int) -> dict[int, int]:
    """Words of a siginfo as the kernel writes it (si_addr, zeroed tail) and the saved cr2."""
    words = {siginfo + at: 0 for at in range(48, 128, 8)}
    words[siginfo + 16] = fault_address
    words[cr2] = fault_address
    return words


def test_amd64_signal_frame_restores_the_interrupted_registers() -> None:
    # handler at 0x1150 (F0): RA [0x7000] = 0x5200, the trampoline in lib.
    # Trampoline frame: SP = 0x7008 -> ucontext; gregs at +40: rbp +120, rsp +160, rip +168.
    # Interrupted frame at 0x1260 (F1) with rsp 0x8000, then its caller 0x1350, then 0.
    uc = 0x7008
    words = {0x7000: 0x5200, uc + 120: 0xAAAA, uc + 160: 0x8000, uc + 168: 0x1260,
             0x8008: 0x1350, 0x8000: 0xBBBB, 0x8030: 0}  # fmt: skip
    for offset in range(40, 40 + 8 * 17, 8):
        words.setdefault(uc + offset, 0)
    words.update(kernel_siginfo(uc + 304, uc + 216, fault_address=0xDEAD0))
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP, LIB],
                        code={0x5200: SIGRETURN}, int32={uc + 304: 11, uc + 312: 1})  # fmt: skip
    result = Unwinder(target, loader({"app": [F0, F1, F2]})).unwind()
    assert addresses(result) == [0x1150, 0x5200, 0x1260, 0x1350]
    kinds = [f.frame.kind for f in result.frames]
    assert kinds == [FrameKind.PC, FrameKind.PC, FrameKind.PC, FrameKind.RA]
    assert result.frames[2].frame.note == "interrupted by a signal (signal 11)"
    assert result.frames[2].state.registers[RBP] == 0xAAAA
    assert result.frames[2].cfa == 0x8010  # looked up at 0x1260 itself (F1), not 0x125f
    assert result.frames[1].cfa == uc


# -- AArch64 -----------------------------------------------------------------------------


def a64_row(start: int, end: int, cfa_offset: int, ra: ValueRule, fp: ValueRule,
            mangled: bool = False, base: int = SP64) -> UnwindRow:  # fmt: skip
    return UnwindRow(start, end, base, cfa_offset, ra, fp, ra_mangled=mangled)


def signed(address: int) -> int:
    """A code address with a pointer-authentication code in bits 48-55."""
    return address | 0x0041_0000_0000_0000


@pytest.mark.parametrize("mask", [None, 0x00FF_0000_0000_0000], ids=["default mask", "core's mask"])
def test_aarch64_pac_signed_return_addresses_are_stripped(mask: int | None) -> None:
    leaf = a64_row(0x1100, 0x1200, 0, ValueRule.same(), ValueRule.same(), mangled=True)
    mid = a64_row(0x1200, 0x1300, 32, ValueRule.at_cfa(-24), ValueRule.at_cfa(-32), mangled=True)
    outer = a64_row(0x1300, 0x1400, 16, ValueRule.undefined(), ValueRule.same())
    # frame 0: RA in LR (signed); frame 1: CFA = 0x7000 + 32, RA at 0x7008 (signed).
    words = {0x7008: signed(0x1350), 0x7000: 0x9000}
    registers = {SP64: 0x7000, X29: 0x7000, X30: signed(0x1250)}
    target = FakeTarget(Arch.AARCH64, 0x1150, registers, words, [APP], mask=mask)
    result = Unwinder(target, loader({"app": [leaf, mid, outer]})).unwind()
    assert addresses(result) == [0x1150, 0x1250, 0x1350]
    assert result.frames[2].state.registers[X29] == 0x9000
    assert result.stop_reason == "return address undefined: outermost frame"


def test_aarch64_link_register_is_only_known_in_frame_zero() -> None:
    leaf = a64_row(0x1100, 0x1300, 0, ValueRule.same(), ValueRule.same())
    target = FakeTarget(Arch.AARCH64, 0x1150, {SP64: 0x7000, X30: 0x1250}, {}, [APP])
    result = Unwinder(target, loader({"app": [leaf]})).unwind()
    assert addresses(result) == [0x1150, 0x1250]
    assert "only known in the innermost or an interrupted frame" in result.stop_reason


def test_aarch64_frame_records_with_pac_bits() -> None:
    words = {0x7100: 0x7200, 0x7108: 0x0012_0000_0000_5300, 0x7200: 0, 0x7208: 0x5400}
    target = FakeTarget(Arch.AARCH64, 0x5100, {SP64: 0x7000, X29: 0x7100}, words, [LIB])
    result = Unwinder(target, loader({})).unwind()
    assert addresses(result) == [0x5100, 0x5300, 0x5400]


def test_tables_are_loaded_once_per_module() -> None:
    calls: list[str] = []
    recursion = amd64_row(0x1100, 0x1200, 16)
    words = {0x7008 + 16 * i: 0x1180 for i in range(30)}
    words[0x7008 + 16 * 30] = 0

    def load(mod: Module) -> UnwindTable | NoTable:
        calls.append(mod.name)
        return Rows([recursion])

    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP])
    result = Unwinder(target, load).unwind()
    assert len(result.frames) == 31
    assert calls == ["app"]


def test_a_repeated_frame_is_a_loop() -> None:
    """A signal context that leads back to the handler's own frame (damaged
    stack): the CFA check does not apply across a signal frame, the loop check does."""
    uc = 0x7008
    words = {0x7000: 0x5200, uc + 160: 0x7000, uc + 168: 0x1150}
    for offset in range(40, 40 + 8 * 17, 8):
        words.setdefault(uc + offset, 0)
    target = FakeTarget(Arch.AMD64, 0x1150, {RSP: 0x7000}, words, [APP, LIB],
                        code={0x5200: SIGRETURN})  # fmt: skip
    result = Unwinder(target, loader({"app": [F0]})).unwind()
    assert addresses(result) == [0x1150, 0x5200, 0x1150]
    assert result.stop_reason == "loop: frame at pc 0x1150 CFA 0x7008 repeats"
