"""Measuring a command: wall time, CPU time and peak memory of the child process.

Shared by the benchmarks in this directory. Peak memory is the child's
maximum resident set size as the kernel reports it (`wait4`), so it covers
the whole process, interpreter included.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bytecode

bytecode.prepare()


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds
    max_rss_mib: float
    status: int


@dataclass(frozen=True)
class Summary:
    label: str
    runs: list[Run]

    @property
    def wall(self) -> float:
        return statistics.median(r.wall for r in self.runs)

    @property
    def cpu(self) -> float:
        return statistics.median(r.cpu for r in self.runs)

    @property
    def max_rss_mib(self) -> float:
        return max(r.max_rss_mib for r in self.runs)


def run_once(cmd: Sequence[str], stdin: Path, stdout: Path | None = None) -> Run:
    """Run `cmd` with `stdin` as input; output to `stdout` (or /dev/null)."""
    with open(stdin, "rb") as fin, open(stdout or os.devnull, "wb") as fout:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdin=fin, stdout=fout, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def measure(
    label: str, cmd: Sequence[str], stdin: Path, repeat: int, stdout: Path | None = None
) -> Summary:
    return Summary(label, [run_once(cmd, stdin, stdout) for _ in range(repeat)])


def measure_round_robin(
    commands: Sequence[tuple[str, Sequence[str]]], stdin: Path, repeat: int
) -> list[Summary]:
    """Each command once per round, `repeat` rounds: on a shared machine whose
    load changes, every command sees the same mix of quiet and busy moments."""
    runs: dict[str, list[Run]] = {label: [] for label, _ in commands}
    for _ in range(repeat):
        for label, cmd in commands:
            runs[label].append(run_once(cmd, stdin))
    return [Summary(label, runs[label]) for label, _ in commands]


def load_average() -> str:
    """The 1-minute load average (how busy the machine was)."""
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def table(rows: Sequence[Summary]) -> str:
    """A Markdown table of summaries."""
    lines = [
        "| command | wall (median) | CPU (median) | peak RSS | runs |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for s in rows:
        cells = [s.label, f"{s.wall:.3f} s", f"{s.cpu:.3f} s", f"{s.max_rss_mib:.0f} MiB"]
        lines.append("| " + " | ".join([*cells, str(len(s.runs))]) + " |")
    return "\n".join(lines)
