"""The LLDB plugin on a 10,000-frame recursion: `stackmark sframe-bt` vs LLDB's own unwinding.

    .venv/bin/python bench/bench_lldb.py [--depth N] [--sessions S]

The program is the test fixture `dbg_main recurse N` (tests/fixtures/src),
built -g -O2 -fomit-frame-pointer -Wa,--gsframe (SFrame v1) as a PIE with a
shared library, with and without .eh_frame. LLDB 19 stops in stop_here() at
the bottom of the recursion. Each figure is one LLDB session, so "cold" is
the first time anything unwinds that stop (LLDB keeps a thread's frames
until the process resumes, and there is no SB API to drop them); "warm" is
the same command again in the same session. The reference is LLDB itself:

- LLDB frame walk: iterating the thread's `SBFrame`s (LLDB's unwinder, no
  output): what every LLDB backtrace costs;
- LLDB `bt`: the command, output captured (names, arguments, lines);
- `stackmark bt --markup`: LLDB's frames, folded and written as markup;
- `stackmark sframe-bt --markup`: stackmark's SFrame unwinder walking the
  process through the SB API (registers once, then memory reads), on the
  binary with .eh_frame and on the stripped one.

Sessions of every configuration are interleaved and the best time kept:
this 2-core machine is shared, and other work only ever adds time.
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

from tests.gdb.conftest import build_program  # noqa: E402
from tests.lldb.conftest import LLDB, LOADER  # noqa: E402

DEFINE = r"""
import json, time, lldb
def _walk(debugger):
    return sum(1 for _ in debugger.GetSelectedTarget().GetProcess().GetSelectedThread())
def _command(debugger, text):
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(text, result)
    if not result.Succeeded():
        raise RuntimeError(result.GetError())
def stackmark_measure(debugger, what):
    start = time.perf_counter()
    frames = _walk(debugger) if what == "walk" else _command(debugger, what)
    return time.perf_counter() - start
"""


def measure(program: Path, depth: int, what: str) -> tuple[float, float, int]:
    """(cold, warm, LLDB's frame count) for `what` in a fresh LLDB session."""
    report = (
        f"script print('RESULTS ' + json.dumps([stackmark_measure(lldb.debugger, {what!r}), "
        f"stackmark_measure(lldb.debugger, {what!r}), _walk(lldb.debugger)]))"
    )
    cmd = [LLDB, "-x", "-b", "-o", f"command script import {LOADER}"]
    cmd += ["-o", f"script exec({DEFINE!r})", "-o", f"target create {program}"]
    cmd += ["-o", "breakpoint set -n stop_here", "-o", f"process launch -- recurse {depth}"]
    cmd += ["-o", report]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600).stdout
    for line in out.splitlines():
        if line.startswith("RESULTS "):
            cold, warm, frames = json.loads(line[len("RESULTS ") :])
            return cold, warm, frames
    raise RuntimeError(f"no results from lldb:\n{out}")


SFRAME_BT = "stackmark sframe-bt --markup --full"
CONFIGURATIONS = [
    ("LLDB frame walk (.eh_frame)", False, "walk"),
    ("LLDB `bt` (.eh_frame)", False, "bt"),
    ("`stackmark bt --markup` (.eh_frame)", False, "stackmark bt --markup --full"),
    ("`stackmark sframe-bt --markup` (.eh_frame)", False, SFRAME_BT),
    ("`stackmark sframe-bt --markup` (.eh_frame stripped)", True, SFRAME_BT),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=3, help="LLDB sessions per figure")
    args = parser.parse_args()
    programs = {False: build_program(strip_cfi=False).exe, True: build_program(strip_cfi=True).exe}
    best: dict[str, list[float]] = {}
    frames = 0
    for _ in range(args.sessions):  # interleaved: every configuration sees the same load
        for label, stripped, what in CONFIGURATIONS:
            cold, warm, frames = measure(programs[stripped], args.depth, what)
            found = best.setdefault(label, [cold, warm])
            best[label] = [min(found[0], cold), min(found[1], warm)]
    walk = best[CONFIGURATIONS[0][0]][0]
    print(
        f"LLDB 19, `dbg_main recurse {args.depth}` ({frames} frames as LLDB lists them): "
        f"best of {args.sessions} LLDB sessions per figure.\n"
    )
    print("| what | cold, µs/frame (total) | vs LLDB walk | warm, µs/frame |")
    print("| --- | ---: | ---: | ---: |")
    for label, (cold, warm) in best.items():
        print(
            f"| {label} | {cold / frames * 1e6:.1f} ({cold:.2f} s) | {cold / walk:.2f}x "
            f"| {warm / frames * 1e6:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
