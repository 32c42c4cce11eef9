"""CBF: encode and decode speed, and size against raw 8-byte addresses, on real backtraces.

    .venv/bin/python bench/bench_cbf.py [--seconds S]

The backtraces are GDB's own (walking `gdb.newest_frame().older()`) at a
breakpoint in real programs, so their addresses are what CBF meets in
practice: python3 writing to stdout (python3, libpython, libc), python3
importing a module (deeper), our two-module unwind_chain fixture, and a
10,000-frame self-recursion (one return address repeated: `rep`).

Speed is measured on one long backtrace made of the real ones back to back
(~100,000 frames; runs only inside each original), so that per-call
overhead does not count. Swift's own encoder cannot run here (no Swift
toolchain on Debian 12), so the baseline in the same run is packing and
unpacking raw 8-byte little-endian addresses with `array`, the cheapest
form a Python program could store them in.
"""

from __future__ import annotations

import argparse
import array
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from stackmark.formats import cbf  # noqa: E402
from stackmark.model import BacktraceFrame, FrameKind  # noqa: E402
from tests.support.build import compile_program  # noqa: E402
from tests.support.unwind_cores import (  # noqa: E402
    SFRAME_FLAGS,
    GdbFrame,
    build_chain,
    capture_with_gdb,
)

PYTHON = "/usr/bin/python3"


def gdb_backtraces(work: Path) -> dict[str, list[BacktraceFrame]]:
    """name -> frames (frame 0 pc, callers ra), from GDB at real stops."""
    recurse = compile_program("unwind_recurse", ["unwind_recurse.c"], flags=SFRAME_FLAGS)
    stops: dict[str, tuple[Path, str, list[str]]] = {
        "python3 print (write)": (Path(PYTHON), "write", ["-c", "print('hello')"]),
        "python3 import (read)": (Path(PYTHON), "read", ["-S", "-c", "import json"]),
        "unwind_chain (leaf)": (build_chain(SFRAME_FLAGS), "leaf", []),
        "10,000-frame recursion": (recurse, "leaf", ["10000"]),
    }
    traces = {}
    for i, (name, (program, stop, args)) in enumerate(stops.items()):
        capture = capture_with_gdb(program, stop, work, args=args, name=f"t{i}")
        capture.core.unlink()
        traces[name] = to_frames(capture.frames)
    return traces


def to_frames(frames: list[GdbFrame]) -> list[BacktraceFrame]:
    concrete = [f for f in frames if f.type not in ("inline", "tailcall")]
    return [
        BacktraceFrame(FrameKind.PC if i == 0 else FrameKind.RA, f.pc)
        for i, f in enumerate(concrete)
    ]


def best_rate(count: int, work: Callable[[], object], seconds: float) -> float:
    """Frames per CPU second: the best of repeated runs for about `seconds`.

    CPU time of this process, not wall time: on a shared machine the wall
    clock also counts the time spent waiting for a core."""
    best = float("inf")
    deadline = time.perf_counter() + seconds
    runs = 0
    while runs < 3 or time.perf_counter() < deadline:
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
        runs += 1
    return count / best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cbf-") as tmp:
        traces = gdb_backtraces(Path(tmp))

    print("Size of real backtraces (GDB's frames at a breakpoint):\n")
    print("| backtrace | frames | raw 8-byte | CBF bytes | CBF bytes/frame | CBF / raw |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, frames in traces.items():
        data = cbf.encode(frames)
        assert cbf.decode(data).frames == frames
        raw = 8 * len(frames)
        print(
            f"| {name} | {len(frames)} | {raw} | {len(data)} | {len(data) / len(frames):.2f} "
            f"| {100 * len(data) / raw:.1f}% |"
        )

    distinct = [f for name, frames in traces.items() if "recursion" not in name for f in frames]
    long_trace = (distinct * (100_000 // len(distinct) + 1))[:100_000]
    recursion = traces["10,000-frame recursion"]
    print("\nSpeed (best of repeated runs), frames per CPU second:\n")
    print("| input | frames | CBF bytes | encode | decode | decode + BacktraceFrame objects "
          "| baseline: pack 8-byte | baseline: unpack 8-byte |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, frames in (("real backtraces, back to back", long_trace),
                         ("10,000-frame recursion", recursion)):  # fmt: skip
        data = cbf.encode(frames)
        addresses = [f.address for f in frames]
        packed = array.array("Q", addresses).tobytes()
        encode = best_rate(len(frames), lambda fr=frames: cbf.encode(fr), args.seconds)
        decode = best_rate(len(frames), lambda d=data: cbf.decode(d), args.seconds)
        objects = best_rate(len(frames), lambda d=data: cbf.decode(d).frames, args.seconds)
        pack = best_rate(
            len(frames), lambda a=addresses: array.array("Q", a).tobytes(), args.seconds
        )
        unpack = best_rate(len(frames), lambda p=packed: array.array("Q", p).tolist(), args.seconds)
        print(
            f"| {name} | {len(frames):,} | {len(data):,} | {encode:,.0f} | {decode:,.0f} "
            f"| {objects:,.0f} | {pack:,.0f} | {unpack:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
