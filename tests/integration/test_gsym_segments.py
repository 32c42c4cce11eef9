"""`gsym convert --segment-size` against llvm-gsymutil-19: the same segment
files (names and bytes), the same log, the same refusal of a size too small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.gsymutil import GSYMUTIL

STACKMARK_CONVERT = [sys.executable, "-m", "stackmark", "gsym", "convert"]


def _program() -> Path:
    return compile_program(
        "gsym_segments", ["gsym_inline.c", "gsym_inline_b.c"], flags=("-g", "-O2")
    )


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, env=env)


@pytest.mark.parametrize("segment_size", [200, 700, 100000])
def test_segments_are_llvms_files_byte_for_byte(segment_size: int, tmp_path: Path) -> None:
    program = _program()
    (tmp_path / "llvm").mkdir()
    (tmp_path / "ours").mkdir()
    option = f"--segment-size={segment_size}"
    # One thread: llvm's string table order then does not depend on its scheduling.
    llvm_command = [require_tool(GSYMUTIL), "--convert", str(program), "--num-threads=1"]
    llvm = _run([*llvm_command, "-o", "llvm/x.gsym", option], tmp_path)
    ours = _run([*STACKMARK_CONVERT, str(program), "-o", "ours/x.gsym", option], tmp_path)
    assert llvm.returncode == ours.returncode == 0
    assert ours.stdout.replace("ours/", "llvm/") == llvm.stdout
    llvm_files = sorted(p.name for p in (tmp_path / "llvm").iterdir())
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == llvm_files
    assert not (tmp_path / "ours" / "x.gsym").exists()
    if segment_size == 200:
        assert len(llvm_files) > 3  # the case is one of several segments
    for name in llvm_files:
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "llvm" / name).read_bytes()


def test_a_segment_size_too_small_for_any_function_fails_as_in_llvm(tmp_path: Path) -> None:
    program = _program()
    ours = _run([*STACKMARK_CONVERT, str(program), "-o", "x.gsym", "--segment-size=50"], tmp_path)
    assert ours.returncode == 1
    assert (
        "a segment size of 50 is to small to fit any function infos, specify a larger value"
        in ours.stderr
    )
    assert "Traceback" not in ours.stderr
