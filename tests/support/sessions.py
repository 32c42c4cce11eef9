"""Run a debugger (or anything that spawns helpers) and leave nothing behind.

A debugger starts the inferior in a process group of its own, and LLDB's
lldb-server even starts a new session for it, so
killing the child or its process group is not enough. Each command runs in
a new session (`start_new_session=True`); on timeout and after a normal
exit, every process whose /proc/<pid>/stat session ID is that session is
killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Completed:
    """What a command printed and how it ended."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def session_members(sid: int) -> list[int]:
    """PIDs of the live (non-zombie) processes in session `sid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...; comm may contain spaces or ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


def kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` (the leader included)."""
    for _ in range(5):  # a dying debugger may still fork; repeat until empty
        members = session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def run_in_session(
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdin_text: str | None = None,
) -> Completed:
    """Run `args` in a new session; kill the whole session when done or timed out."""
    proc = subprocess.Popen(
        list(args),
        stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    timed_out = False
    try:
        stdout, stderr = proc.communicate(stdin_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(proc.pid)
        stdout, stderr = proc.communicate()
    finally:
        kill_session(proc.pid)
    return Completed(list(args), proc.returncode, stdout, stderr, timed_out)


def clean_environment(**overrides: str) -> dict[str, str]:
    """The test environment for a debugger: no Python path leaks, C locale, dumb terminal."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(LC_ALL="C.UTF-8", TERM="dumb", COLUMNS="200")
    env.pop("STACKMARK_VENV", None)
    env.pop("DEBUGINFOD_URLS", None)
    env.update(overrides)
    return env
