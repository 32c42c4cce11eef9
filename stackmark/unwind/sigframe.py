"""Linux signal frames: recognise the sigreturn trampoline, restore the interrupted registers.

When a handler returns, it returns into a small trampoline that calls
rt_sigreturn (glibc's `__restore_rt` on AMD64, the vDSO's
`__kernel_rt_sigreturn` on AArch64). The kernel left the interrupted
thread's registers in a `ucontext` on the stack, at a fixed distance from
the trampoline frame's SP. SFrame cannot describe that (notes/sframe.md,
1.6), so the unwinder recognises the trampoline by its instructions, as
GDB does (amd64-linux-tdep.c, aarch64-linux-tdep.c), and reads the saved
registers from the `ucontext`:

    AMD64    SP -> struct ucontext; uc_mcontext.gregs at +40, in the order
             r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
             the siginfo follows the ucontext (+304).
    AArch64  SP -> siginfo (128 bytes), then the ucontext; its sigcontext
             at +176: fault_address, then x0..x30, sp, pc.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stackmark.errors import StackmarkError
from stackmark.unwind.rules import Arch
from stackmark.unwind.target import RegisterState, Target


@dataclass(frozen=True, slots=True)
class SigreturnLayout:
    """Where one architecture keeps the interrupted registers.

    `code`: the trampoline's instructions; `entry_offsets`: where in them a
    pc may be (the start, where the handler returns to, or a later
    instruction when frame 0 stopped inside); `registers`: DWARF register
    -> offset from the trampoline frame's SP; `pc_offset` likewise for the
    pc; `signo_offset` for siginfo.si_signo.
    """

    code: bytes
    entry_offsets: tuple[int, ...]
    registers: dict[int, int]
    pc_offset: int
    signo_offset: int


_AMD64_GREGS = 40  # offsetof(struct ucontext, uc_mcontext)
# DWARF numbers in gregs order: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp
_AMD64_GREG_DWARF = (8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7)
_AARCH64_REGS = 128 + 176 + 8  # siginfo, ucontext up to uc_mcontext, fault_address

LAYOUTS: dict[Arch, SigreturnLayout] = {
    Arch.AMD64: SigreturnLayout(
        code=bytes.fromhex("48c7c00f0000000f05"),  # mov $15, %rax; syscall
        entry_offsets=(0, 7),
        registers={reg: _AMD64_GREGS + 8 * i for i, reg in enumerate(_AMD64_GREG_DWARF)},
        pc_offset=_AMD64_GREGS + 8 * 16,
        signo_offset=304,
    ),
    Arch.AARCH64: SigreturnLayout(
        code=bytes.fromhex("681180d2010000d4"),  # mov x8, #139; svc #0
        entry_offsets=(0, 4),
        registers={reg: _AARCH64_REGS + 8 * reg for reg in range(32)},  # x0..x30, sp
        pc_offset=_AARCH64_REGS + 8 * 32,
        signo_offset=0,
    ),
}


@dataclass(frozen=True, slots=True)
class SignalContext:
    """The registers of the frame a signal interrupted, and the signal."""

    registers: RegisterState
    signal: int | None


def is_sigreturn_trampoline(target: Target, arch: Arch, pc: int) -> bool:
    """True when the instructions at `pc` are the architecture's sigreturn trampoline."""
    layout = LAYOUTS.get(arch)
    if layout is None:
        return False
    for offset in layout.entry_offsets:
        try:
            code = target.read_memory(pc - offset, len(layout.code))
        except StackmarkError:
            continue
        if code == layout.code:
            return True
    return False


def interrupted_context(
    arch: Arch, sp: int, read_word: Callable[[int], int], read_int32: Callable[[int], int]
) -> SignalContext:
    """The registers saved by the kernel for the trampoline frame whose SP is
    `sp`; raises `StackmarkError` when the stack cannot be read."""
    layout = LAYOUTS[arch]
    values = {reg: read_word(sp + offset) for reg, offset in layout.registers.items()}
    pc = read_word(sp + layout.pc_offset)
    try:
        signal: int | None = read_int32(sp + layout.signo_offset)
    except StackmarkError:
        signal = None
    return SignalContext(RegisterState(pc, values), signal)
