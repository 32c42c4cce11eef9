"""Benchmark: a batch of crash logs whose binaries are only on a debuginfod server.

200 logs, 100,000 lines in all (`gen_markup_log.py`, ~30% markup lines,
a fresh context per crash), over four binaries served by elfutils'
`debuginfod` on 127.0.0.1: the big benchmark binary at -O2 (104 MB, most
frames) and -O0 (30 MB), and two small C programs. Nothing is found
locally (an empty debug-file directory), so every file comes from the
server. Measured in the same session:

* `stackmark symbolize LOGDIR -o OUT` (batch, both cores): first run with
  empty download and GSYM caches (downloads included), then a second run;
  the same with `--gsym-cache build` (first run: downloads + GSYM
  conversion in the batch's parent; second run: answers from GSYM);
* `llvm-symbolizer-19 --filter-markup` run per file with the same
  DEBUGINFOD_URLS (its own download cache): one file after another, first
  run (downloads included) and second run, and two files at a time.

For each: wall time, CPU time (the process and all its children) and the
peak RSS of the largest process; the server's request counts; and how many
of llvm's frame lines stackmark printed the same. Results are printed as
Markdown and saved to bench/work/results/debuginfod.json.

    python bench/bench_debuginfod.py [--logs 200] [--lines 100000] [--no-gsym]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from inputs import BIG, WORK, addresses, ensure_big, markup_log  # noqa: E402

from tests.support.build import build_id_of, compile_program  # noqa: E402
from tests.support.debuginfod_servers import ElfutilsServer, server_environment  # noqa: E402

OUT = WORK / "debuginfod"
RESULTS = WORK / "results"
LLVM = "llvm-symbolizer-19"


@dataclass
class Row:
    label: str
    wall: float
    cpu: float
    max_rss_mib: float
    requests: int  # debuginfo + executable requests the server got during the row
    failures: int  # commands that exited non-zero
    load: float = 0.0  # 1-minute load average when the row ended


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------


def binaries() -> list[Path]:
    """The four served binaries, big-O2 first (it gets most frames)."""
    ensure_big()
    small = [
        compile_program("debuginfod_alpha", ["debuginfod_alpha.c"], flags=["-g", "-O2"]),
        compile_program("debuginfod_beta", ["debuginfod_beta.c"], flags=["-g", "-O2"]),
    ]
    return [BIG / "big-O2", BIG / "big-O0", *small]


def ensure_logs(programs: Sequence[Path], count: int, lines: int) -> Path:
    """`count` logs of `lines / count` lines each under OUT/logs-COUNTxLINES (made once)."""
    logs = OUT / f"logs-{count}x{lines // count}"
    if logs.is_dir() and len(list(logs.iterdir())) == count:
        return logs
    OUT.mkdir(parents=True, exist_ok=True)
    modules = [
        (program, addresses(program, OUT / f"addrs-{program.name}.txt", count=5000, seed=11))
        for program in programs
    ]
    partial = logs.with_name(logs.name + ".tmp")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for i in range(count):
        markup_log(modules, lines // count, partial / f"crash-{i:03d}.log", seed=1000 + i)
    shutil.rmtree(logs, ignore_errors=True)
    partial.rename(logs)
    return logs


def serve(programs: Sequence[Path]) -> Path:
    """A directory holding (hard links to) the programs, for the server to scan."""
    serve_dir = OUT / "serve"
    shutil.rmtree(serve_dir, ignore_errors=True)
    serve_dir.mkdir(parents=True)
    for program in programs:
        target = serve_dir / program.name
        try:
            os.link(program, target)
        except OSError:
            shutil.copy2(program, target)
    return serve_dir


# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------


def run_measured(
    cmd: Sequence[str], env: dict[str, str], stdin: Path | None = None, stdout: Path | None = None
) -> tuple[float, float, float, int]:
    """(wall, CPU of it and its children, peak RSS MiB of its largest process, status)."""
    with open(stdin or os.devnull, "rb") as fin, open(stdout or os.devnull, "wb") as fout:
        start = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), stdin=fin, stdout=fout, stderr=subprocess.DEVNULL, env=env, cwd=REPO
        )
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    return (
        wall,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        os.waitstatus_to_exitcode(status),
    )


def measure_row(
    label: str,
    server: ElfutilsServer,
    body: Callable[[], list[tuple[float, float, float, int]]],
) -> Row:
    before = server.requests("debuginfo") + server.requests("executable")
    start = time.perf_counter()
    runs = body()
    wall = time.perf_counter() - start
    after = server.requests("debuginfo") + server.requests("executable")
    return Row(
        label,
        wall,
        sum(r[1] for r in runs),
        max(r[2] for r in runs),
        after - before,
        sum(1 for r in runs if r[3] != 0),
        os.getloadavg()[0],
    )


def stackmark_batch(
    logs: Path, out: Path, env: dict[str, str], *extra: str
) -> list[tuple[float, float, float, int]]:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "stackmark",
        "symbolize",
        "--debug-file-directory",
        str(OUT / "no-debug-files"),
        *extra,
        str(logs),
        "-o",
        str(out),
    ]
    return [run_measured(cmd, env)]


def llvm_per_file(
    logs: Path, out: Path, env: dict[str, str], parallel: int = 1
) -> list[tuple[float, float, float, int]]:
    """llvm-symbolizer once per file; `parallel` files at a time."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [LLVM, "--filter-markup", f"--debug-file-directory={OUT / 'no-debug-files'}"]
    files = sorted(logs.iterdir())
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(lambda f: run_measured(cmd, env, f, out / f.name), files))


