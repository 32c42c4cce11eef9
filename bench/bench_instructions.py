"""Instructions executed on the 100,000-line log, stackmark (warm GSYM cache) against llvm.

    python bench/bench_instructions.py [--skip-llvm] [--first-answer]

On this shared 2-core machine the same command's CPU time varies by a third
from minute to minute, which hides changes of 5-10%. The number of
instructions a run executes does not vary (valgrind's cachegrind counts them,
without cache simulation; PYTHONHASHSEED is fixed so that dict and set
layouts repeat), so it is the figure to compare two versions of stackmark
with. It is not a time: llvm-symbolizer runs about twice as many
instructions per second as the Python interpreter, so the time ratio is about
half the instruction ratio. Needs valgrind (skipped with a message without it).

With --first-answer: the one-frame log on the DWARF path (no GSYM cache),
bytecode compiled (bench/bytecode.py), against llvm: the start-up figure of
issue 18's first-answer target.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import bytecode  # noqa: E402
from bench_markup import (  # noqa: E402
    DWARF_ROW,
    GSYM_ROW,
    LLVM_ROW,
    build_gsym_cache,
    commands,
    ensure_logs,
)
from inputs import ensure_big  # noqa: E402

_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")


def instructions(cmd: list[str], stdin: Path) -> int:
    """Instructions `cmd` executes with `stdin` as input (cachegrind's `I refs`)."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with open(stdin, "rb") as fin:
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                *cmd,
            ],
            stdin=fin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            check=True,
        )
    found = _REFS.search(proc.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output for {cmd[0]}")
    return int(found.group(1).replace(b",", b""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-llvm", action="store_true", help="count stackmark only")
    parser.add_argument(
        "--first-answer",
        action="store_true",
        help="count the one-frame log on the DWARF path, bytecode compiled, against llvm",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not installed; skipped")
        return 0
    ensure_big()
    one_log, big_log = ensure_logs()
    if args.first_answer:
        return first_answer(one_log, args.skip_llvm)
    build_gsym_cache(one_log)
    cmds = commands()
    ours_big = instructions(cmds[GSYM_ROW], big_log)
    ours_one = instructions(cmds[GSYM_ROW], one_log)
    print(f"Instructions on {big_log.relative_to(HERE.parent)} (cachegrind, PYTHONHASHSEED=0)\n")
    print("| command | instructions | start-up (1-line log) |")
    print("| --- | ---: | ---: |")
    print(f"| {GSYM_ROW} | {ours_big / 1e9:.2f} G | {ours_one / 1e9:.2f} G |")
    if not args.skip_llvm:
        theirs = instructions(cmds[LLVM_ROW], big_log)
        print(f"| {LLVM_ROW} | {theirs / 1e9:.2f} G | |")
        print(f"\n- llvm executes {theirs / ours_big:.2f}x stackmark's instructions")
    return 0


def first_answer(one_log: Path, skip_llvm: bool) -> int:
    """Instructions of a first answer: the one-frame log, DWARF path, bytecode compiled."""
    bytecode.prepare()
    cmds = commands()
    ours = instructions(cmds[DWARF_ROW], one_log)
    print(f"Instructions on {one_log.relative_to(HERE.parent)} (cachegrind, PYTHONHASHSEED=0)\n")
    print("| command | instructions |")
    print("| --- | ---: |")
    print(f"| {DWARF_ROW} | {ours / 1e6:.1f} M |")
    if not skip_llvm:
        theirs = instructions(cmds[LLVM_ROW], one_log)
        print(f"| {LLVM_ROW} | {theirs / 1e6:.1f} M |")
        print(f"\n- stackmark executes {ours / theirs:.2f}x llvm's instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
