"""Batches on a Dask cluster: the scheduler's per-task overhead, and a batch beside the
local one.

A `dask scheduler` and two `dask worker` processes (one thread each) on
127.0.0.1, as the tests start them. Measured:

- per-task overhead: empty logs through `symbolize_task` (no symbolizing
  work), one at a time (submit, wait: a round trip) and many at once (wall
  time / tasks: what the scheduler and transport cost per task);
- a batch of LOGS logs of FRAMES frames each: `stackmark symbolize -o DIR`
  locally with -j 1 and -j 2, and with `--dask-scheduler` on the two workers.

    .venv/bin/python bench/bench_dask.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from stackmark.cli.symbolize_dask import symbolize_task  # noqa: E402
from tests.integration.test_batch_dask import write_logs  # noqa: E402
from tests.support.build import compile_program  # noqa: E402
from tests.support.dask_cluster import DaskCluster  # noqa: E402
from tests.support.debuginfod_programs import cli_environment  # noqa: E402

LOGS = 40
FRAMES = 2000
EMPTY_TASKS = 400


def overhead(address: str, settings: dict[str, object]) -> tuple[float, float]:
    """(ms per task, one at a time; ms per task, EMPTY_TASKS at once)."""
    from distributed import Client, wait

    with Client(address) as client:
        client.submit(symbolize_task, settings, "warm", b"", pure=False).result()
        start = time.perf_counter()
        for number in range(50):
            client.submit(symbolize_task, settings, f"one{number}", b"", pure=False).result()
        one = (time.perf_counter() - start) / 50
        start = time.perf_counter()
        futures = [
            client.submit(symbolize_task, settings, f"many{n}", b"", pure=False)
            for n in range(EMPTY_TASKS)
        ]
        wait(futures)
        many = (time.perf_counter() - start) / EMPTY_TASKS
    return one * 1000, many * 1000


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    import os

    from stackmark.cli.symbolize import parse_quick
    from stackmark.cli.symbolize_dask import task_settings

    program = compile_program(
        "service_inline", ["gsym_inline.c", "gsym_inline_b.c"], flags=["-g", "-O2"]
    )
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as temp:
        work = Path(temp)
        logs = write_logs(work, program, LOGS, frames=FRAMES)
        (logs / "core.bin").unlink()
        env = cli_environment(work / "cache")
        sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
        base = [sys.executable, "-m", "stackmark", "symbolize", *sources, str(logs)]
        args = parse_quick([*sources, "x"])
        assert args is not None
        settings = task_settings(args)
        print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared with other work)\n")
        with DaskCluster(work / "cluster") as cluster:
            one, many = overhead(cluster.address, settings)
            timed([*base, "-o", str(work / "warm"), "--dask-scheduler", cluster.address], env)
            remote = timed(
                [*base, "-o", str(work / "remote"), "--dask-scheduler", cluster.address], env
            )
        local1 = timed([*base, "-o", str(work / "local1"), "-j", "1"], env)
        local2 = timed([*base, "-o", str(work / "local2"), "-j", "2"], env)
        print("| measure | value |")
        print("|---|---|")
        print(f"| one empty task, submit to result (round trip) | {one:.1f} ms |")
        print(f"| {EMPTY_TASKS} empty tasks at once, wall time per task | {many:.2f} ms |")
        print(f"| {LOGS} logs x {FRAMES} frames, local batch -j 1 | {local1:.2f} s |")
        print(f"| same, local batch -j 2 | {local2:.2f} s |")
        print(f"| same, Dask cluster of 2 one-thread workers | {remote:.2f} s |")
        per_log = local1 / LOGS * 1000
        print(f"| per-log cost (local -j 1 / logs, start-up included) | {per_log:.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
