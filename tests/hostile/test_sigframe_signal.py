"""The signal number in "interrupted by a signal (signal N)" is shown only
when the kernel evidently wrote the siginfo: handlers installed without
SA_SIGINFO get none, and the bytes there are whatever the stack held."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from stackmark.errors import StackmarkError
from stackmark.unwind.core import CoreFile, CoreTarget
from stackmark.unwind.sigframe import LAYOUTS, trusted_signal
from stackmark.unwind.target import UnreadableMemory
from stackmark.unwind.unwinder import Unwinder
from stackmark.unwind_rules import Arch
from tests.support.build import compile_program
from tests.support.unwind_cores import FRAME_POINTER_FLAGS, capture_with_gdb

SP = 0x10000
AMD64 = LAYOUTS[Arch.AMD64]
SIGINFO = SP + AMD64.siginfo_offset
PC = 0x401234


def _signal(memory: bytearray, pc: int = PC) -> int | None:
    def read(address: int, size: int) -> bytes:
        offset = address - SP
        if not 0 <= offset <= len(memory) - size:
            raise UnreadableMemory(address, size)
        return bytes(memory[offset : offset + size])

    return trusted_signal(
        AMD64,
        SP,
        pc,
        lambda a: int.from_bytes(read(a, 8), "little"),
        lambda a: int.from_bytes(read(a, 4), "little", signed=True),
    )


def _frame(signo: int, code: int, address: int = 0, cr2: int = 0) -> bytearray:
    memory = bytearray(AMD64.siginfo_offset + 128)
    struct.pack_into("<iii4xQ", memory, AMD64.siginfo_offset, signo, 0, code, address)
    struct.pack_into("<Q", memory, AMD64.fault_address_offset, cr2)
    return memory


@pytest.mark.parametrize(
    ("memory", "expected"),
    [
        (_frame(4, 2, address=PC), 4),  # SIGILL ILL_ILLOPN at the interrupted pc
        (_frame(11, 1, address=0xDEAD0, cr2=0xDEAD0), 11),  # SIGSEGV at the saved cr2
        (_frame(10, -6), 10),  # SIGUSR1 from tgkill
        (_frame(6, 0), 6),  # SIGABRT from kill
        (_frame(4, 2, address=PC + 8), None),  # a SIGILL somewhere else: stale
        (_frame(11, 1, address=0xDEAD0, cr2=0xBEEF0), None),  # forged SIGSEGV
        (_frame(0, 0), None),  # never-used stack: zeros
        (_frame(65, 0), None),  # no such signal
        (_frame(10, 3), None),  # SIGUSR1 has no signal-specific codes
        (_frame(4, 12), None),  # past NSIGILL
        (bytearray(b"\x0b\x00\x00\x00" * ((AMD64.siginfo_offset + 128) // 4)), None),  # junk
    ],
    ids=[
        "sigill", "sigsegv", "tkill", "kill", "stale-sigill", "forged-sigsegv",
        "zeros", "out-of-range", "bad-code", "past-nsigill", "junk",
    ],
)  # fmt: skip
def test_signal_is_shown_only_for_a_kernel_written_siginfo(
    memory: bytearray, expected: int | None
) -> None:
    assert _signal(memory) == expected


def test_a_nonzero_tail_is_not_the_kernels() -> None:
    memory = _frame(10, -6)
    memory[AMD64.siginfo_offset + 100] = 1
    assert _signal(memory) is None


def test_unreadable_siginfo_raises_for_the_caller_to_drop() -> None:
    with pytest.raises(StackmarkError):
        _signal(_frame(10, -6)[: AMD64.siginfo_offset + 60])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("info", "interrupted by a signal (signal 4)"), ("junk", "interrupted by a signal"),
     ("forged", "interrupted by a signal")],
)  # fmt: skip
def test_core_of_a_handler_without_sa_siginfo(tmp_path: Path, mode: str, expected: str) -> None:
    """The fixture leaves a plausible signal number (junk) or a well-formed
    SIGSEGV siginfo (forged) where the kernel puts the SIGILL siginfo; only
    the SA_SIGINFO run (info) may name the signal."""
    program = compile_program("hostile_sigframe", ["hostile_sigframe.c"], flags=FRAME_POINTER_FLAGS)
    capture = capture_with_gdb(
        program, "leaf", tmp_path, args=[mode], pass_signals=("SIGILL", "SIGUSR1")
    )
    assert "sigtramp" in [f.type for f in capture.frames], "no signal frame: nothing tested"
    with CoreFile(capture.core) as core:
        result = Unwinder(CoreTarget(core)).unwind()
    types = [f.type for f in capture.frames]
    interrupted = capture.frames[types.index("sigtramp") + 1]
    assert interrupted.name == "faulting"
    notes = {f.frame.address: f.frame.note for f in result.frames}
    assert notes[interrupted.pc] == expected
    assert [n for n in notes.values() if n.startswith("interrupted")] == [expected]
