"""AArch64: unwinding QEMU core dumps of the unwind_chain fixture, built with
return-address signing (-mbranch-protection=pac-ret) and run with PAC on
(-cpu max).

There is no AArch64 GDB here to compare with, so the oracle is the program
itself: the crash in `leaf` must unwind through exactly the call chain the
source makes, as `llvm-symbolizer --filter-markup` names the frames of our
markup. QEMU's cores have no NT_FILE note, so this also covers finding the
modules through the dynamic linker's list.
"""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.model import FrameKind
from stackmark.unwind.core import CoreFile, CoreTarget
from stackmark.unwind.emit import backtrace_markup
from stackmark.unwind.unwinder import BY_FRAME_POINTER, BY_SFRAME, Unwinder, UnwindResult
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.unwind_cores import debug_directory, symbolize

SYSROOT = "/usr/aarch64-linux-gnu"
CHAIN = ["leaf", "level3", "level2", "level1", "dyn", "lib_visit", "main"]
PAC = "-mbranch-protection=pac-ret"
BUILDS = {
    "sframe": ("-g", "-O2", "-fomit-frame-pointer", "-Wa,--gsframe", PAC),
    # GCC omits the frame record of leaf functions on AArch64 by default; a
    # frame-pointer walk from inside such a leaf cannot see its caller.
    "frame-pointer": ("-g", "-O0", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", PAC),
}


def build(flags: tuple[str, ...]) -> tuple[Path, Path]:
    compiler = require_tool("aarch64-linux-gnu-gcc")
    lib = compile_program(
        "libunwind_lib.so", ["unwind_lib.c"], compiler=compiler, flags=flags, shared=True
    )
    program = compile_program(
        "unwind_chain",
        ["unwind_chain.c"],
        compiler=compiler,
        flags=flags,
        link_flags=[str(lib), f"-Wl,-rpath,{lib.parent}"],
    )
    return program, lib


def qemu_core(program: Path, work: Path) -> Path:
    """Crash `program` in `leaf` under QEMU; QEMU writes the guest's core.

    A small guest stack keeps that core small; the core limit (2 MiB) also
    caps the core of QEMU itself, which the host kernel writes afterwards."""
    qemu = require_tool("qemu-aarch64-static")
    command = f"ulimit -c 2048; exec {qemu} -cpu max -s 262144 -L {SYSROOT} {program} crash"
    proc = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, check=False)
    assert proc.returncode in (-11, 139), proc.stderr
    cores = list(work.glob("qemu_*.core"))
    assert len(cores) == 1, f"QEMU wrote no core in {work}: {proc.stderr!r}"
    return cores[0]


def unwind(core: Path) -> tuple[UnwindResult, CoreFile]:
    opened = CoreFile(core, sysroot=SYSROOT)
    return Unwinder(CoreTarget(opened)).unwind(), opened


@pytest.mark.parametrize("variant", list(BUILDS))
def test_pac_signed_chain_unwinds_to_main(variant: str, tmp_path: Path) -> None:
    program, lib = build(BUILDS[variant])
    core_path = qemu_core(program, tmp_path)
    result, core = unwind(core_path)
    with core:
        assert core.arch.value == "aarch64"
        assert not any("not found" in w for w in core.warnings), core.warnings
        names = [m.name for m in core.modules]
        assert {"unwind_chain", "libunwind_lib.so", "libc.so.6"} <= set(names)

        # Our markup, symbolized by llvm-symbolizer from the binaries' own symbols.
        markup = "\n".join(backtrace_markup(core.modules, result.backtrace)) + "\n"
        functions = [
            name for _n, name in symbolize(markup, debug_directory(tmp_path / "d", [program, lib]))
        ]
        assert functions[: len(CHAIN)] == CHAIN, (functions, result.stop_reason)

        kinds = [f.frame.kind for f in result.frames[: len(CHAIN)]]
        assert kinds == [FrameKind.PC] + [FrameKind.RA] * (len(CHAIN) - 1)
        expected_note = BY_SFRAME if variant == "sframe" else BY_FRAME_POINTER
        assert all(f.frame.note.startswith(expected_note) for f in result.frames[1 : len(CHAIN)])

        # The premise: return addresses were saved signed on the stack.
        sp = core.threads[0].registers.values[31]
        top = result.frames[len(CHAIN) - 1].cfa
        assert top is not None
        stack = core.read_memory(sp, top - sp)
        words = struct.unpack(f"<{len(stack) // 8}Q", stack[: len(stack) // 8 * 8])
        returns = {f.frame.address for f in result.frames[1 : len(CHAIN)]}
        signed = [w for w in words if w >> 48 and w & 0xFFFF_FFFF_FFFF in returns]
        assert signed, "no PAC-signed return address on the stack: PAC was not in use"


def test_unwind_command_with_sysroot(tmp_path: Path) -> None:
    program, lib = build(BUILDS["sframe"])
    core_path = qemu_core(program, tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "unwind", "--sysroot", SYSROOT, str(core_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    functions = [
        name for _n, name in symbolize(proc.stdout, debug_directory(tmp_path / "d", [program, lib]))
    ]
    assert functions[: len(CHAIN)] == CHAIN
    assert re.search(r"\{\{\{module:\d+:libc\.so\.6:elf:[0-9a-f]{40}\}\}\}", proc.stdout)
