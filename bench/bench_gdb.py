"""The GDB plugin on a 10,000-frame recursion: SFrame unwinding vs GDB's own.

    .venv/bin/python bench/bench_gdb.py [--depth N] [--repeat K]

The program is the test fixture `dbg_main recurse N` (tests/fixtures/src),
built -g -O2 -fomit-frame-pointer -Wa,--gsframe (SFrame v1) as a PIE with a
shared library, once with .eh_frame and once with .eh_frame and
.eh_frame_hdr removed. GDB 13 stops in stop_here() at the bottom of the
recursion. Every figure is taken inside that GDB after
`gdb.invalidate_cached_frames()`, so every frame is unwound again (the
objfiles' tables already read), K times; the minimum is kept, because
this 2-core machine is shared and other work only ever adds time.

Session 1, the binary with .eh_frame and stackmark loaded, alternates
between the unwinders so both see the same machine load:
- "GDB DWARF": `stackmark unwinder off`, GDB unwinds from .eh_frame;
- "stackmark SFrame": `stackmark unwinder on --everywhere`, the SFrame
  unwinder claims every frame of the program.
Each is measured as a frame walk (`gdb.newest_frame()` then `.older()` to
the outermost frame, the work every backtrace starts with), as GDB's own
`bt` (output captured), and as `stackmark bt --markup`.

Session 2, the stripped binary: the SFrame unwinder is the only way to a
full backtrace there (GDB alone stops after two frames); its walk and
`stackmark bt --markup`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.gdb.conftest import LOADER, build_program  # noqa: E402

MEASURE = r"""
import gdb, json, time

def walk():
    count = 0
    frame = gdb.newest_frame()
    while frame is not None:
        count += 1
        frame = frame.older()
    return count

def command(text):
    return lambda: gdb.execute(text, to_string=True)

def once(action):
    gdb.invalidate_cached_frames()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start

frames = walk()
best = {}
for _ in range(REPEAT):
    for setup, label in SETUPS:
        gdb.execute(setup, to_string=True)
        for name, action in (("walk", walk), ("bt", command("bt")),
                             ("markup", command("stackmark bt --markup"))):
            seconds = once(action)
            key = label + "/" + name
            best[key] = min(best.get(key, seconds), seconds)
print("RESULTS " + json.dumps({"frames": frames, "best": best}))
"""


def measure(program: Path, depth: int, repeat: int, setups: list[tuple[str, str]]) -> dict:
    script = MEASURE.replace("REPEAT", str(repeat)).replace("SETUPS", repr(setups))
    cmd = ["gdb", "-nx", "-q", "-batch", "-ex", "set pagination off"]
    cmd += ["-ex", f"source {LOADER}", "-ex", "break stop_here", "-ex", f"run recurse {depth}"]
    cmd += ["-ex", f"python exec({script!r})", str(program)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600).stdout
    for line in out.splitlines():
        if line.startswith("RESULTS "):
            found: dict = json.loads(line[len("RESULTS ") :])
            return found
    raise RuntimeError(f"no results from gdb:\n{out}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with_cfi = build_program(strip_cfi=False).exe
    stripped = build_program(strip_cfi=True).exe
    both = measure(
        with_cfi,
        args.depth,
        args.repeat,
        [
            ("stackmark unwinder off", "GDB DWARF (.eh_frame)"),
            ("stackmark unwinder on --everywhere", "stackmark SFrame (.sframe v1)"),
        ],
    )
    alone = measure(
        stripped, args.depth, args.repeat, [("stackmark unwinder on", "stackmark SFrame, "
                                             ".eh_frame stripped")]
    )
    native = both["best"]["GDB DWARF (.eh_frame)/walk"]
    print(f"GDB 13, `dbg_main recurse {args.depth}`: best of {args.repeat} runs per figure.\n")
    print(
        "| unwinder | frames | walk, µs/frame | vs GDB DWARF | `bt`, µs/frame "
        "| `stackmark bt --markup`, µs/frame (total) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for run in (both, alone):
        frames = run["frames"]
        labels = sorted({key.split("/")[0] for key in run["best"]}, reverse=True)
        for label in labels:
            walk, bt, markup = (run["best"][f"{label}/{k}"] for k in ("walk", "bt", "markup"))
            print(
                f"| {label} | {frames} | {walk / frames * 1e6:.1f} | {walk / native:.2f}x "
                f"| {bt / frames * 1e6:.1f} | {markup / frames * 1e6:.1f} ({markup:.2f} s) |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
