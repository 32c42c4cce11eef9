"""llvm-gsymutil-19 as an oracle: convert a binary, look addresses up."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import require_tool

GSYMUTIL = "llvm-gsymutil-19"


def llvm_convert(binary: Path, out: Path) -> Path:
    """`llvm-gsymutil-19 --convert binary -o out`; returns `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [require_tool(GSYMUTIL), "--convert", str(binary), "-o", str(out)],
        capture_output=True,
        check=True,
    )
    return out


def llvm_lookups(gsym: Path, addresses: list[int]) -> str:
    """What `llvm-gsymutil-19 --addresses-from-stdin` prints for `addresses` in `gsym`."""
    return subprocess.run(
        [require_tool(GSYMUTIL), "--addresses-from-stdin"],
        input="".join(f"0x{a:x} {gsym}\n" for a in addresses),
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def llvm_lookup_blocks(gsym: Path, addresses: list[int]) -> list[str]:
    """`llvm_lookups` cut into one block of lines per address."""
    return llvm_lookups(gsym, addresses).split("\n\n")[: len(addresses)]


def llvm_convert_run(
    binary: Path, out: Path, *options: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`llvm-gsymutil-19 --convert binary -o out --num-threads=1 [options]`, not
    checked: its exit status, stdout (the log) and stderr (the error)."""
    return subprocess.run(
        [
            require_tool(GSYMUTIL),
            "--convert",
            str(binary),
            "-o",
            str(out),
            "--num-threads=1",
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
