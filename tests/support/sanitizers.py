"""Programs built with clang-19's sanitizers, and their reports.

`build_*` compile the fixtures (tests/fixtures/src/sanitizer_*) with the
sanitizer and debug info; `report()` runs one with the environment a
sanitizer reads its symbolizer from, and returns what it printed on stderr.
`frame_lines()` keeps the lines two reports of the same crash must share:
stack frames (`#N 0x... in FUNCTION FILE:LINE:COLUMN`, the address masked,
since ASLR moves it between runs) and the lines that name a source place.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support.build import compile_program

CLANG = "clang-19"
LLVM_SYMBOLIZER = "llvm-symbolizer-19"
OURS = Path(sys.executable).parent / "llvm-symbolizer-stackmark"
"""The console script, installed beside the Python that runs the tests."""

_RUNTIME_ADDRESS = re.compile(r"(?<!\+)0x[0-9a-f]{6,16}\b")
_KEPT = re.compile(
    r"^\s*#\d+ |runtime error:|SUMMARY:|global variable|Location is global|"
    r"is located in stack|This frame has|\) '\w+' \(line"
)


def build_asan() -> tuple[Path, Path]:
    """(program, library): ASan, the library loaded from where it was built."""
    library = compile_program(
        "libsanitizer_stock.so",
        ["sanitizer_lib.c"],
        compiler=CLANG,
        flags=("-g", "-O1", "-fno-optimize-sibling-calls", "-fsanitize=address"),
        shared=True,
    )
    program = compile_program(
        "sanitizer_asan",
        ["sanitizer_asan.c"],
        compiler=CLANG,
        flags=("-g", "-O1", "-fno-optimize-sibling-calls", "-fsanitize=address"),
        link_flags=(str(library), f"-Wl,-rpath,{library.parent}"),
    )
    return program, library


def build_ubsan() -> Path:
    return compile_program(
        "sanitizer_ubsan",
        ["sanitizer_ubsan.c"],
        compiler=CLANG,
        flags=("-g", "-O1", "-fno-optimize-sibling-calls", "-fsanitize=undefined"),
    )


def build_tsan() -> Path:
    return compile_program(
        "sanitizer_tsan",
        ["sanitizer_tsan.c"],
        compiler=CLANG,
        flags=("-g", "-O1", "-fno-optimize-sibling-calls", "-fsanitize=thread"),
        link_flags=("-pthread",),
    )


def report(
    program: Path, *args: str, env: Mapping[str, str], cache_home: Path | None = None
) -> str:
    """What the sanitized `program` printed on stderr, run with `env` added."""
    run_env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("SAN_OPTIONS")
        and not k.endswith("_SYMBOLIZER_PATH")
        and k not in ("DEBUGINFOD_URLS", "LLVM_SYMBOLIZER_OPTS")
    }
    if cache_home is not None:
        run_env["XDG_CACHE_HOME"] = str(cache_home)  # our GSYM cache: nothing from elsewhere
    run_env.update(env)
    proc = subprocess.run(
        [str(program), *args],
        capture_output=True,
        text=True,
        env=run_env,
        timeout=120,
        check=False,
    )
    return proc.stderr


def frame_lines(text: str) -> list[str]:
    """The report's frame and source-place lines, runtime addresses masked."""
    return [_RUNTIME_ADDRESS.sub("0x…", line) for line in text.splitlines() if _KEPT.search(line)]
