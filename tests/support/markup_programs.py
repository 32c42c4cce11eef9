"""Markup logs from real programs, and the two filters to run on them.

The fixture programs (tests/fixtures/src/markup_*) print symbolizer markup
about themselves; `program_log(variant)` builds one variant, runs it and
returns its log together with a debug-file directory (`.build-id` tree)
that holds what both llvm-symbolizer and stackmark need. `llvm()` and
`stackmark()` run the two filters on the same bytes.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stackmark.elf import ElfFile
from tests.support.build import REPO, compile_program

LLVM = "llvm-symbolizer-19"


@dataclass(frozen=True)
class Output:
    stdout: bytes
    stderr: bytes
    status: int

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def llvm(log: bytes, *options: str) -> Output:
    proc = subprocess.run(
        [LLVM, "--filter-markup", *options], input=log, capture_output=True, check=False
    )
    return Output(proc.stdout, proc.stderr, proc.returncode)


# The runs get a cache directory of their own (GSYM entries, downloads), so
# that nothing built elsewhere answers for them.
_CACHE_HOME = tempfile.mkdtemp(prefix="stackmark-test-cache-")
atexit.register(shutil.rmtree, _CACHE_HOME, True)


def stackmark(log: bytes, *options: str) -> Output:
    env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
    env["XDG_CACHE_HOME"] = _CACHE_HOME
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", *options],
        input=log,
        capture_output=True,
        check=False,
        cwd=REPO,
        env=env,
    )
    return Output(proc.stdout, proc.stderr, proc.returncode)


def build_id(path: Path) -> str:
    with ElfFile.open(path) as elf:
        found = elf.build_id
    assert found, f"{path} has no build ID"
    return found


def add_to_debug_dir(debug_dir: Path, binary: Path, as_file: Path | None = None) -> Path:
    """Put `as_file` (default: `binary`) at DIR/.build-id/xx/rest.debug for `binary`'s ID."""
    ident = build_id(binary)
    target = debug_dir / ".build-id" / ident[:2] / f"{ident[2:]}.debug"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(as_file or binary, target)
    return target


@dataclass(frozen=True)
class ProgramLog:
    """A fixture program's log and where its symbols are."""

    name: str
    log: bytes
    program: Path
    library: Path | None
    debug_dir: Path

    @property
    def debug_option(self) -> str:
        return f"--debug-file-directory={self.debug_dir}"


def library() -> Path:
    return compile_program("libmarkup_lib.so", ["markup_lib.c"], flags=("-g", "-O2"), shared=True)


def _c_program(name: str, flags: Sequence[str], post: Sequence[Sequence[str]] = ()) -> Path:
    lib = library()
    return compile_program(
        name,
        ["markup_prog.c"],
        flags=flags,
        link_flags=(str(lib), f"-Wl,-rpath,{lib.parent}"),
        post=post,
    )


SPLIT = (
    ("objcopy", "--only-keep-debug", "{out}", "{out}.debug"),
    ("strip", "--strip-debug", "{out}"),
)

VARIANTS = ("pie", "nopie", "cpp", "split", "nodebug", "stripped")


def build_variant(variant: str) -> tuple[Path, Path | None, Path]:
    """(program, library or None, the file to put in the debug dir for the program)."""
    if variant == "pie":
        program = _c_program("markup_prog", ("-g", "-O2"))
        return program, library(), program
    if variant == "nopie":
        program = _c_program("markup_prog_nopie", ("-g", "-O2", "-no-pie", "-fno-pie"))
        return program, library(), program
    if variant == "split":
        program = _c_program("markup_prog_split", ("-g", "-O2"), post=SPLIT)
        return program, library(), program.with_name(program.name + ".debug")
    if variant == "nodebug":
        program = _c_program("markup_prog_nodebug", ("-O2",))
        return program, library(), program
    if variant == "stripped":
        program = _c_program("markup_prog_stripped", ("-O2",), post=(("strip", "{out}"),))
        return program, library(), program
    if variant == "cpp":
        program = compile_program(
            "markup_cpp", ["markup_cpp.cpp"], compiler="g++", flags=("-g", "-O2")
        )
        return program, None, program
    raise ValueError(variant)


def program_log(variant: str, work: Path) -> ProgramLog:
    """Build `variant`, run it once, and lay out its debug-file directory under `work`."""
    program, lib, debug_file = build_variant(variant)
    proc = subprocess.run([str(program)], capture_output=True, check=True)
    debug_dir = work / f"debug-{variant}"
    add_to_debug_dir(debug_dir, program, debug_file)
    if lib is not None:
        add_to_debug_dir(debug_dir, lib)
    return ProgramLog(variant, proc.stdout, program, lib, debug_dir)
