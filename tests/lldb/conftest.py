"""Fixtures for the LLDB plugin tests: the GDB tests' programs, and LLDB driven in batch mode.

Each test runs `lldb-19 -x -b` in a session of its own
(tests.support.sessions): -x keeps the user's ~/.lldbinit out, the plugin
is loaded with `command script import` as a user would, and the whole
session is killed afterwards (lldb-server and the inferior leave LLDB's
process group, so killing the group is not enough).

The programs (dbg_main + libdbg_lib.so) and the GDB driver come from
tests/gdb, so both plugins are tested on the same binaries; GDB is the
oracle for "prints the same as in GDB".

In batch mode LLDB echoes every command as `(lldb) COMMAND` on stdout
before its output; `command_output` splits the output at those lines.
LLDB stops a batch at the first failing command (and when the process
stops on a signal it does not pass: `stop_at` passes SIGILL and SIGUSR1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.gdb import conftest as gdb_conftest
from tests.support.build import REPO
from tests.support.sessions import Completed, clean_environment, run_in_session

# The GDB tests' fixtures, shared: the same binaries, and GDB as an oracle.
gdb_path = gdb_conftest.gdb_path
program = gdb_conftest.program
stripped_program = gdb_conftest.stripped_program

LOADER = REPO / "lldb_plugin" / "stackmark_lldb"
LLDB = "lldb-19"
LLDB_TIMEOUT = 90.0

PRELUDE = (
    "settings set use-color false",
    "settings set auto-confirm true",
    "settings set stop-line-count-before 0",
    "settings set stop-line-count-after 0",
)


@pytest.fixture(scope="session")
def lldb_path() -> str:
    return require_tool(LLDB)


def run_lldb(
    commands: Sequence[str],
    program: Path | None = None,
    *,
    plugin: bool = True,
    core: Path | None = None,
    timeout: float = LLDB_TIMEOUT,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    init_files: bool = False,
) -> Completed:
    """Run LLDB in batch mode: the prelude, the loader, the target, then `commands`."""
    cmd = [LLDB, "-b"] if init_files else [LLDB, "-x", "-b"]
    for command in PRELUDE:
        cmd += ["-o", command]
    if plugin:
        cmd += ["-o", f"command script import {LOADER}"]
    if program is not None:
        target = f"target create {program}"
        if core is not None:
            target += f" --core {core}"
        cmd += ["-o", target]
    for command in commands:
        cmd += ["-o", command]
    result = run_in_session(cmd, timeout=timeout, env=env or clean_environment(), cwd=cwd)
    assert not result.timed_out, f"lldb timed out:\n{result.output}"
    return result


def stop_at(breakpoint: str = "stop_here", args: Sequence[str] = ()) -> list[str]:
    """Commands that run the program to `breakpoint` (signals the programs use pass)."""
    launch = "process launch" + (" -- " + " ".join(args) if args else "")
    return [
        "process handle -s false -n false -p true SIGILL SIGUSR1",
        f"breakpoint set -n {breakpoint}",
        launch,
    ]


def command_output(result: Completed, command: str, occurrence: int = 0) -> str:
    """What `command` printed (its `occurrence`-th run), from LLDB's echoed stdout."""
    runs: list[list[str]] = []
    current: list[str] | None = None
    for line in result.stdout.splitlines():
        if line.startswith("(lldb) "):
            current = [] if line[len("(lldb) ") :] == command else None
            if current is not None:
                runs.append(current)
        elif current is not None:
            current.append(line)
    assert len(runs) > occurrence, f"no output of {command!r} in:\n{result.output}"
    return "".join(line + "\n" for line in runs[occurrence])


_FRAME = re.compile(
    r"^\s*\*?\s*frame #(?P<index>\d+): 0x(?P<pc>[0-9a-f]+)(?: (?P<module>[^`\s]+)`(?P<what>.*))?$"
)


@dataclass(frozen=True)
class LldbFrame:
    index: int
    pc: int
    module: str | None
    function: str | None  # the innermost name: the inlined function for an inlined frame


def parse_lldb_bt(text: str) -> list[LldbFrame]:
    """The frames of LLDB's `bt` output."""
    frames = []
    for line in text.splitlines():
        match = _FRAME.match(line)
        if not match:
            continue
        what = match["what"]
        function = None
        if what is not None:
            what = what.split(" [inlined] ")[-1]
            function = re.split(r"[( ]", what, maxsplit=1)[0]
        index, pc = int(match["index"]), int(match["pc"], 16)
        frames.append(LldbFrame(index, pc, match["module"], function))
    return frames
