"""Builds of the `sym_*` fixture sources, one function per variant (cached by build.py).

Each returns the path of the program; variants differ in optimization,
PIE, DWARF version, compression, stripping and split debug information.
Split-DWARF builds are made in a caller-given directory, because the
`.dwo` path is recorded at compile time and build.py moves its outputs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.build import SOURCES, compile_program, run

C_SOURCE = "sym_inline.c"
CPP_SOURCE = "sym_templates.cpp"


def c_program(*flags: str, name: str = "sym_inline") -> Path:
    """sym_inline.c built with gcc and `flags` (default: -g -O2)."""
    return compile_program(name, [C_SOURCE], flags=flags or ("-g", "-O2"))


def cpp_program(*flags: str, name: str = "sym_templates") -> Path:
    """sym_templates.cpp built with g++ and `flags` (default: -g -O2)."""
    return compile_program(name, [CPP_SOURCE], compiler="g++", flags=flags or ("-g", "-O2"))


def aarch64_program() -> Path:
    """sym_inline.c cross-compiled for AArch64 (-g -O2): another machine, with mapping
    symbols ($x, $d) in its symbol table."""
    from tests.conftest import require_tool

    return compile_program(
        "sym_inline_a64",
        [C_SOURCE],
        compiler=require_tool("aarch64-linux-gnu-gcc"),
        flags=("-g", "-O2"),
    )


def shared_library() -> Path:
    """libsymlib.so from sym_lib.c (-g -O2)."""
    return compile_program("libsymlib.so", ["sym_lib.c"], flags=("-g", "-O2"), shared=True)


def library_user() -> Path:
    """sym_lib_main.c linked against `shared_library()`."""
    lib = shared_library()
    return compile_program(
        "sym_lib_main",
        ["sym_lib_main.c"],
        flags=("-g", "-O2"),
        link_flags=(f"-L{lib.parent}", "-lsymlib", f"-Wl,-rpath,{lib.parent}"),
    )


def stripped_with_debuglink(*flags: str) -> tuple[Path, Path]:
    """(stripped binary, its .debug file) for sym_inline.c: the debug file made with
    objcopy --only-keep-debug, the binary stripped of everything and linked to it."""
    binary = compile_program(
        "sym_inline_stripped",
        [C_SOURCE],
        flags=flags or ("-g", "-O2"),
        post=(
            ("objcopy", "--only-keep-debug", "{out}", "{out}.debug"),
            ("objcopy", "--strip-all", "--add-gnu-debuglink={out}.debug", "{out}"),
        ),
    )
    return binary, binary.with_name(binary.name + ".debug")


def split_dwarf(directory: Path, source: str, *flags: str) -> Path:
    """`source` compiled with -gsplit-dwarf inside `directory` (so the .dwo is found)."""
    directory.mkdir(parents=True, exist_ok=True)
    src = directory / source
    shutil.copyfile(SOURCES / source, src)
    compiler = "g++" if source.endswith(".cpp") else "gcc"
    out = directory / (Path(source).stem + "-split")
    run(
        [
            compiler,
            "-gsplit-dwarf",
            *(flags or ("-g", "-O2")),
            src.name,
            "-o",
            out.name,
            "-Wl,--build-id=sha1",
        ],
        cwd=directory,
    )
    return out