def _frames(path: Path) -> list[str]:
    lines = path.read_text(errors="replace").splitlines()
    return [line for line in lines if line.lstrip().startswith("#")]


def frame_agreement(ours: Path, theirs: Path) -> tuple[int, int]:
    """(llvm frame lines stackmark printed identically and in order, llvm frame lines)."""
    same = total = 0
    for path in sorted(theirs.iterdir()):
        llvm_frames = _frames(path)
        mine = iter(_frames(ours / path.name))
        total += len(llvm_frames)
        same += sum(1 for line in llvm_frames if line in mine)
    return same, total


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--logs", type=int, default=200)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--no-gsym", action="store_true", help="skip the --gsym-cache build rows")
    options = parser.parse_args()

    load_before = os.getloadavg()[0]
    programs = binaries()
    logs = ensure_logs(programs, options.logs, options.lines)
    (OUT / "no-debug-files").mkdir(parents=True, exist_ok=True)
    total_lines = sum(1 for f in logs.iterdir() for _ in f.open("rb"))
    work = OUT / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    ids = [build_id_of(p) for p in programs]
    server = ElfutilsServer(
        serve(programs), work, wait_for=ids, extra_args=["--disable-source-scan"]
    )
    started = time.perf_counter()
    server.start(ready_timeout=900)
    ready = time.perf_counter() - started
    rows: list[Row] = []
    try:

        def env_for(cache: str) -> dict[str, str]:
            env = server_environment()
            env["DEBUGINFOD_URLS"] = server.url
            env["DEBUGINFOD_CACHE_PATH"] = str(work / cache)
            env["XDG_CACHE_HOME"] = str(work / f"{cache}-xdg")
            return env

        # Round robin: each stackmark row is followed by its llvm counterpart, so both
        # see the same machine (the 2 cores are shared with other people's work).
        ours, theirs = env_for("stackmark"), env_for("llvm")
        for run in ("first run (downloads)", "second run"):
            rows.append(
                measure_row(
                    f"stackmark batch, {run}",
                    server,
                    lambda: stackmark_batch(logs, work / "out-stackmark", ours),
                )
            )
            rows.append(
                measure_row(
                    f"llvm-symbolizer-19 per file, {run}",
                    server,
                    lambda: llvm_per_file(logs, work / "out-llvm", theirs),
                )
            )
        if not options.no_gsym:
            gsym = env_for("stackmark-gsym")
            for run in ("first run (downloads + GSYM)", "second run"):
                rows.append(
                    measure_row(
                        f"stackmark batch --gsym-cache build, {run}",
                        server,
                        lambda: stackmark_batch(
                            logs, work / "out-gsym", gsym, "--gsym-cache", "build"
                        ),
                    )
                )
        rows.append(
            measure_row(
                "llvm-symbolizer-19 per file, 2 at a time, second run",
                server,
                lambda: llvm_per_file(logs, work / "out-llvm2", theirs, parallel=2),
            )
        )
    finally:
        server.stop()

    same, total = frame_agreement(work / "out-stackmark", work / "out-llvm")
    same_gsym = (
        frame_agreement(work / "out-gsym", work / "out-llvm") if not options.no_gsym else None
    )
    sizes = {p.name: p.stat().st_size for p in programs}
    print(
        f"{options.logs} logs, {total_lines} lines; binaries: "
        + ", ".join(f"{n} ({s / 1e6:.1f} MB)" for n, s in sizes.items())
    )
    print(
        f"debuginfod ready (index of the binaries built) in {ready:.1f} s; CPUs: {os.cpu_count()}; "
        f"load average: {load_before:.1f} before, {os.getloadavg()[0]:.1f} after\n"
    )
    print(
        "| run | wall | CPU (all processes) | peak RSS (largest process) "
        "| server requests | failed | load after |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row.label} | {row.wall:.1f} s | {row.cpu:.1f} s | {row.max_rss_mib:.0f} MiB | "
            f"{row.requests} | {row.failures} | {row.load:.1f} |"
        )
    print(f"\nstackmark printed {same} of llvm's {total} frame lines identically (DWARF run)")
    if same_gsym is not None:
        print(
            f"stackmark printed {same_gsym[0]} of llvm's {same_gsym[1]} frame lines "
            "identically (GSYM run)"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "debuginfod.json").write_text(
        json.dumps(
            {
                "logs": options.logs,
                "lines": total_lines,
                "binaries": sizes,
                "ready_seconds": ready,
                "rows": [asdict(r) for r in rows],
                "frames_same": same,
                "frames_total": total,
                "frames_same_gsym": same_gsym,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
