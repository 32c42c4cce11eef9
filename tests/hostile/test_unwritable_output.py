"""A full disk under the output: one clear error, status 2, no traceback, and the
input is not blamed (a write error used to be reported as the input's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.build import REPO

LOG = b"".join(b"line %d {{{bt:0:0x10}}}\n" % i for i in range(20_000))


@pytest.mark.parametrize("style", ["llvm", "json"])
def test_a_full_disk_under_stdout_is_one_clear_error(style: str) -> None:
    if not Path("/dev/full").exists():
        pytest.fail("/dev/full is missing: the test needs Linux's always-full device")
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "stackmark", "symbolize", f"--output-style={style}"],
            input=LOG,
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=REPO,
            check=False,
        )
    said = proc.stderr.decode()
    assert proc.returncode == 2, said[-2000:]
    assert "Traceback" not in said and "Exception ignored" not in said
    assert said.rstrip().endswith(
        "stackmark symbolize: error: writing the output: No space left on device"
    )
    assert "<stdin>: No space left" not in said
