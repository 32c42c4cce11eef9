"""Builds of the `sym_*` fixture sources, one function per variant (cached by build.py).

Each returns the path of the program; variants differ in optimization,
PIE, DWARF version, compression, stripping and split debug information.
Split-DWARF builds are compiled in place (the `.dwo` path is recorded at
compile time, and build.py moves its outputs).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from tests.support.build import CACHE, SOURCES, compile_program, run

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


LOCAL_CLASSES_SOURCE = "sym_local_classes.cpp"


def local_classes_program(*flags: str, name: str = "sym_local_classes") -> Path:
    """sym_local_classes.cpp built with g++ and `flags` (default: -g -O2)."""
    return compile_program(
        name, [LOCAL_CLASSES_SOURCE], compiler="g++", flags=flags or ("-g", "-O2")
    )


def local_classes_stripped() -> tuple[Path, Path]:
    """(binary stripped of every symbol, its .debug file) for sym_local_classes.cpp: no
    .symtab name can stand in for DWARF the reader fails to find."""
    binary = compile_program(
        "sym_local_classes_stripped",
        [LOCAL_CLASSES_SOURCE],
        compiler="g++",
        flags=("-g", "-O2"),
        post=(
            ("objcopy", "--only-keep-debug", "{out}", "{out}.debug"),
            ("objcopy", "--strip-all", "--add-gnu-debuglink={out}.debug", "{out}"),
        ),
    )
    return binary, binary.with_name(binary.name + ".debug")


def freestanding_32bit(*flags: str) -> Path:
    """sym_freestanding.c as a 32-bit x86 program (-m32 -nostdlib -static), -g -O2."""
    return compile_program(
        "sym_freestanding32" + "".join(f.replace("-", "_") for f in flags),
        ["sym_freestanding.c"],
        flags=("-m32", "-nostdlib", "-static", "-g", "-O2", *flags),
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


def inlined_call_discriminators(directory: Path) -> Path:
    """sym_inline.c (-g -O2) with DW_AT_GNU_discriminator 3 on every inlined call.

    gcc 12 and clang 19 do not write the attribute (the discriminator of the
    frame that made an inlined call), so gcc's assembly is changed: each
    DW_TAG_inlined_subroutine abbreviation gains it as a DW_FORM_implicit_const,
    which keeps every DIE (and every offset) as it was."""
    assembly = directory / "sym_inline.s"
    run(["gcc", "-g", "-O2", "-S", "-dA", SOURCES / C_SOURCE, "-o", assembly])
    lines = assembly.read_text().split("\n")
    out: list[str] = []
    in_abbrev = False
    for index, line in enumerate(lines):
        if "(TAG: DW_TAG_inlined_subroutine)" in line:
            in_abbrev = True
        ends = line.strip() == ".byte\t0" and lines[index + 1].strip() == ".byte\t0"
        if in_abbrev and ends:  # the (0, 0) pair that ends its attribute list
            out += ["\t.uleb128 0x2136", "\t.uleb128 0x21", "\t.sleb128 3"]
            in_abbrev = False
        out.append(line)
    assembly.write_text("\n".join(out))
    program = directory / "sym_inline_discriminators"
    run(["gcc", "-g", assembly, "-o", program])
    return program


def split_dwarf(source: str, *flags: str, directory: Path | None = None) -> Path:
    """`source` compiled with -gsplit-dwarf, cached under build/test-fixtures (or built
    afresh in `directory`, for tests that change the files).

    Compiled in its final directory (build.py renames its outputs, which would
    leave the .dwo path recorded in the skeleton pointing nowhere); a marker
    file says the build finished."""
    flags = flags or ("-g", "-O2")
    compiler = "g++" if source.endswith(".cpp") else "gcc"
    key = hashlib.sha256(
        "\0".join([source, compiler, *flags]).encode() + (SOURCES / source).read_bytes()
    ).hexdigest()[:16]
    directory = directory or CACHE / f"split-{Path(source).stem}-{key}"
    out = directory / (Path(source).stem + "-split")
    done = directory / ".complete"
    if done.exists():
        return out
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SOURCES / source, directory / source)
    run(
        [compiler, "-gsplit-dwarf", *flags, source, "-o", out.name, "-Wl,--build-id=sha1"],
        cwd=directory,
    )
    done.write_text("")
    return out
