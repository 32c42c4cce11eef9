"""From the frames a debugger lists to the physical frames of a backtrace.

Debuggers list one frame per function activation *including inlined
calls*; a backtrace (markup `bt`, CBF) has one entry per real stack frame.
A physical frame is a run of inline frames followed by the concrete frame
they were inlined into, and its address is the pc of the youngest member
(LLDB reports the inlined block's start for the concrete frame, so using
the concrete frame's own pc would be wrong there).

Synthetic frames (GDB tail-call frames, LLDB artificial frames) have no
stack of their own and are dropped. Addresses are return addresses (`ra`)
except for frame 0, the signal trampoline, and the frame a signal
interrupted: those hold the exact pc (`pc`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stackmark.debugger.backend import RawFrame, RawFrameKind
from stackmark.model import BacktraceFrame, FrameKind


@dataclass(frozen=True, slots=True)
class PhysicalFrame:
    """One real stack frame with the debugger's view of it.

    `members` is the inline chain as the debugger listed it, innermost
    first, the concrete frame last.
    """

    index: int
    frame: BacktraceFrame
    members: list[RawFrame] = field(default_factory=list)

    @property
    def is_signal_trampoline(self) -> bool:
        return self.members[-1].kind is RawFrameKind.SIGTRAMP


def physical_frames(raw: list[RawFrame]) -> list[PhysicalFrame]:
    """Fold inline frames into their physical frame and classify pc/ra."""
    result: list[PhysicalFrame] = []
    run: list[RawFrame] = []
    after_trampoline = False
    for frame in raw:
        if frame.kind is RawFrameKind.SYNTHETIC:
            continue
        run.append(frame)
        if frame.kind is RawFrameKind.INLINE:
            continue
        is_trampoline = frame.kind is RawFrameKind.SIGTRAMP
        precise = not result or is_trampoline or after_trampoline
        kind = FrameKind.PC if precise else FrameKind.RA
        result.append(PhysicalFrame(len(result), BacktraceFrame(kind, run[0].pc), run))
        run = []
        after_trampoline = is_trampoline
    if run:  # inline frames with no concrete frame after them (a truncated list)
        kind = FrameKind.PC if not result or after_trampoline else FrameKind.RA
        result.append(PhysicalFrame(len(result), BacktraceFrame(kind, run[0].pc), run))
    return result
