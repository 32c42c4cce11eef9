"""llvm-symbolizer-19 as an oracle: run it on many addresses, and compare frames.

`llvm_frames(binary, addresses)` runs the tool once in its plain address
mode (JSON, inlining on, names raw or demangled) and returns, per
address, the list of (function, file, line, column) it reports, innermost
first. `our_frames` gives stackmark's answer in the same shape.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from stackmark.elf import ElfFile
from stackmark.model import SourceFrame

Frame = tuple[str, str, int, int]


def llvm_frames(
    binary: Path | str,
    addresses: Sequence[int],
    *,
    demangle: bool = False,
    extra: Sequence[str] = (),
) -> dict[int, list[Frame]]:
    """{address: [(function, file, line, column), ...]} as llvm-symbolizer-19 reports them.

    Unknown names and files come out as "" (JSON's rendering of "??")."""
    cmd = [
        "llvm-symbolizer-19",
        f"--obj={binary}",
        "--output-style=JSON",
        "--inlining",
        *extra,
    ]
    if not demangle:
        cmd.append("--no-demangle")
    text = "".join(f"0x{a:x}\n" for a in addresses)
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True, check=True)
    result: dict[int, list[Frame]] = {}
    for line, address in zip(proc.stdout.splitlines(), addresses, strict=True):
        record = json.loads(line)
        frames = [
            (s["FunctionName"], s["FileName"], s["Line"], s["Column"]) for s in record["Symbol"]
        ]
        if frames == [("", "", 0, 0)]:
            frames = []
        result[address] = frames
    return result


def as_llvm_frame(frame: SourceFrame, demangled: str | None = None) -> Frame:
    """A stackmark frame in llvm's JSON shape (raw name unless `demangled` is given)."""
    name = demangled if demangled is not None else (frame.function or "")
    return (name, frame.file or "", frame.line, frame.column)


def line_table_addresses(binary: Path | str, limit: int | None = None) -> list[int]:
    """Every distinct address that starts a line-table row (not end_sequence rows),
    read with llvm-dwarfdump-19 (an independent reader)."""
    out = subprocess.run(
        ["llvm-dwarfdump-19", "--debug-line", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    addresses: set[int] = set()
    for line in out.splitlines():
        if line.startswith("0x") and "end_sequence" not in line:
            try:
                addresses.add(int(line.split()[0], 16))
            except ValueError:
                continue
    result = sorted(a for a in addresses if a)
    if limit is not None and len(result) > limit:
        step = len(result) / limit
        result = [result[int(i * step)] for i in range(limit)]
    return result


def function_addresses(binary: Path | str) -> list[int]:
    """Start, middle and last byte of every sized function symbol (symbol-table tests)."""
    elf = ElfFile.open(binary)
    out: set[int] = set()
    for sym in elf.symbols():
        if sym.type == 2 and sym.size and sym.value:
            out.update((sym.value, sym.value + sym.size // 2, sym.value + sym.size - 1))
    return sorted(out)


def mismatches(
    expected: dict[int, list[Frame]], actual: dict[int, list[Frame]]
) -> list[tuple[int, list[Frame], list[Frame]]]:
    """(address, llvm's frames, ours) wherever they differ."""
    return [(a, expected[a], actual.get(a, [])) for a in expected if expected[a] != actual.get(a)]


def describe(diffs: Iterable[tuple[int, list[Frame], list[Frame]]], limit: int = 5) -> str:
    lines = []
    for n, (address, theirs, ours) in enumerate(diffs):
        if n >= limit:
            lines.append("...")
            break
        lines.append(f"0x{address:x}:\n  llvm: {theirs}\n  ours: {ours}")
    return "\n".join(lines)
