"""Fixtures for the GDB plugin tests: the programs, and GDB driven in batch mode.

Each test runs `gdb -nx -batch` in a session of its own (tests.support.sessions):
-nx keeps the user's ~/.gdbinit out, the plugin is loaded with `source
loader.py` as a user would, and the whole session is killed afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.build import REPO, compile_program
from tests.support.sessions import Completed, clean_environment, run_in_session

LOADER = REPO / "gdb_plugin" / "stackmark_gdb" / "loader.py"
SFRAME_FIXTURES = REPO / "tests" / "fixtures" / "sframe"
GDB_TIMEOUT = 90.0

OPTIMIZED = ("-g", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe")
STRIP_CFI = ("objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr")
# A binary only SFrame can unwind, built as docs/gdb.md says: no unwind tables for its
# own functions (.eh_frame keeps crt's _start and the PLT), debug sections stripped.
SFRAME_ONLY = (*OPTIMIZED, "-fno-asynchronous-unwind-tables")
STRIP_DEBUG = ("strip", "--strip-debug")


@dataclass(frozen=True)
class Program:
    """dbg_main and the libdbg_lib.so it is linked against."""

    exe: Path
    lib: Path


def build_program(
    *, strip_cfi: bool, flags: Sequence[str] = OPTIMIZED, strip_debug: bool = False
) -> Program:
    """Build dbg_main (PIE) + libdbg_lib.so; `strip_cfi` removes .eh_frame from both,
    `strip_debug` the debug sections (.debug_frame among them)."""
    post = [[*STRIP_CFI, "{out}"]] if strip_cfi else []
    if strip_debug:
        post.append([*STRIP_DEBUG, "{out}"])
    lib = compile_program("libdbg_lib.so", ["dbg_lib.c"], flags=flags, shared=True, post=post)
    exe = compile_program(
        "dbg_main",
        ["dbg_main.c"],
        flags=[*flags, "-fPIE", "-pie", "-pthread"],
        link_flags=[f"-L{lib.parent}", "-ldbg_lib", f"-Wl,-rpath,{lib.parent}"],
        post=post,
    )
    return Program(exe, lib)


@pytest.fixture(scope="session")
def gdb_path() -> str:
    return require_tool("gdb")


@pytest.fixture(scope="session")
def program() -> Program:
    """-O2 -fomit-frame-pointer, SFrame v1, with .eh_frame."""
    return build_program(strip_cfi=False)


@pytest.fixture(scope="session")
def sframe_only_program() -> Program:
    """The same sources, built with SFRAME_ONLY and `strip --strip-debug`: CFI for
    crt's _start and the PLT only."""
    return build_program(strip_cfi=False, flags=SFRAME_ONLY, strip_debug=True)


@pytest.fixture(scope="session")
def stripped_program() -> Program:
    """The same sources and flags, with .eh_frame and .eh_frame_hdr removed."""
    return build_program(strip_cfi=True)


PRELUDE = (
    "set pagination off",
    "set confirm off",
    "set width 0",
    "set debuginfod enabled off",
    "set print frame-arguments none",
)


def run_gdb(
    commands: Sequence[str],
    program: Path | None = None,
    *,
    args: Sequence[str] = (),
    plugin: bool = True,
    core: Path | None = None,
    timeout: float = GDB_TIMEOUT,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Completed:
    """Run GDB in batch mode: the prelude, the loader, then `commands`."""
    cmd = ["gdb", "-nx", "-q", "-batch"]
    for command in PRELUDE:
        cmd += ["-ex", command]
    if plugin:
        cmd += ["-ex", f"source {LOADER}"]
    if program is not None:
        cmd += ["-ex", f"file {program}"]
        if args:
            cmd += ["-ex", "set args " + " ".join(args)]
    if core is not None:
        cmd += ["-ex", f"core-file {core}"]
    for command in commands:
        cmd += ["-ex", command]
    result = run_in_session(cmd, timeout=timeout, env=env or clean_environment(), cwd=cwd)
    assert not result.timed_out, f"gdb timed out:\n{result.output}"
    return result


def stop_at(breakpoint: str = "stop_here", *extra: str) -> list[str]:
    """Commands that run to `breakpoint` (SIGILL, used by `dbg_main signal`, passes)."""
    return ["handle SIGILL nostop noprint pass", f"break {breakpoint}", "run", *extra]


_BT_LINE = re.compile(
    r"^#(?P<level>\d+)\s+(?:(?P<address>0x[0-9a-f]+) in )?"
    r"(?P<function><signal handler called>|[^\s(]+)"
)


@dataclass(frozen=True)
class GdbFrame:
    level: int
    address: int | None  # None when GDB printed no address (frame 0, inlined callee...)
    function: str


def parse_bt(text: str) -> list[GdbFrame]:
    """The frames of GDB's `bt` output."""
    frames = []
    for line in text.splitlines():
        match = _BT_LINE.match(line)
        if match:
            address = int(match["address"], 16) if match["address"] else None
            frames.append(GdbFrame(int(match["level"]), address, match["function"]))
    return frames


def marked(result: Completed, marker: str) -> str:
    """The output between `echo <marker>-begin` and `echo <marker>-end` commands."""
    text = result.stdout
    begin, end = f"{marker}-begin\n", f"{marker}-end\n"
    assert begin in text and end in text, f"no {marker} section in:\n{result.output}"
    return text.split(begin, 1)[1].split(end, 1)[0]


def section(marker: str, *commands: str) -> list[str]:
    """GDB commands whose output `marked(result, marker)` returns."""
    return [f"echo {marker}-begin\\n", *commands, f"echo {marker}-end\\n"]


LIST_FRAMES = "python exec({!r})".format(
    "frame = gdb.newest_frame()\n"
    "while frame is not None:\n"
    "    print('FRAME', hex(frame.pc()), frame.name(), frame.type())\n"
    "    try:\n"
    "        frame = frame.older()\n"
    "    except gdb.error as exc:\n"
    "        print('FRAME-ERROR', exc)\n"
    "        break\n"
)
"""A GDB command printing `FRAME pc name type` for every frame GDB unwinds."""


def listed_frames(result: Completed) -> list[tuple[int, str | None]]:
    """(pc, function) of each frame LIST_FRAMES printed."""
    frames = []
    for line in result.stdout.splitlines():
        if line.startswith("FRAME "):
            _, pc, name, _type = line.split(" ", 3)
            frames.append((int(pc, 16), None if name == "None" else name))
    return frames
