"""`stackmark.cli.main.entry`: the process ends at once after a command only when
nothing is left to finish; exit handlers still run, output is all written."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import atexit, sys
from stackmark.cli.main import entry
if sys.argv[1] == "handler":
    atexit.register(lambda: print("exit handler ran", flush=True))
sys.argv = ["stackmark", "symbolize", "--gsym-cache=off"]
entry()
"""


def run(mode: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_exit_handlers_still_run() -> None:
    done = run("handler", "plain line\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "plain line\nexit handler ran\n"


def test_fast_end_writes_all_output_and_keeps_the_status() -> None:
    lines = "".join(f"line {i} {'x' * 50}\n" for i in range(20_000))
    done = run("plain", lines)
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines
    unplaced = run("plain", "{{{bt:0:0x1234}}}\n")  # no mmap: an error, status 1
    assert unplaced.stdout == "[[[bt:0:0x1234]]]\n"
    assert "no mmap covers address" in unplaced.stderr
    assert unplaced.returncode == 1
