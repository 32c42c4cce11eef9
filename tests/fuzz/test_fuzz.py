"""A short coverage-guided run of every fuzz target, and the saved crash inputs.

Each target runs for STACKMARK_FUZZ_SECONDS (default 5) from its seeds,
with libFuzzer seed STACKMARK_FUZZ_SEED (default 1), in a fresh corpus:
any crash, hang (20 s on one input) or memory past 2 GiB fails the test,
which shows the traceback and where the input was saved. The executions of
each run are appended to build/fuzz/runs.jsonl (docs/reliability.md).
Longer runs: `make fuzz` (FUZZ_SECONDS per target, corpus kept in build/fuzz).

Every input under tests/fuzz/crashes/TARGET/ once crashed its target; they
are replayed so that the fixes stay fixed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fuzz.run import executions, record_run
from tests.fuzz.targets import TARGETS
from tests.support.build import REPO

SECONDS = float(os.environ.get("STACKMARK_FUZZ_SECONDS", "5"))
SEED = int(os.environ.get("STACKMARK_FUZZ_SEED", "1"))
CRASHES = Path(__file__).parent / "crashes"


def _tail(text: str, lines: int = 60) -> str:
    kept = [
        line for line in text.splitlines() if not line.startswith(("#", '"', "INFO:", "WARNING:"))
    ]
    return "\n".join(kept[-lines:])


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target(target: str, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "tests.fuzz.run", target, "--seconds", str(SECONDS)]
    command += ["--seed", str(SEED), "--corpus", str(tmp_path / "corpus")]
    started = time.monotonic()
    proc = subprocess.run(
        command, cwd=REPO, capture_output=True, text=True, timeout=SECONDS * 4 + 240
    )
    runs = executions(proc.stderr)
    record_run(target, SECONDS, runs, proc.returncode, time.monotonic() - started)
    assert proc.returncode == 0, f"fuzz target {target} failed:\n{_tail(proc.stderr)}"
    assert runs is not None and runs > 0, _tail(proc.stderr)


def _saved_crashes() -> list[tuple[str, list[Path]]]:
    if not CRASHES.is_dir():
        return []
    return [
        (directory.name, sorted(directory.iterdir()))
        for directory in sorted(CRASHES.iterdir())
        if directory.is_dir() and any(directory.iterdir())
    ]


@pytest.mark.parametrize(
    ("target", "inputs"), _saved_crashes(), ids=[name for name, _ in _saved_crashes()]
)
def test_saved_crash_inputs_stay_fixed(target: str, inputs: list[Path]) -> None:
    command = [sys.executable, "-m", "tests.fuzz.run", target, "--replay", *map(str, inputs)]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.count(": ok") == len(inputs)
