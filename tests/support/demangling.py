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
