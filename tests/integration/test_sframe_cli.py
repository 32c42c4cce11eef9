"""`stackmark sframe` as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.elf import ElfFile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sframe"


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", "sframe", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("name", ["deep-x86_64-v1", "edge-x86_64-v3", "a64-aarch64-v2"])
def test_dump_prints_what_objdump_printed(name: str) -> None:
    release = {"1": "2.40", "2": "2.44", "3": "2.47"}[name[-1]]
    proc = _run("dump", name, cwd=FIXTURES)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (FIXTURES / f"{name}.objdump-{release}.txt").read_text()


def test_dump_style_option() -> None:
    proc = _run("dump", "--style=2.47", "deep-x86_64-v2", cwd=FIXTURES)
    assert proc.stdout == (FIXTURES / "deep-x86_64-v2.objdump-2.47.txt").read_text()
    proc = _run("dump", "--style=2.40", "deep-x86_64-v3", cwd=FIXTURES)
    assert proc.returncode == 1
    assert "cannot display SFrame version 3" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_lookup_names_the_function_and_rules() -> None:
    binary = FIXTURES / "edge-x86_64-v3"
    with ElfFile.open(binary) as elf:
        symbols = {s.name: s.value for s in elf.symbols()}
    drap = symbols["drap"]
    proc = _run("lookup", str(binary), hex(drap + 5), hex(symbols["sigtramp_like"]), "0x1")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1  # one PC is not covered
    assert lines[0].startswith(f"0x{drap + 5:x}: FDE ") and " drap " in lines[0]
    assert lines[1].strip() == "CFA = r10+0; RA = *(CFA-8); FP = unchanged"
    assert lines[3].strip().endswith("[signal frame]")
    assert lines[4] == "0x1: no SFrame row covers this address"


def test_bad_input_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"not an elf file at all")
    for args in (
        ("dump", str(junk)),
        ("lookup", str(junk), "0x10"),
        ("generate", str(junk), "-o", str(tmp_path / "o")),
    ):
        proc = _run(*args)
        assert proc.returncode == 1, args
        assert "Traceback" not in proc.stderr and str(junk) in proc.stderr
    proc = _run("generate", str(FIXTURES / "deep-x86_64-v1"), "-o", str(tmp_path / "x"))
    assert proc.returncode == 1 and "already has an .sframe section" in proc.stderr
    proc = _run("lookup", str(FIXTURES / "deep-x86_64-v1"), "zzz")
    assert proc.returncode == 2 and "not an address" in proc.stderr


def test_generate_raw_section(tmp_path: Path) -> None:
    from stackmark.formats.sframe.reader import parse_sframe

    out = tmp_path / "raw.sframe"
    proc = _run(
        "generate", str(FIXTURES / "edge-x86_64-v3"), "-o", str(out), "--raw", "--address", "0x930"
    )
    assert proc.returncode == 0, proc.stderr
    assert "SFrame v3 from .eh_frame" in proc.stdout
    section = parse_sframe(out.read_bytes(), 0x930)
    assert any(f.is_flex for f in section.fdes)
