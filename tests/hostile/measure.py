"""Run `stackmark` in a child process and measure it: status, seconds, peak memory.

The child reports its own peak RSS at exit: VmHWM from /proc/self/status, the
high-water mark of its own address space. Not getrusage(RUSAGE_SELF): Linux
carries the parent's peak through fork and exec into ru_maxrss, so a child of
a 350 MB pytest process would report 350 MB however little it used. Output
goes to files, so a test does not hold a hundred megabytes of it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.build import REPO

_WRAPPER = """\
import atexit, sys
report = sys.argv.pop(1)
def peak_kb():
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("VmHWM:"))
atexit.register(lambda: open(report, "w").write(peak_kb()))
from stackmark.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@dataclass
class Measured:
    status: int
    seconds: float
    peak_mb: float
    stdout: Path
    stderr: Path

    def stderr_text(self, limit: int = 1 << 20) -> str:
        with open(self.stderr, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")


def run_stackmark(args: list[str], stdin: Path, work: Path, *, timeout: float = 300) -> Measured:
    """`stackmark ARGS < stdin`, stdout and stderr to files under `work`."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "peak-rss-kb"
    out, err = work / "stdout", work / "stderr"
    started = time.monotonic()
    with open(stdin, "rb") as fin, open(out, "wb") as fout, open(err, "wb") as ferr:
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, str(report), *args],
            stdin=fin,
            stdout=fout,
            stderr=ferr,
            cwd=REPO,
            timeout=timeout,
            check=False,
        )
    seconds = time.monotonic() - started
    peak_mb = int(report.read_text()) / 1024 if report.exists() else float("nan")
    return Measured(proc.returncode, seconds, peak_mb, out, err)


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_repeated(path: Path, head: bytes, unit: bytes, count: int, tail: bytes = b"") -> Path:
    """`head + unit * count + tail`, written in chunks."""
    with open(path, "wb") as f:
        f.write(head)
        per_chunk = max(1, (1 << 20) // max(1, len(unit)))
        left = count
        while left:
            n = min(per_chunk, left)
            f.write(unit * n)
            left -= n
        f.write(tail)
    return path
