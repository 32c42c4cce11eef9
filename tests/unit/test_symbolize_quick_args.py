"""`stackmark symbolize` parses its common command lines without argparse.

`parse_quick` must give exactly what argparse gives, or step aside (None)
so that argparse parses the line and prints its help and errors. The start
of a symbolize run must not import argparse, pyelftools or cxxfilt.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.cli import symbolize
from stackmark.cli.main import command_parser

REPO = Path(__file__).resolve().parents[2]


def with_argparse(argv: list[str]) -> dict[str, object] | None:
    """argparse's arguments for `argv`, or None when it refuses them (or prints help)."""
    parser = command_parser("symbolize", symbolize)
    parser.exit = lambda status=0, message=None: (_ for _ in ()).throw(ValueError(message))  # type: ignore[method-assign]
    try:
        return dict(vars(parser.parse_args(argv)))
    except (ValueError, SystemExit):
        return None


def quick(argv: list[str]) -> dict[str, object] | None:
    args = symbolize.parse_quick(argv)
    return None if args is None else dict(vars(args))


COMMON = [
    [],
    ["log.txt"],
    ["-"],
    ["--debug-file-directory", "/d", "--debug-file-directory=/e", "a.log"],
    ["--gsym-cache=off", "--compat=llvm19"],
    ["--gsym-cache", "build", "--gsym-cache-dir", "/c", "x", "y"],
    ["--color", "--functions", "--no-demangle"],
    ["--colour=never", "--functions=short", "--demangle", "-C", "-s"],
    ["--relativenames", "--output-style=JSON"],
    ["--obj", "/bin/a", "--exe=/bin/b", "--symbol-path", "/p", "--filter-markup"],
    ["--debuginfod-url", "http://x", "--offline", "--no-debuginfod", "--debuginfod"],
    ["--debuginfod-cache=/c", "--output-dir", "out", "a", "b"],
    ["a", "b", "--gsym-cache=use"],
    ["--gsym-cache-dir="],
    ["--fail-on-unresolved", "crash.log"],
]


@pytest.mark.parametrize("argv", COMMON)
def test_common_lines_match_argparse(argv: list[str]) -> None:
    expected = with_argparse(argv)
    assert expected is not None
    assert quick(argv) == expected


REFUSED_OR_HELP = [
    ["--help"],
    ["-h"],
    ["--bogus"],
    ["--gsym-cache=maybe"],
    ["--debug-file-dir=/d"],  # an abbreviation: argparse's business
    ["a", "--color", "b"],
    ["--basenames", "--relativenames"],
    ["--debug-file-directory"],
    ["--debug-file-directory", "-x"],
    ["--offline=yes"],
    ["--", "a"],
    ["-j", "2"],
    ["--debuginfod-timeout", "5"],
    ["-eX"],
]


@pytest.mark.parametrize("argv", REFUSED_OR_HELP)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    assert quick(argv) is None


tokens = st.sampled_from(
    [
        "a",
        "b.log",
        "-",
        "--",
        "-x",
        "-C",
        "-s",
        "-e",
        "-o",
        "--color",
        "--color=always",
        "--colour=bad",
        "--functions",
        "--functions=none",
        "--gsym-cache",
        "off",
        "--gsym-cache=build",
        "--gsym-cache-dir",
        "--debug-file-directory",
        "--debug-file-directory=/d",
        "--obj",
        "--exe=/x",
        "--output-style",
        "Json",
        "--compat",
        "llvm19",
        "--basenames",
        "--relativenames",
        "--no-demangle",
        "--demangle",
        "--offline",
        "--fail-on-unresolved",
        "--debuginfod-url=http://h",
        "--output-dir",
        "--help",
        "",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(tokens, max_size=8))
def test_never_differs_from_argparse(argv: list[str]) -> None:
    found = quick(argv)
    if found is not None:
        assert found == with_argparse(argv)


def test_a_run_imports_neither_argparse_nor_pyelftools_nor_cxxfilt(tmp_path: Path) -> None:
    """A symbolize run with the common options, through the DWARF of a real C++
    program (a name to demangle): what it imports."""
    from stackmark.elf import ElfFile
    from stackmark.symbols.symtab import SymbolTable
    from tests.support.build import build_id_of, compile_program

    binary = compile_program("markup_cpp", ["markup_cpp.cpp"], compiler="g++", flags=["-g", "-O1"])
    build_id = build_id_of(binary)
    with ElfFile.open(binary) as elf:
        function = next(e for e in SymbolTable(elf).entries if e.name.startswith("_Z") and e.size)
    debug_dir = tmp_path / "debug"
    target = debug_dir / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    target.parent.mkdir(parents=True)
    os.symlink(binary, target)
    log = (
        "{{{reset}}}\n"
        f"{{{{{{module:0:shapes:elf:{build_id}}}}}}}\n"
        "{{{mmap:0x7f0000000000:0x10000000:load:0:rx:0x0}}}\n"
        f"crash {{{{{{bt:0:0x{0x7F0000000000 + function.address:x}:pc}}}}}}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "stackmark",
            "symbolize",
            f"--debug-file-directory={debug_dir}",
            "--gsym-cache=off",
            "--compat=llvm19",
        ],
        input=log,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
    )
    assert "#0" in proc.stdout and "(" in proc.stdout.splitlines()[-1], proc.stdout
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "stackmark.dwarf.reader" in imported  # the run did read DWARF
    # argparse, pyelftools and cxxfilt take 10-90 ms each to import; dataclasses
    # (with inspect) about 10 ms, plus a millisecond per class (stackmark/plain.py).
    for module in ("argparse", "elftools", "cxxfilt", "dataclasses"):
        assert module not in imported, module
