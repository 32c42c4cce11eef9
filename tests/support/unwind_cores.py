"""Core files and reference backtraces from GDB, for the unwinder tests.

`capture_with_gdb` runs a program under `gdb -nx -batch` (which turns ASLR
off) to a breakpoint, writes a core with `gcore`, and records the frames
GDB's own unwinder finds there (walking `gdb.newest_frame().older()`):
their pcs and frame types. `fixture_programs` builds the programs of
tests/fixtures/src/unwind_*.c in the variants the tests compare.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.build import build_id_of, compile_program

GDB_FRAME_SCRIPT = """\
import gdb, json
names = {gdb.NORMAL_FRAME: "normal", gdb.SIGTRAMP_FRAME: "sigtramp", gdb.INLINE_FRAME: "inline",
         gdb.TAILCALL_FRAME: "tailcall", gdb.DUMMY_FRAME: "dummy"}

def frames_of_selected_thread():
    frames = []
    frame = gdb.newest_frame()
    while frame is not None:
        frames.append({"pc": frame.pc(), "type": names.get(frame.type(), str(frame.type())),
                       "name": frame.name()})
        frame = frame.older()
    return frames

selected = gdb.selected_thread()
result = {"frames": frames_of_selected_thread(), "threads": {}}
for thread in gdb.selected_inferior().threads():
    thread.switch()
    result["threads"][str(thread.ptid[1])] = frames_of_selected_thread()
selected.switch()
with open(OUT, "w") as out:
    json.dump(result, out)
"""


@dataclass(frozen=True)
class GdbFrame:
    pc: int
    type: str  # "normal", "sigtramp", "inline", ...
    name: str | None


@dataclass(frozen=True)
class GdbCapture:
    """A core written by gcore at a breakpoint, and GDB's frames there."""

    core: Path
    frames: list[GdbFrame]
    threads: dict[int, list[GdbFrame]]  # every thread's frames, by thread ID

    @property
    def pcs(self) -> list[int]:
        return [f.pc for f in self.frames]


def capture_with_gdb(
    program: Path,
    breakpoint: str,
    out_dir: Path,
    *,
    args: Sequence[str] = (),
    pass_signals: Sequence[str] = ("SIGILL",),
    name: str = "capture",
    timeout: float = 120,
) -> GdbCapture:
    """Run `program` to `breakpoint`, gcore it, and record GDB's frames."""
    out_dir.mkdir(parents=True, exist_ok=True)
    core = out_dir / f"{name}.core"
    frames_json = out_dir / f"{name}.frames.json"
    script = out_dir / f"{name}.frames.py"
    script.write_text(f"OUT = {str(frames_json)!r}\n" + GDB_FRAME_SCRIPT)
    cmd = ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off"]
    cmd += ["-ex", "set breakpoint pending on"]
    for signal in pass_signals:
        cmd += ["-ex", f"handle {signal} nostop noprint pass"]
    cmd += [
        "-ex", f"break {breakpoint}",
        "-ex", "run",
        "-ex", f"gcore {core}",
        "-x", str(script),
        "--args", str(program), *args,
    ]  # fmt: skip
    env = dict(os.environ, LC_ALL="C")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if not core.exists() or not frames_json.exists():
        raise RuntimeError(
            f"gdb did not stop at {breakpoint} in {program}:\n{proc.stdout}\n{proc.stderr}"
        )
    recorded = json.loads(frames_json.read_text())
    threads = {int(tid): _frames(frames) for tid, frames in recorded["threads"].items()}
    return GdbCapture(core, _frames(recorded["frames"]), threads)


def _frames(recorded: list[dict[str, object]]) -> list[GdbFrame]:
    return [
        GdbFrame(int(str(f["pc"])), str(f["type"]), f["name"] and str(f["name"])) for f in recorded
    ]


def gdb_frames_of_core(
    program: Path, core: Path, out_dir: Path, name: str = "core"
) -> list[GdbFrame]:
    """GDB's frames for an existing core file (e.g. one the kernel wrote)."""
    frames_json = out_dir / f"{name}.frames.json"
    script = out_dir / f"{name}.frames.py"
    script.write_text(f"OUT = {str(frames_json)!r}\n" + GDB_FRAME_SCRIPT)
    cmd = ["gdb", "-nx", "-batch", "-x", str(script), str(program), str(core)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if not frames_json.exists():
        raise RuntimeError(f"gdb could not read {core}:\n{proc.stdout}\n{proc.stderr}")
    return _frames(json.loads(frames_json.read_text())["frames"])


SFRAME_FLAGS = ("-g", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe")
FRAME_POINTER_FLAGS = ("-g", "-O0", "-fno-omit-frame-pointer")
STRIP_EH_FRAME = ("objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr")


def build_chain(flags: Sequence[str], *, strip_eh_frame: bool = False) -> Path:
    """unwind_chain with its library (same flags), optionally without .eh_frame."""
    return build_chain_and_library(flags, strip_eh_frame=strip_eh_frame)[0]


def build_chain_and_library(
    flags: Sequence[str], *, strip_eh_frame: bool = False
) -> tuple[Path, Path]:
    """(unwind_chain, libunwind_lib.so), built with `flags`."""
    post = [[*STRIP_EH_FRAME, "{out}"]] if strip_eh_frame else []
    suffix = "-noeh" if strip_eh_frame else ""
    lib = compile_program("libunwind_lib.so", ["unwind_lib.c"], flags=flags, shared=True, post=post)
    program = compile_program(
        f"unwind_chain{suffix}",
        ["unwind_chain.c"],
        flags=flags,
        link_flags=[str(lib), f"-Wl,-rpath,{lib.parent}"],
        post=post,
    )
    return program, lib


FUNCTION = re.compile(r"^\s+#(\d+)\s+0x[0-9a-f]+ (\S+)", re.MULTILINE)


def debug_directory(root: Path, binaries: list[Path]) -> Path:
    """A .build-id tree, so that llvm-symbolizer finds files by build ID."""
    for binary in binaries:
        build_id = build_id_of(binary)
        link = root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(binary)
    return root


def symbolize(markup: str, debug_dir: Path) -> list[tuple[int, str]]:
    tool = shutil.which("llvm-symbolizer-19")
    if tool is None:
        raise RuntimeError("llvm-symbolizer-19 is not installed; `make test` installs it")
    out = subprocess.run(
        [tool, "--filter-markup", f"--debug-file-directory={debug_dir}"],
        input=markup,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [(int(n), name) for n, name in FUNCTION.findall(out)]
