"""The unwinder: from the innermost frame's registers to a backtrace, caller by caller.

One step turns a frame's state (pc, known registers) into its CFA and its
caller's state:

1. The pc in a sigreturn trampoline: the caller is the interrupted frame,
   its registers read from the kernel's `ucontext` (`sigframe`).
2. A row of the stack-trace table of the module holding the pc (SFrame,
   looked up with pc - 1 for return addresses, pc itself for frame 0 and
   interrupted frames): CFA = base register + offset (dereferenced for
   flex rows), RA and FP by their rules, caller SP = CFA.
3. Otherwise the frame-pointer chain (AMD64: [rbp] = caller's rbp,
   [rbp+8] = RA, CFA = rbp+16; AArch64: the frame record at x29), noted
   in the frame as such, because it is a guess when the code does not
   keep a frame pointer.
4. Frame 0 with a pc outside every module (a call through a bad pointer):
   the RA is where the call left it (top of stack, or LR).

The walk stops at the outermost frame (an RA-undefined row, an outermost
FDE, RA 0, a zero frame pointer), on a CFA that does not grow, a repeated
frame, an RA outside the loaded code, an unreadable stack, or the depth
limit, and says which. Frame 0 and interrupted frames are `pc` frames;
callers are `ra` frames.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from stackmark.errors import StackmarkError
from stackmark.model import BacktraceFrame, FrameKind, Module
from stackmark.unwind import sigframe
from stackmark.unwind.rules import CFA, Arch, RuleKind, UnwindRow, ValueRule
from stackmark.unwind.tables import NoTable, SFrameTables, TableCache, TableLoader
from stackmark.unwind.target import (
    BYTE_ORDER,
    ModuleIndex,
    RegisterState,
    Target,
    register_name,
    word_reader,
)

DEFAULT_MAX_FRAMES = 100_000

SP_FROM_CFA = {Arch.AMD64: 0, Arch.AARCH64: 0, Arch.S390X: -160}
"""Caller's SP minus CFA (the s390x CFA sits 160 bytes above the caller's SP)."""

PAC_FALLBACK_MASK = 0xFFFF_0000_0000_0000
"""AArch64 pointer-authentication bits to clear when the target does not say
(user space with 48-bit virtual addresses, as Linux gives it)."""

# How a caller was found (notes of the frames; also `Step.method`).
BY_SFRAME = "sframe"
BY_FRAME_POINTER = "frame pointer"
BY_SIGNAL = "signal frame"
BY_CALL_SITE = "pc outside any module: assumed a call through a bad pointer"


@dataclass(frozen=True, slots=True)
class FrameState:
    """A frame as the unwinder sees it: pc and the registers known in it.

    `precise`: the pc is exact (frame 0, or interrupted by a signal), so it
    is looked up as is and the link register, if any, still holds the RA.
    """

    pc: int
    registers: Mapping[int, int]
    precise: bool = False


@dataclass(slots=True)
class Step:
    """The result of unwinding one frame.

    `cfa`: the frame's canonical frame address (None when it could not be
    computed); `method`: how the caller was (or was to be) found;
    `caller`: the caller's state, or None with `stop` saying why.
    `caller_note`: what the caller frame should say about itself.
    """

    cfa: int | None
    method: str
    caller: FrameState | None
    stop: str | None = None
    caller_note: str = ""
    module: Module | None = None  # the module holding the frame's pc


@dataclass(slots=True)
class UnwoundFrame:
    """One frame of a backtrace, with what the unwinder knew about it."""

    frame: BacktraceFrame
    state: FrameState
    module: Module | None
    cfa: int | None


@dataclass(slots=True)
class UnwindResult:
    """A backtrace, innermost frame first, and why it ended."""

    frames: list[UnwoundFrame] = field(default_factory=list)
    stop_reason: str = ""
    truncated: bool = False  # cut at the depth limit: the frames went on

    @property
    def backtrace(self) -> list[BacktraceFrame]:
        return [f.frame for f in self.frames]

    @property
    def backtrace_with_markers(self) -> list[BacktraceFrame]:
        """`backtrace`, ending with CBF's truncated marker when it was cut short."""
        marker = [BacktraceFrame(FrameKind.TRUNCATED)] if self.truncated else []
        return self.backtrace + marker


