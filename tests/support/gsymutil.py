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


def llvm_lookup_blocks(gsym: Path, addresses: list[int]) -> list[str]:
    """What llvm-gsymutil-19 prints for each address (`--addresses-from-stdin`),
    one block of lines per address."""
    text = subprocess.run(
        [require_tool(GSYMUTIL), "--addresses-from-stdin"],
        input="".join(f"{a:#x} {gsym}\n" for a in addresses),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return text.split("\n\n")[: len(addresses)]
