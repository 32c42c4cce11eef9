"""llvm-cxxfilt-19 as the oracle of LLVM's demangling."""

from __future__ import annotations

import subprocess

from tests.conftest import require_tool


def cxxfilt(names: list[str]) -> list[str]:
    """What llvm-cxxfilt-19 prints for each name, in order (unchanged when it cannot
    demangle one)."""
    out = subprocess.run(
        [require_tool("llvm-cxxfilt-19")],
        input="\n".join(names) + "\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


UNDNAME_SYMBOLIZER_FLAGS = (
    "--no-access-specifier",
    "--no-calling-convention",
    "--no-member-type",
    "--no-return-type",
)
"""The flags llvm-symbolizer gives LLVM's Microsoft demangler for function names."""


def undname(names: list[str], *flags: str) -> list[str | None]:
    """What llvm-undname-19 prints for each Microsoft name, in order (None where it
    reports an invalid name). It answers each input line with the line, its
    expansion (or an error) and a blank line."""
    proc = subprocess.run(
        [require_tool("llvm-undname-19"), *flags],
        input="\n".join(names) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr  # 1: some name was invalid
    out = proc.stdout
    answers: list[str | None] = []
    for block in out.split("\n\n"):
        lines = block.strip("\n").split("\n")
        if lines == [""]:
            continue
        answers.append(lines[1] if len(lines) == 2 else None)
    assert len(answers) == len(names), out
    return answers
