"""Symbol lookups: `python -m stackmark.symbols` against llvm-symbolizer-19, same inputs, same run.

    .venv/bin/python bench/bench_symbols.py [--binary bench/work/big/big-O2] [--runs 7]

Measures, for both tools in their plain address mode:

* first answer: one address, fresh process (interpreter start-up included);
* N random addresses (gen_addrs.py: uniform over functions) through stdin,
  giving the cost per address once the process is up.

Wall times are the minimum over --runs runs (the machine is shared; the
minimum is the least disturbed), peak RSS from getrusage. Byte code is
compiled first so that the Python timings are those of an installed package.
Build the binary with `bash ../shared/tools/build_big.sh bench/work`.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from inputs import TOOLS  # noqa: E402
from inputs import addresses as make_addresses  # noqa: E402


def run_once(cmd: list[str], stdin: str | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin, text=True, stdout=subprocess.DEVNULL, check=True, env=_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(cmd: list[str], stdin: str | None, runs: int) -> tuple[float, float]:
    """(minimum wall, minimum CPU) over `runs` runs."""
    results = [run_once(cmd, stdin) for _ in range(runs)]
    return min(w for w, _ in results), min(c for _, c in results)


def rss_of(cmd: list[str], stdin: str | None) -> int:
    """Peak RSS (KiB) of one run, measured alone with /usr/bin/time."""
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *cmd],
        input=stdin,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=True,
        env=_env(),
    )
    return int(proc.stderr.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(REPO / "bench/work/big/big-O2"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--counts", default="1000,10000")
    args = parser.parse_args()
    binary = Path(args.binary)
    if not binary.exists():
        print(f"{binary} is missing: bash {TOOLS}/build_big.sh {REPO}/bench/work", file=sys.stderr)
        return 1
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "stackmark")], check=True)
    counts = [int(c) for c in args.counts.split(",")]
    addresses_file = make_addresses(
        binary, REPO / f"bench/work/symbols-addrs-{max(counts)}.txt", count=max(counts)
    )
    addresses = addresses_file.read_text().split()
    # Started the way an installed console script starts (no runpy), like `stackmark`.
    ours = [
        sys.executable,
        "-c",
        "import sys; from stackmark.symbols.__main__ import main; sys.exit(main())",
        f"--obj={binary}",
    ]
    llvm = ["llvm-symbolizer-19", f"--obj={binary}"]

    load = os.getloadavg()[0]
    print(f"binary: {binary} ({binary.stat().st_size / 1e6:.0f} MB), load average {load:.1f}")
    print("wall and CPU (user+system): minimum over the runs; peak RSS of one run")
    print("| measurement | stackmark | llvm-symbolizer-19 | ratio (wall, CPU) |")
    print("| --- | --- | --- | --- |")
    first = addresses[0]
    mine, mine_cpu = measure([*ours, first], None, args.runs)
    theirs, theirs_cpu = measure([*llvm, first], None, args.runs)
    python, python_cpu = measure([sys.executable, "-c", "pass"], None, args.runs)
    rss_mine, rss_theirs = rss_of([*ours, first], None), rss_of([*llvm, first], None)
    print(
        f"| first answer (1 address, fresh process) "
        f"| {mine * 1e3:.0f} ms wall, {mine_cpu * 1e3:.0f} ms CPU, {rss_mine / 1024:.0f} MiB "
        f"| {theirs * 1e3:.0f} ms wall, {theirs_cpu * 1e3:.0f} ms CPU, "
        f"{rss_theirs / 1024:.0f} MiB | {mine / theirs:.1f}x, {mine_cpu / theirs_cpu:.1f}x |"
    )
    print(f"| (`python -c pass`) | {python * 1e3:.0f} ms wall, {python_cpu * 1e3:.0f} ms CPU | | |")
    start_mine, start_theirs = mine_cpu, theirs_cpu
    for count in counts:
        stdin = "\n".join(addresses[:count]) + "\n"
        runs = max(1, args.runs // 3)
        mine, mine_cpu = measure(ours, stdin, runs)
        theirs, theirs_cpu = measure(llvm, stdin, runs)
        rss_mine, rss_theirs = rss_of(ours, stdin), rss_of(llvm, stdin)
        per_mine = (mine_cpu - start_mine) / count * 1e6
        per_theirs = (theirs_cpu - start_theirs) / count * 1e6
        print(
            f"| {count} random addresses | {mine:.2f} s wall, {mine_cpu:.2f} s CPU "
            f"({per_mine:.0f} µs/address), {rss_mine / 1024:.0f} MiB "
            f"| {theirs:.2f} s wall, {theirs_cpu:.2f} s CPU ({per_theirs:.0f} µs/address), "
            f"{rss_theirs / 1024:.0f} MiB | {mine / theirs:.1f}x, {mine_cpu / theirs_cpu:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
