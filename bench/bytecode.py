"""Measure stackmark as it runs once installed: with its bytecode compiled.

A Python started with `PYTHONDONTWRITEBYTECODE` set (some shells and CI
images set it) never writes `__pycache__`, so every process it starts
compiles stackmark's modules from source again: some 40 ms of a
one-line `stackmark symbolize` run, which an installed stackmark (pip
compiles on install; an editable checkout writes its cache on the first
run) never pays. The benchmarks therefore compile the project once and
clear the variable for the processes they start.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("stackmark", "server", "gdb_plugin", "lldb_plugin")


def prepare() -> None:
    """Compile the project's packages and let child processes use (and write) bytecode."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for package in PACKAGES:
        path = REPO / package
        if path.is_dir():
            compileall.compile_dir(str(path), quiet=1)