class _Stop(Exception):
    """Internal: this frame has no (usable) caller; the message says why."""


class Unwinder:
    """Walks a `Target`'s stack with per-module unwind tables.

    `tables` loads a module's table (default: `SFrameTables`, its SFrame
    data from its file or the target's memory); tables are cached per
    module for the life of the unwinder.
    """

    def __init__(
        self,
        target: Target,
        tables: TableLoader | TableCache | None = None,
        *,
        max_frames: int = DEFAULT_MAX_FRAMES,
    ):
        self.target = target
        self.arch = target.arch
        if tables is None:
            # A target may say where its files are here (a core's sysroot).
            path_map = getattr(target, "local_path", None)
            tables = SFrameTables(read_memory=target.read_memory, path_map=path_map)
        self.tables = tables if isinstance(tables, TableCache) else TableCache(tables)
        self.max_frames = max_frames
        self.modules = ModuleIndex(target.modules())
        # Register numbers and the SP adjustment, looked up once (hot path).
        self._sp, self._fp, self._ra = self.arch.sp, self.arch.fp, self.arch.ra
        self._sp_from_cfa = SP_FROM_CFA[self.arch]
        self._trampolines: dict[int, bool] = {}  # pc -> is a sigreturn trampoline
        self._why: dict[tuple[int, str], str] = {}  # (module, reason) -> fallback reason
        self._fp_methods: dict[str, str] = {}  # reason -> frame note
        self._read_word = word_reader(target)
        self._int32 = struct.Struct(BYTE_ORDER[self.arch] + "i").unpack
        mask = target.code_address_mask() if self.arch is Arch.AARCH64 else None
        self._pac_mask = PAC_FALLBACK_MASK if mask is None else mask

    # -- the walk -----------------------------------------------------------------

    def unwind(self, registers: RegisterState | None = None) -> UnwindResult:
        """The backtrace from `registers` (default: the target's innermost frame)."""
        regs = registers if registers is not None else self.target.registers()
        state = FrameState(regs.pc, regs.values, precise=True)
        result = UnwindResult()
        note = ""
        previous_cfa: int | None = None
        seen: set[tuple[int, int]] = set()
        while True:
            step = self.step(state)
            # The trampoline's address is where the handler returns to, not after a call.
            kind = FrameKind.PC if state.precise or step.method == BY_SIGNAL else FrameKind.RA
            result.frames.append(
                UnwoundFrame(
                    BacktraceFrame(kind, state.pc, note=note),
                    state,
                    step.module,
                    step.cfa,
                )
            )
            if step.caller is None:
                result.stop_reason = step.stop or "no caller"
                return result
            cfa = step.cfa
            crossing_signal = step.method == BY_SIGNAL or state.precise
            if (
                cfa is not None
                and previous_cfa is not None
                and not crossing_signal
                and cfa <= previous_cfa
            ):
                result.stop_reason = (
                    f"CFA 0x{cfa:x} does not increase (previous frame 0x{previous_cfa:x})"
                )
                return result
            if cfa is not None:
                key = (state.pc, cfa)
                if key in seen:
                    result.stop_reason = f"loop: frame at pc 0x{state.pc:x} CFA 0x{cfa:x} repeats"
                    return result
                seen.add(key)
                previous_cfa = cfa
            if len(result.frames) >= self.max_frames:
                result.stop_reason = f"depth limit of {self.max_frames} frames reached"
                result.truncated = True
                return result
            state = step.caller
            note = step.caller_note or step.method

    # -- one step ------------------------------------------------------------------

    def step(self, state: FrameState) -> Step:
        """Unwind one frame: its CFA and its caller (or why there is none)."""
        found = self.modules.find(state.pc)
        if found is None:
            return self._step_outside_modules(state)
        module, segment = found
        table = self.tables.table_for(module)
        row: UnwindRow | None = None
        if not isinstance(table, NoTable):
            lookup_pc = state.pc if state.precise else state.pc - 1
            try:
                row = table.row(lookup_pc - segment.start + segment.module_relative)
            except StackmarkError as exc:  # rows decoded on first use (a damaged FRE list)
                return Step(None, BY_SFRAME, None, f"{module.name}: {exc}", module=module)
        in_trampoline = row.signal_frame if row is not None else self._is_trampoline(state.pc)
        if in_trampoline:
            step = self._step_signal(state)
        elif row is not None:
            step = self._step_row(state, row)
        else:
            step = self._step_frame_pointer(state, self._why_no_row(module, table))
        step.module = module
        return step

    def _step_row(self, state: FrameState, row: UnwindRow) -> Step:
        try:
            cfa = self._register(state, row.cfa_register) + row.cfa_offset
            if row.cfa_deref:
                cfa = self._read_word(cfa)
        except (_Stop, StackmarkError) as exc:
            return Step(None, BY_SFRAME, None, f"cannot compute the CFA: {exc}")
        if row.outermost:
            return Step(cfa, BY_SFRAME, None, "outermost frame (SFrame)")
        if row.ra.kind is RuleKind.UNDEFINED:
            return Step(cfa, BY_SFRAME, None, "return address undefined: outermost frame")
        try:
            ra = self._value(state, row.ra, cfa, self._ra)
            if row.ra_mangled and ra is not None:
                ra = self._strip_pac(ra)
        except (_Stop, StackmarkError) as exc:
            return Step(cfa, BY_SFRAME, None, str(exc))
        try:
            fp = self._value(state, row.fp, cfa, self._fp)
        except (_Stop, StackmarkError):
            fp = None  # the caller's FP is unknown; its RA and CFA still are
        return self._caller(cfa, ra, fp, BY_SFRAME)

    def _step_frame_pointer(self, state: FrameState, why: str) -> Step:
        method = self._fp_methods.get(why)
        if method is None:
            method = self._fp_methods[why] = f"{BY_FRAME_POINTER} ({why})"
        if self.arch is Arch.S390X:
            return Step(None, method, None, f"{why}; s390x has no frame-pointer chain to follow")
        fp = state.registers.get(self._fp)
        if fp is None:
            return Step(None, method, None, f"{why}; the frame pointer is unknown")
        if fp == 0:
            return Step(None, method, None, f"{why}; frame pointer 0: outermost frame")
        cfa = fp + 16
        sp = state.registers.get(self._sp)
        if sp is not None and cfa <= sp:
            return Step(None, method, None, f"{why}; frame pointer 0x{fp:x} is below the SP")
        try:
            caller_fp = self._read_word(fp)
            ra = self._read_word(fp + 8)
        except StackmarkError as exc:
            return Step(cfa, method, None, f"{why}; frame-pointer chain unreadable: {exc}")
        if self.arch is Arch.AARCH64:
            ra = self._strip_pac(ra)
        return self._caller(cfa, ra, caller_fp, method, why)

    def _step_outside_modules(self, state: FrameState) -> Step:
        """Frame 0 at an address no module holds: unwind as if just called."""
        if not state.precise:
            return Step(None, BY_CALL_SITE, None, f"pc 0x{state.pc:x} is outside every module")
        sp = state.registers.get(self.arch.sp)
        if sp is None:
            return Step(None, BY_CALL_SITE, None, "the stack pointer is unknown")
        try:
            if self.arch is Arch.AMD64:
                cfa, ra = sp + 8, self._read_word(sp)
            elif self.arch is Arch.AARCH64 and self.arch.ra in state.registers:
                cfa, ra = sp, self._strip_pac(state.registers[self.arch.ra])
            else:
                return Step(None, BY_CALL_SITE, None, f"pc 0x{state.pc:x} is outside every module")
        except StackmarkError as exc:
            return Step(None, BY_CALL_SITE, None, str(exc))
        return self._caller(cfa, ra, state.registers.get(self.arch.fp), BY_CALL_SITE)

    def _step_signal(self, state: FrameState) -> Step:
        sp = state.registers.get(self.arch.sp)
        if sp is None:
            return Step(None, BY_SIGNAL, None, "signal frame: the stack pointer is unknown")
        try:
            context = sigframe.interrupted_context(self.arch, sp, self._read_word, self._read_int32)
        except StackmarkError as exc:
            return Step(sp, BY_SIGNAL, None, f"signal frame unreadable: {exc}")
        regs = context.registers
        signal = f" (signal {context.signal})" if context.signal else ""
        caller = FrameState(regs.pc, regs.values, precise=True)
        return Step(sp, BY_SIGNAL, caller, caller_note=f"interrupted by a signal{signal}")

    # -- helpers -------------------------------------------------------------------

    def _caller(
        self, cfa: int, ra: int | None, fp: int | None, method: str, guess: str = ""
    ) -> Step:
        """The caller at return address `ra`. `guess` is set when the frame-pointer chain
        gave `ra` (why there was no table): then a stop says so, since a frame that does
        not keep the chain (most of a libc without .sframe) ends it with junk, not at
        the outermost frame."""
        if ra is None:
            return Step(cfa, method, None, "return address unknown")
        if ra == 0:
            if guess:
                return Step(
                    cfa, method, None, f"{guess}; the frame-pointer chain gave return address 0"
                )
            return Step(cfa, method, None, "return address 0: outermost frame")
        if not self.modules.is_code(ra):
            if guess:
                why = f"{guess}; the frame-pointer chain gave return address 0x{ra:x}, "
                return Step(cfa, method, None, why + "outside the loaded code")
            return Step(cfa, method, None, f"return address 0x{ra:x} is outside the loaded code")
        registers = {self._sp: cfa + self._sp_from_cfa}
        if fp is not None:
            registers[self._fp] = fp
        return Step(cfa, method, FrameState(ra, registers))

    def _register(self, state: FrameState, number: int) -> int:
        value = state.registers.get(number)
        if value is None:
            raise _Stop(f"register {register_name(self.arch, number)} is not known in this frame")
        return value

    def _value(self, state: FrameState, rule: ValueRule, cfa: int, register: int) -> int | None:
        """A caller register by its rule; None when it is simply not known."""
        if rule.kind is RuleKind.SAME:
            value = state.registers.get(register)
            if value is None and register == self._ra:
                raise _Stop(
                    f"the return address is in {register_name(self.arch, register)}, "
                    "which is only known in the innermost or an interrupted frame"
                )
            return value
        if rule.kind is RuleKind.UNDEFINED:
            return None
        base = cfa if rule.base == CFA else self._register(state, rule.base)
        if rule.kind is RuleKind.AT:
            return self._read_word(base + rule.offset)
        return base + rule.offset

    def _strip_pac(self, address: int) -> int:
        return address & ~self._pac_mask

    def _read_int32(self, address: int) -> int:
        value: int = self._int32(self.target.read_memory(address, 4))[0]
        return value

    def _why_no_row(self, module: Module, table: object) -> str:
        """Why a module's frame falls back to the frame pointer (one string per module)."""
        reason = table.reason if isinstance(table, NoTable) else ""
        key = (id(module), reason)
        why = self._why.get(key)
        if why is None:
            why = self._why[key] = (
                f"{module.name}: {reason}"
                if reason
                else f"no SFrame entry covers the pc in {module.name}"
            )
        return why

    def _is_trampoline(self, pc: int) -> bool:
        known = self._trampolines.get(pc)
        if known is None:
            if len(self._trampolines) >= 1 << 16:
                self._trampolines.clear()
            known = self._trampolines[pc] = sigframe.is_sigreturn_trampoline(
                self.target, self.arch, pc
            )
        return known


def unwind(target: Target, tables: TableLoader | None = None, **options: int) -> UnwindResult:
    """Convenience: the backtrace of `target`'s innermost frame."""
    return Unwinder(target, tables, **options).unwind()
