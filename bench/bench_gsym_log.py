"""GSYM cache on the 100,000-line markup log, against llvm-symbolizer-19 --filter-markup.

    python bench/bench_gsym_log.py [--repeat N] [--cold-repeat N]

The log is bench_markup.py's (`gen_markup_log.py` over bench/work/big/big-O2,
~30% markup lines, a fresh context per crash, ASLR bases), generated once
into bench/work/markup/. Measured in the same run, on the same machine:

- `llvm-symbolizer-19 --filter-markup` (the reference);
- `stackmark symbolize` with a warm GSYM cache (the entry already built);
- `stackmark symbolize --gsym-cache=build` with a cold cache (an empty
  directory each run: the conversion of big-O2's DWARF is included).

Warm runs and llvm's alternate (round robin), so both see the same load.
Prints Markdown (wall, CPU, peak RSS, lines per second, the ratios against
the targets); the figures in docs/benchmarks.md come from it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_markup import (  # noqa: E402
    GSYM_CACHE,
    GSYM_ROW,
    LLVM_ROW,
    build_gsym_cache,
    commands,
    ensure_logs,
)
from inputs import BIG, ensure_big  # noqa: E402
from measure import Summary, load_average, measure, measure_round_robin, table  # noqa: E402

COLD_ROW = "stackmark symbolize --gsym-cache=build (cold: empty cache, conversion included)"


def lines_per_second(summary: Summary, lines: int, cpu: bool = False) -> float:
    return lines / (summary.cpu if cpu else summary.wall)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each warm command")
    parser.add_argument("--cold-repeat", type=int, default=1, help="cold-cache runs (0: warm only)")
    args = parser.parse_args()

    ensure_big()
    one_log, big_log = ensure_logs()
    lines = big_log.read_bytes().count(b"\n")
    build_gsym_cache(one_log)
    cmds = commands()
    print(
        f"Log: {big_log.relative_to(HERE.parent)} ({lines:,} lines) over "
        f"{(BIG / 'big-O2').relative_to(HERE.parent)}; load average {load_average()}\n"
    )
    rows = measure_round_robin(
        [(LLVM_ROW, cmds[LLVM_ROW]), (GSYM_ROW.replace("built", "warm"), cmds[GSYM_ROW])],
        big_log,
        args.repeat,
    )
    cold_runs = []
    for _ in range(args.cold_repeat):
        cold_dir = Path(tempfile.mkdtemp(prefix="bench-gsym-cold-"))
        try:
            cold_cmd = [
                *[a for a in cmds[GSYM_ROW] if not a.startswith("--gsym-cache-dir=")],
                f"--gsym-cache-dir={cold_dir}",
                "--gsym-cache=build",
            ]
            cold_runs.extend(measure(COLD_ROW, cold_cmd, big_log, 1).runs)
        finally:
            shutil.rmtree(cold_dir, ignore_errors=True)
    llvm, warm = rows
    measured = [llvm, warm]
    if cold_runs:
        measured.append(Summary(COLD_ROW, cold_runs))
    print(table(measured))
    print()
    print("| command | lines/s (wall) | lines/s (CPU) |")
    print("| --- | ---: | ---: |")
    for s in measured:
        print(
            f"| {s.label} | {lines_per_second(s, lines):,.0f} | "
            f"{lines_per_second(s, lines, cpu=True):,.0f} |"
        )
    print()
    print(
        f"- warm vs llvm: {llvm.wall / warm.wall:.2f}x the lines/s by wall time, "
        f"{llvm.cpu / warm.cpu:.2f}x by CPU time (target >= 2.5x); peak RSS "
        f"{warm.max_rss_mib / llvm.max_rss_mib:.2f} of llvm's (target <= 0.25)"
    )
    if cold_runs:
        cold = measured[2]
        print(
            f"- cold vs llvm: {cold.wall / llvm.wall:.1f}x llvm's wall time, "
            f"{cold.cpu / llvm.cpu:.1f}x its CPU time (target within 3x); "
            f"peak RSS {cold.max_rss_mib:.0f} MiB"
        )
    print(f"- load average at the end: {load_average()}")
    print(f"- warm cache entry: {GSYM_CACHE.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
