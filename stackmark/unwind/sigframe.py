"""Linux signal frames: recognise the sigreturn trampoline, restore the interrupted registers.

When a handler returns, it returns into a small trampoline that calls
rt_sigreturn (glibc's `__restore_rt` on AMD64, the vDSO's
`__kernel_rt_sigreturn` on AArch64). The kernel left the interrupted
thread's registers in a `ucontext` on the stack, at a fixed distance from
the trampoline frame's SP. SFrame cannot describe that (a row gives a few
offsets from the CFA, not a saved register set), so the unwinder recognises the trampoline by its
instructions, as GDB does (amd64-linux-tdep.c, aarch64-linux-tdep.c), and reads the saved
registers from the `ucontext`:

    AMD64    SP -> struct ucontext; uc_mcontext.gregs at +40, in the order
             r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
             the siginfo follows the ucontext (+304).
    AArch64  SP -> siginfo (128 bytes), then the ucontext; its sigcontext
             at +176: fault_address, then x0..x30, sp, pc.

The kernel writes the siginfo only for handlers installed with SA_SIGINFO;
otherwise those 128 bytes are whatever the stack held (junk, or an older
siginfo). Nothing in the frame records the flag, so the signal number is
reported only when the bytes have the shape the kernel gives every siginfo
it writes (`trusted_signal`), and None otherwise. What remains possible: an
earlier SA_SIGINFO delivery to exactly the same stack address, for a signal
sent by a process (kill, raise), leaves a siginfo that passes these checks.
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
    pc; `siginfo_offset` for the siginfo; `fault_address_offset` for the
    faulting data address the kernel saved with the registers (cr2 on
    AMD64, fault_address on AArch64).
    """

    code: bytes
    entry_offsets: tuple[int, ...]
    registers: dict[int, int]
    pc_offset: int
    siginfo_offset: int
    fault_address_offset: int


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
        siginfo_offset=304,
        fault_address_offset=_AMD64_GREGS + 8 * 22,  # gregs[REG_CR2]
    ),
    Arch.AARCH64: SigreturnLayout(
        code=bytes.fromhex("681180d2010000d4"),  # mov x8, #139; svc #0
        entry_offsets=(0, 4),
        registers={reg: _AARCH64_REGS + 8 * reg for reg in range(32)},  # x0..x30, sp
        pc_offset=_AARCH64_REGS + 8 * 32,
        siginfo_offset=0,
        fault_address_offset=_AARCH64_REGS - 8,
    ),
}


@dataclass(frozen=True, slots=True)
class SignalContext:
    """The registers of the frame a signal interrupted, and the signal
    (None unless the kernel evidently wrote the siginfo)."""

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
        signal = trusted_signal(layout, sp, pc, read_word, read_int32)
    except StackmarkError:
        signal = None
    return SignalContext(RegisterState(pc, values), signal)


# Signal numbers shared by AMD64 and AArch64 Linux.
_SIGILL, _SIGTRAP, _SIGBUS, _SIGFPE, _SIGSEGV = 4, 5, 7, 8, 11
_SIGCHLD, _SIGIO, _SIGSYS = 17, 29, 31
_NSIG = 64
# si_code values of signals sent by a process or a kernel facility, for any signal:
# SI_USER, SI_KERNEL, SI_QUEUE, SI_TIMER, SI_MESGQ, SI_ASYNCIO, SI_SIGIO, SI_TKILL,
# SI_DETHREAD, SI_ASYNCNL.
_SENDER_CODES = frozenset((0, 0x80, -1, -2, -3, -4, -5, -6, -7, -60))
# The highest signal-specific si_code (NSIGILL, NSIGFPE, ...); the others have none.
_SPECIFIC_CODES = {
    _SIGILL: 11, _SIGFPE: 15, _SIGSEGV: 10, _SIGBUS: 5, _SIGTRAP: 6,
    _SIGCHLD: 6, _SIGIO: 6, _SIGSYS: 1,
}  # fmt: skip
# copy_siginfo_to_user writes the 48-byte kernel_siginfo and clears the rest.
_KERNEL_SIGINFO_SIZE, _SIGINFO_SIZE = 48, 128
_SI_ADDR = 16
_UNTAGGED = (1 << 56) - 1  # AArch64 may keep a tag in the top byte of one of the two


def trusted_signal(
    layout: SigreturnLayout,
    sp: int,
    pc: int,
    read_word: Callable[[int], int],
    read_int32: Callable[[int], int],
) -> int | None:
    """si_signo of the trampoline frame's siginfo, or None when the kernel
    evidently did not write it: a signal number in range, an si_code the
    kernel uses for that signal, the kernel's zeroed tail, and for a fault,
    the address it names agreeing with the interrupted registers (SIGILL and
    SIGFPE: the pc; SIGSEGV and SIGBUS: the saved fault address)."""
    base = sp + layout.siginfo_offset
    signo = read_int32(base)
    if not 1 <= signo <= _NSIG:
        return None
    if any(read_word(base + at) for at in range(_KERNEL_SIGINFO_SIZE, _SIGINFO_SIZE, 8)):
        return None
    code = read_int32(base + 8)
    if code in _SENDER_CODES:
        return signo
    if not 1 <= code <= _SPECIFIC_CODES.get(signo, 0):
        return None
    if signo in (_SIGILL, _SIGFPE):
        expected = pc
    elif signo in (_SIGSEGV, _SIGBUS):
        expected = read_word(sp + layout.fault_address_offset)
    else:
        return signo
    return signo if (read_word(base + _SI_ADDR) ^ expected) & _UNTAGGED == 0 else None
