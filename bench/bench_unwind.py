"""Unwinding cost per frame: a 10,000-frame recursion, from a core file.

    .venv/bin/python bench/bench_unwind.py [--depth N] [--seconds S]

tests/fixtures/src/unwind_recurse.c recurses N times (default 10,000) and
stops in `leaf`; GDB writes a core there. Two builds: -O2
-fomit-frame-pointer -Wa,--gsframe (SFrame v1 rows) and -O0 with frame
pointers and no SFrame (the frame-pointer fallback). Measured on the same
cores, in CPU time:

- stackmark, cold: open the core, find the modules, load the SFrame
  table, walk every frame (`CoreFile` + `Unwinder.unwind`);
- stackmark, warm: walk again with the same unwinder (tables cached; the
  recursion repeats one pc, so its SFrame row comes from the per-pc
  memo), and warm without that memo (an SFrame lookup for every frame,
  the cost for a backtrace of distinct pcs);
- GDB 13 (the reference), in the same run on the same core: walking
  `gdb.newest_frame().older()` to the end, the first time (it parses the
  DWARF CFI) and again after `gdb.invalidate_cached_frames()`;
- end to end, wall clock: `stackmark unwind CORE` vs `gdb -batch -ex bt`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from stackmark.unwind.core import CoreFile, CoreTarget  # noqa: E402
from stackmark.unwind.tables import SFrameTables, TableCache  # noqa: E402
from stackmark.unwind.unwinder import Unwinder  # noqa: E402
from tests.support.build import compile_program  # noqa: E402
from tests.support.unwind_cores import (  # noqa: E402
    FRAME_POINTER_FLAGS,
    SFRAME_FLAGS,
    capture_with_gdb,
)

GDB_WALK = """\
import gdb, json, time
def walk():
    count = 0
    frame = gdb.newest_frame()
    while frame is not None:
        frame.pc()
        count += 1
        frame = frame.older()
    return count
start = time.process_time(); cold_frames = walk(); cold = time.process_time() - start
warm = []
for _ in range(3):
    gdb.invalidate_cached_frames()
    start = time.process_time(); walk(); warm.append(time.process_time() - start)
print("RESULT " + json.dumps({"frames": cold_frames, "cold": cold, "warm": min(warm)}))
"""


def stackmark_costs(core: Path, seconds: float) -> tuple[int, float, float, float]:
    """(frames, cold, warm, warm without the row cache): CPU seconds, best of repeated runs."""
    cold = warm = uncached = float("inf")
    frames = 0
    deadline = time.perf_counter() + seconds
    runs = 0
    while runs < 3 or time.perf_counter() < deadline:
        start = time.process_time()
        with CoreFile(core) as opened:
            unwinder = Unwinder(CoreTarget(opened), max_frames=1_000_000)
            result = unwinder.unwind()
            cold = min(cold, time.process_time() - start)
            start = time.process_time()
            unwinder.unwind()
            warm = min(warm, time.process_time() - start)
            tables = TableCache(SFrameTables(read_memory=opened.read_memory), memoize=False)
            raw = Unwinder(CoreTarget(opened), tables, max_frames=1_000_000)
            raw.unwind()
            start = time.process_time()
            raw.unwind()
            uncached = min(uncached, time.process_time() - start)
        frames = len(result.frames)
        runs += 1
    return frames, cold, warm, uncached


def gdb_costs(program: Path, core: Path, work: Path) -> dict[str, float]:
    script = work / "walk.py"
    script.write_text(GDB_WALK)
    out = subprocess.run(
        ["gdb", "-nx", "-batch", "-ex", "set backtrace limit 0", "-x", str(script),
         str(program), str(core)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    result: dict[str, float] = json.loads(line[len("RESULT ") :])
    return result


def wall(cmd: list[str], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--depth", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    builds = {
        "SFrame (-O2 -fomit-frame-pointer --gsframe)": SFRAME_FLAGS,
        "frame pointers (-O0, no SFrame)": FRAME_POINTER_FLAGS,
    }
    print(f"Recursion of {args.depth:,} frames, unwound from a gcore core file "
          "(CPU microseconds per frame, best of repeated runs):\n")  # fmt: skip
    print("| build | frames | stackmark cold | stackmark warm | stackmark warm, no row cache "
          "| GDB 13 cold | GDB 13 warm | `stackmark unwind` (wall) "
          "| `gdb -batch -ex bt` (wall) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, flags in builds.items():
        program = compile_program("unwind_recurse", ["unwind_recurse.c"], flags=flags)
        with tempfile.TemporaryDirectory(prefix="bench-unwind-") as tmp:
            work = Path(tmp)
            capture = capture_with_gdb(program, "leaf", work, args=[str(args.depth)], timeout=600)
            frames, cold, warm, uncached = stackmark_costs(capture.core, args.seconds)
            reference = gdb_costs(program, capture.core, work)
            ours_wall = wall([sys.executable, "-m", "stackmark", "unwind", str(capture.core)])
            gdb_wall = wall(["gdb", "-nx", "-batch", "-ex", "set backtrace limit 0", "-ex", "bt",
                             str(program), str(capture.core)], repeat=1)  # fmt: skip
        us = 1e6
        print(
            f"| {label} | {frames:,} (GDB: {int(reference['frames']):,}) "
            f"| {cold / frames * us:.1f} | {warm / frames * us:.1f} | {uncached / frames * us:.1f} "
            f"| {reference['cold'] / reference['frames'] * us:.1f} "
            f"| {reference['warm'] / reference['frames'] * us:.1f} "
            f"| {ours_wall:.2f} s | {gdb_wall:.2f} s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
