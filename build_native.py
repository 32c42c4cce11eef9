"""Build stackmark's compiled accelerator: every `stackmark/_native/_*.c` becomes the
extension module `stackmark._native._*` (CPython C API, no other dependency).

Used two ways:

* by the wheel build (`hatch_build.py`, so `pip install .`, `pip wheel .` and the
  editable install all build it), and
* by hand or by `make`, to rebuild the modules in place after editing a C file:

      python build_native.py          # compile into stackmark/_native/
      python build_native.py --clean  # remove the compiled modules again

Without a working C compiler nothing fails: one line says so, and stackmark runs
its pure-Python implementation (`stackmark --version` tells which one is active).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NATIVE = ROOT / "stackmark" / "_native"
NOTICE = "stackmark: {reason}; installing the pure-Python implementation only"


_LIBRARIES = {"_demangle": ("-l:libstdc++.so.6",)}
"""Libraries a module links with, beyond Python's (`__cxa_demangle` is libstdc++'s; by
its runtime name, so that the C++ development files are not needed). Such a module
is optional: when it cannot be built, the others still are, and the ctypes path
runs instead."""


def sources(native: Path = NATIVE) -> list[Path]:
    """The C files that are extension modules (headers and other files are not)."""
    return sorted(native.glob("_*.c"))


def module_path(source: Path, out_dir: Path) -> Path:
    """Where the compiled module of `source` goes: `_dwarf.c` -> `_dwarf.cpython-311-....so`."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    return out_dir / (source.stem + suffix)


def _compiler() -> list[str] | None:
    configured = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    command = shlex.split(configured)
    if command and shutil.which(command[0]):
        return command
    return None


def build(out_dir: Path, native: Path = NATIVE) -> list[Path] | str:
    """Compile every module into `out_dir`: the files made, or why nothing was
    (a one-line reason; nothing half-built is left behind)."""
    cc = _compiler()
    if cc is None:
        return "no C compiler found"
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").is_file():
        return f"no Python.h in {include} (install the Python development headers)"
    made: list[Path] = []
    for source in sources(native):
        target = module_path(source, out_dir)
        partial = target.with_name(target.name + ".part")
        command = [
            *cc,
            "-shared",
            "-fPIC",
            "-O2",
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-fno-strict-aliasing",
            f"-I{include}",
            f"-I{native}",
            str(source),
            *_LIBRARIES.get(source.stem, ()),
            "-o",
            str(partial),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0 and source.stem in _LIBRARIES:
            # An optional module: its pure-Python twin runs instead.
            partial.unlink(missing_ok=True)
            first = (result.stderr.strip().splitlines() or ["(no message)"])[0]
            sys.stderr.write(f"stackmark: {source.name} not built ({first})\n")
            continue
        if result.returncode != 0:
            partial.unlink(missing_ok=True)
            for done in made:
                done.unlink(missing_ok=True)
            first = (result.stderr.strip().splitlines() or ["(no message)"])[0]
            return f"compiling {source.name} failed ({first})"
        if result.stderr.strip():
            sys.stderr.write(result.stderr)  # warnings: shown, not fatal
        partial.replace(target)
        made.append(target)
    return made


def clean(native: Path = NATIVE) -> None:
    for source in sources(native):
        module_path(source, native).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if argv[1:] == ["--clean"]:
        clean()
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    clean()  # a failed build must not leave an older module in place
    outcome = build(NATIVE)
    if isinstance(outcome, str):
        print(NOTICE.format(reason=outcome), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
