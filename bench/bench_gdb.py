"""The GDB plugin on a 10,000-frame recursion: SFrame unwinding vs GDB's own.

    .venv/bin/python bench/bench_gdb.py [--depth N] [--repeat K] [--sessions S]

The program is the test fixture `dbg_main recurse N` (tests/fixtures/src),
built -g -O2 -fomit-frame-pointer -Wa,--gsframe (SFrame v1) as a PIE with a
shared library, once with .eh_frame and once with .eh_frame and
.eh_frame_hdr removed. GDB 13 stops in stop_here() at the bottom of the
recursion. The configurations, each its own GDB session:

- GDB DWARF: the binary with .eh_frame and no plugin: GDB unwinds with its
  DWARF CFI unwinder (the reference);
- stackmark SFrame replacing GDB DWARF: the same binary with
  `stackmark unwinder on --everywhere`: the SFrame unwinder claims every
  frame of the program although GDB could unwind it;
- stackmark SFrame (.eh_frame stripped): the plugin's default on the
  stripped binary, where GDB alone stops after two frames.

For scale, GDB with the plugin loaded on the binary with .eh_frame, where
the unwinder has nothing to do and stays unregistered (what loading
stackmark costs a session that does not need it).

Each figure is taken after `gdb.invalidate_cached_frames()`, so every frame
is unwound again (tables already read), as a GDB command of its own (GDB
frees the values a command creates only when the command ends, so a long
Python loop slows down as it goes): a frame walk (`gdb.newest_frame()` then
`.older()` to the outermost frame, what every backtrace starts with), GDB's
`bt` (output captured), and `stackmark bt --markup`. The time is GDB's CPU
time (user + system, `time.process_time()`: reading the stopped inferior's
memory is system time of GDB), so that other work on this shared 2-core
machine does not count; sessions of the configurations are interleaved
and the best time kept.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from tests.gdb.conftest import LOADER, build_program  # noqa: E402

DEFINE = r"""
import gdb, json, time

def _walk():
    count = 0
    frame = gdb.newest_frame()
    while frame is not None:
        count += 1
        frame = frame.older()
    return count

ACTIONS = {
    "walk": _walk,
    "bt": lambda: gdb.execute("bt", to_string=True),
    "markup": lambda: gdb.execute("stackmark bt --markup", to_string=True),
}
best = {}

def measure(name):
    gdb.invalidate_cached_frames()
    start = time.process_time()
    ACTIONS[name]()
    seconds = time.process_time() - start
    best[name] = min(best.get(name, seconds), seconds)

def report():
    print("RESULTS " + json.dumps({"frames": _walk(), "best": best}))
"""


def measure(program: Path, depth: int, repeat: int, setup: str) -> dict:
    """One GDB session: `setup`, then each figure `repeat` times, each measurement a
    GDB command of its own (GDB frees the values a command made only when it ends)."""
    cmd = ["gdb", "-nx", "-q", "-batch", "-ex", "set pagination off"]
    if setup:  # no setup: GDB without the plugin
        cmd += ["-ex", f"source {LOADER}", "-ex", setup]
    cmd += ["-ex", "break stop_here", "-ex", f"run recurse {depth}"]
    cmd += ["-ex", f"python exec({DEFINE!r})"]
    names = ("walk", "bt", "markup") if setup else ("walk", "bt")
    for _ in range(repeat):
        for name in names:
            cmd += ["-ex", f"python measure({name!r})"]
    cmd += ["-ex", "python report()", str(program)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600).stdout
    for line in out.splitlines():
        if line.startswith("RESULTS "):
            found: dict = json.loads(line[len("RESULTS ") :])
            return found
    raise RuntimeError(f"no results from gdb:\n{out}")


def merge(runs: list[dict]) -> dict:
    """The best (smallest) time of each figure over several GDB sessions."""
    best: dict[str, float] = {}
    for found in runs:
        for key, seconds in found["best"].items():
            best[key] = min(best.get(key, seconds), seconds)
    return {"frames": runs[0]["frames"], "best": best}


CONFIGURATIONS = [
    ("GDB DWARF (.eh_frame), no plugin", False, ""),
    ("GDB DWARF (.eh_frame), stackmark loaded (its unwinder idle)", False, "echo"),
    (
        "stackmark SFrame replacing GDB DWARF (.eh_frame, --everywhere)",
        False,
        "stackmark unwinder on --everywhere",
    ),
    ("stackmark SFrame (.eh_frame stripped)", True, "stackmark unwinder on"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="measurements per GDB session")
    parser.add_argument("--sessions", type=int, default=3, help="GDB sessions per configuration")
    args = parser.parse_args()
    programs = {False: build_program(strip_cfi=False).exe, True: build_program(strip_cfi=True).exe}
    runs: dict[str, list[dict]] = {label: [] for label, _s, _c in CONFIGURATIONS}
    for _ in range(args.sessions):  # interleaved: every configuration sees the same load
        for label, stripped, setup in CONFIGURATIONS:
            runs[label].append(measure(programs[stripped], args.depth, args.repeat, setup))
    results = {label: merge(found) for label, found in runs.items()}
    native = results[CONFIGURATIONS[0][0]]
    native_walk = native["best"]["walk"] / native["frames"]
    print(
        f"GDB 13, `dbg_main recurse {args.depth}`: best of {args.sessions} GDB sessions x "
        f"{args.repeat} runs per figure.\n"
    )
    print(
        "| unwinder | frames | walk, CPU µs/frame | vs GDB DWARF | `bt`, CPU µs/frame "
        "| `stackmark bt --markup`, CPU µs/frame (total) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, result in results.items():
        frames = result["frames"]
        walk, bt = (result["best"][k] / frames for k in ("walk", "bt"))
        markup = "-"
        if "markup" in result["best"]:
            total = result["best"]["markup"]
            markup = f"{total / frames * 1e6:.1f} ({total:.2f} s)"
        print(
            f"| {label} | {frames} | {walk * 1e6:.1f} | {walk / native_walk:.2f}x "
            f"| {bt * 1e6:.1f} | {markup} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
