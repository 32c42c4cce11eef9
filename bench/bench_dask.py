"""Batches on a Dask cluster: the scheduler's per-task overhead, and a batch beside the
local one.

A `dask scheduler` and two `dask worker` processes (one thread each) on
127.0.0.1, as the tests start them. Measured:

- per-task overhead: empty logs through `symbolize_task` (no symbolizing
  work), one at a time (submit, wait: a round trip) and many at once (wall
  time / tasks: what the scheduler and transport cost per task);
- a batch of LOGS logs of FRAMES frames each: `stackmark symbolize -o DIR`
  locally with -j 1 and -j 2, and with `--dask-scheduler` on the two workers;
- one large log (BIG_REPORTS crash reports of BIG_FRAMES frames, each
  starting with `{{{reset}}}`): `stackmark symbolize FILE -o DIR` locally,
  and on the cluster whole (`--dask-chunk-size 0`) and cut into chunks
  (the default size and smaller ones); and, in this process with one warm
  symbolizer, the filter's own cost per chunk (the log filtered whole
  against the same log filtered chunk by chunk).

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
from tests.integration.test_batch_dask import write_crash_log, write_logs  # noqa: E402
from tests.support.build import compile_program  # noqa: E402
from tests.support.dask_cluster import DaskCluster  # noqa: E402
from tests.support.debuginfod_programs import cli_environment  # noqa: E402

LOGS = 40
FRAMES = 2000
EMPTY_TASKS = 400
BIG_REPORTS = 100
BIG_FRAMES = 2400
CHUNK_SIZES = ("1M", "500K", "250K", "100K")


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


def filter_cost_per_chunk(log: Path, args: object, size: int) -> tuple[int, float, float]:
    """(chunks, s filtering whole, s filtering chunk by chunk), in this process,
    with one symbolizer warmed by a first pass."""
    import io

    from stackmark.cli.symbolize import _make_naming, _make_symbolizer, filter_settings_from
    from stackmark.markup.chunks import split_log
    from stackmark.markup.stream import filter_streams

    data = log.read_bytes()
    symbolizer = _make_symbolizer(args)  # type: ignore[arg-type]
    naming = _make_naming(args)  # type: ignore[arg-type]
    settings = filter_settings_from(args)  # type: ignore[arg-type]
    chunks = split_log(data, size)

    def run(parts: list[tuple[bytes, int]]) -> float:
        start = time.perf_counter()
        for part, first in parts:
            out = io.BytesIO()
            filter_streams(
                [("big.log", io.BytesIO(part))],
                out,
                lambda _text: None,
                settings,
                symbolizer,
                naming,
                first_line=first,
            )
        return time.perf_counter() - start

    run([(data, 0)])  # warm: the module's symbols open
    whole = min(run([(data, 0)]) for _ in range(3))
    cut = min(run([(data[c.start : c.end], c.first_line) for c in chunks]) for _ in range(3))
    return len(chunks), whole, cut


def task_in_process(log: Path, settings: dict[str, object]) -> float:
    """Seconds for the whole log through `symbolize_task` here (warm): the work a
    worker does, without the cluster's transport."""
    data = log.read_bytes()
    symbolize_task(settings, "big.log", data)
    start = time.perf_counter()
    symbolize_task(settings, "big.log", data)
    return time.perf_counter() - start


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: the large log's own malformed elements
        raise RuntimeError(f"{cmd} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return elapsed


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
            big = work / "big" / "big.log"
            big.parent.mkdir()
            write_crash_log(big, program, BIG_REPORTS, frames=BIG_FRAMES)
            big_lines = big.read_bytes().count(b"\n")
            big_base = [sys.executable, "-m", "stackmark", "symbolize", *sources, str(big)]
            on_cluster = [*big_base, "--dask-scheduler", cluster.address]
            big_remote: dict[str, float] = {}
            for size in ("0", *CHUNK_SIZES):
                out = str(work / f"big-{size}")
                big_remote[size] = timed([*on_cluster, "--dask-chunk-size", size, "-o", out], env)
        local1 = timed([*base, "-o", str(work / "local1"), "-j", "1"], env)
        local2 = timed([*base, "-o", str(work / "local2"), "-j", "2"], env)
        big_local = timed([*big_base, "-o", str(work / "big-local")], env)
        for size in ("0", *CHUNK_SIZES):
            produced = (work / f"big-{size}" / "big.log").read_bytes()
            assert produced == (work / "big-local" / "big.log").read_bytes(), size
        from stackmark.markup.chunks import split_log
        from stackmark.symbols.cache_admin import parse_size

        in_process = task_in_process(big, settings)
        per_chunk = [
            (size, *filter_cost_per_chunk(big, args, parse_size(size))) for size in CHUNK_SIZES
        ]
        print("| measure | value |")
        print("|---|---|")
        print(f"| one empty task, submit to result (round trip) | {one:.1f} ms |")
        print(f"| {EMPTY_TASKS} empty tasks at once, wall time per task | {many:.2f} ms |")
        print(f"| {LOGS} logs x {FRAMES} frames, local batch -j 1 | {local1:.2f} s |")
        print(f"| same, local batch -j 2 | {local2:.2f} s |")
        print(f"| same, Dask cluster of 2 one-thread workers | {remote:.2f} s |")
        per_log = local1 / LOGS * 1000
        print(f"| per-log cost (local -j 1 / logs, start-up included) | {per_log:.0f} ms |")
        size_mb = big.stat().st_size / 1e6
        print(f"\nOne log: {BIG_REPORTS} crash reports, {big_lines} lines, {size_mb:.1f} MB\n")
        print("| run | chunks | wall |")
        print("|---|---:|---:|")
        print(f"| local `stackmark symbolize FILE -o DIR` | 1 | {big_local:.2f} s |")
        work_alone = "`symbolize_task` in this process, warm (the work alone)"
        print(f"| {work_alone} | 1 | {in_process:.2f} s |")
        for size in ("0", *CHUNK_SIZES):
            count = len(split_log(big.read_bytes(), parse_size(size)))
            print(f"| cluster, `--dask-chunk-size {size}` | {count} | {big_remote[size]:.2f} s |")
        print("\n| chunk size | chunks | filter whole | chunk by chunk | per chunk |")
        print("|---|---:|---:|---:|---:|")
        for size, count, whole, cut in per_chunk:
            extra = (cut - whole) / max(count - 1, 1) * 1000
            print(f"| {size} | {count} | {whole:.2f} s | {cut:.2f} s | {extra:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
