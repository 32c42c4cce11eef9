"""The sanitizers' external symbolizer: llvm-symbolizer-stackmark against llvm-symbolizer-19.

    .venv/bin/python bench/bench_sanitizers.py [--repeat N]

Two figures, both tools measured in the same run, round robin:

- a whole ASan report: the heap-overflow fixture of tests/integration/
  test_sanitizers.py (a program and a library built with clang-19, frames
  in the library, the program and libc with its debug file), run with each
  tool as ASAN_SYMBOLIZER_PATH, wall time from start to exit;
- the protocol alone: every other byte of the library's `count_stock` and
  the program's `run_report` asked as `CODE` requests in one session (the
  start-up and the first look at each file included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import load_average, measure_round_robin, run_once, table  # noqa: E402

from tests.support import sanitizers  # noqa: E402


def _function_requests(path: Path, name: str) -> list[str]:
    listing = subprocess.run(
        ["nm", "-S", "--defined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    for fields in map(str.split, listing.splitlines()):
        if len(fields) == 4 and fields[3] == name:
            start, size = int(fields[0], 16), int(fields[1], 16)
            return [f'CODE "{path}" 0x{start + delta:x}\n' for delta in range(0, size, 2)]
    raise SystemExit(f"{name} not found in {path}")


def _whole_reports(program: Path, repeat: int, cache: Path) -> list[tuple[str, float]]:
    """(tool, median wall seconds) of the sanitized program's run to its report."""
    reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
    assert reference is not None
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    env.pop("DEBUGINFOD_URLS", None)
    rows = []
    for label, tool in (("llvm-symbolizer-19", reference), ("stackmark", str(sanitizers.OURS))):
        runs = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run(
                [str(program), "heap"],
                env={**env, "ASAN_SYMBOLIZER_PATH": tool},
                capture_output=True,
                check=False,
            )
            runs.append(time.perf_counter() - start)
        rows.append((label, statistics.median(runs)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    program, library = sanitizers.build_asan()
    requests = _function_requests(library, "count_stock") + _function_requests(
        program, "run_report"
    )
    with tempfile.TemporaryDirectory(prefix="bench-sanitizers-") as work:
        stdin = Path(work) / "requests.txt"
        stdin.write_text("".join(requests))
        reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
        assert reference is not None
        run_once([str(sanitizers.OURS)], stdin)  # bytecode compiled, files in the page cache
        protocol = measure_round_robin(
            [
                (f"{len(requests)} CODE requests, llvm-symbolizer-19", [reference, "--inlines"]),
                (f"{len(requests)} CODE requests, stackmark", [str(sanitizers.OURS), "--inlines"]),
            ],
            stdin,
            args.repeat,
        )
        reports = _whole_reports(program, args.repeat, Path(work))
    print(f"load average {load_average()}, {args.repeat} runs each\n")
    print(table(protocol))
    print()
    print("| whole report | wall (median) |")
    print("| --- | ---: |")
    for label, wall in reports:
        print(f"| ASan report, {label} | {wall:.3f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
