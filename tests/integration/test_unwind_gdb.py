"""Our unwinder over core files against GDB's own backtrace of the same stop.

Each program runs under GDB to a breakpoint in a deep leaf; GDB writes a
core (gcore) and lists its frames. The unwinder, reading only that core
and the binaries it names, must find the same frame pcs, in order, at
least as far as GDB goes (GDB stops at `main`), and mark frame 0 and
interrupted frames `pc`, callers `ra`.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from stackmark.formats import cbf
from stackmark.model import FrameKind
from stackmark.unwind.core import CoreFile, CoreTarget
from stackmark.unwind.unwinder import BY_FRAME_POINTER, BY_SFRAME, Unwinder, UnwindResult
from tests.conftest import require_tool
from tests.support.build import REPO, compile_program
from tests.support.unwind_cores import (
    FRAME_POINTER_FLAGS,
    SFRAME_FLAGS,
    STRIP_EH_FRAME,
    GdbCapture,
    GdbFrame,
    build_chain,
    capture_with_gdb,
    gdb_frames_of_core,
)

SFRAME_FIXTURES = REPO / "tests" / "fixtures" / "sframe"


def unwind_core(core: Path) -> UnwindResult:
    with CoreFile(core) as opened:
        return Unwinder(CoreTarget(opened)).unwind()


def expected_kinds(frames: list[GdbFrame]) -> list[FrameKind]:
    """Frame 0, signal trampolines and the frames they interrupted are precise."""
    kinds = []
    for i, frame in enumerate(frames):
        precise = i == 0 or frame.type == "sigtramp" or frames[i - 1].type == "sigtramp"
        kinds.append(FrameKind.PC if precise else FrameKind.RA)
    return kinds


def assert_matches_gdb(result: UnwindResult, gdb_frames: list[GdbFrame]) -> None:
    """Tail-call and inline frames are GDB's reconstructions from debug info,
    with no stack frame of their own: an unwinder cannot (and should not) see them."""
    reference = [f for f in gdb_frames if f.type not in ("tailcall", "inline")]
    ours = [f.frame.address for f in result.frames]
    wanted = [f.pc for f in reference]
    names = [f.name for f in reference]
    assert ours[: len(wanted)] == wanted, (
        f"ours {[hex(a) for a in ours]}\ngdb  {[hex(a) for a in wanted]} {names}\n"
        f"stopped: {result.stop_reason}"
    )
    kinds = [f.frame.kind for f in result.frames[: len(wanted)]]
    assert kinds == expected_kinds(reference)


@pytest.fixture(scope="module")
def gdb() -> str:
    return require_tool("gdb")


@pytest.fixture(scope="module")
def sframe_chain(gdb: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GdbCapture]:
    program = build_chain(SFRAME_FLAGS)
    capture = capture_with_gdb(program, "leaf", tmp_path_factory.mktemp("chain"))
    return program, capture


def test_sframe_chain_matches_gdb(sframe_chain: tuple[Path, GdbCapture]) -> None:
    _program, capture = sframe_chain
    names = [f.name for f in capture.frames]
    assert names == ["leaf", "level3", "level2", "level1", "dyn", "lib_visit", "main"]
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)
    # Every caller up to main was found through SFrame, across both modules.
    assert [f.frame.note for f in result.frames[1 : len(names)]] == [BY_SFRAME] * (len(names) - 1)
    # Past main (libc has no SFrame) the walk ends cleanly, with a reason.
    assert len(result.frames) < 20 and result.stop_reason


def test_stripped_eh_frame_matches_gdb_on_the_unstripped_binary(
    sframe_chain: tuple[Path, GdbCapture], tmp_path: Path
) -> None:
    """Without .eh_frame GDB guesses; SFrame alone must give GDB's unstripped answer."""
    _program, reference = sframe_chain
    stripped = build_chain(SFRAME_FLAGS, strip_eh_frame=True)
    with ElfFile.open(stripped) as elf:
        assert elf.section(".eh_frame") is None and elf.section(".sframe") is not None
    capture = capture_with_gdb(stripped, "leaf", tmp_path)
    result = unwind_core(capture.core)
    assert_matches_gdb(result, reference.frames)


def test_frame_pointer_chain_matches_gdb(gdb: str, tmp_path: Path) -> None:
    """Built without SFrame (-O0, frame pointers): the frame-pointer fallback."""
    program = build_chain(FRAME_POINTER_FLAGS)
    capture = capture_with_gdb(program, "leaf", tmp_path)
    assert [f.name for f in capture.frames][-1] == "main"
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)
    notes = [f.frame.note for f in result.frames[1 : len(capture.frames)]]
    assert all(note.startswith(BY_FRAME_POINTER) and "no .sframe" in note for note in notes)


@pytest.mark.parametrize("flags", [SFRAME_FLAGS, FRAME_POINTER_FLAGS], ids=["sframe", "fp"])
def test_signal_frames_match_gdb(gdb: str, tmp_path: Path, flags: tuple[str, ...]) -> None:
    program = compile_program("unwind_signal", ["unwind_signal.c"], flags=flags)
    capture = capture_with_gdb(program, "leaf", tmp_path)
    types = [f.type for f in capture.frames]
    assert "sigtramp" in types, "GDB saw no signal frame: the fixture is not testing anything"
    interrupted = capture.frames[types.index("sigtramp") + 1]
    assert interrupted.name == "faulting"
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)
    # The interrupted frame's pc is the trapping instruction itself (ud2).
    with CoreFile(capture.core) as core:
        assert core.read_memory(interrupted.pc, 2) == b"\x0f\x0b"


def test_recursion_matches_gdb_and_compresses_with_rep(gdb: str, tmp_path: Path) -> None:
    program = compile_program("unwind_recurse", ["unwind_recurse.c"], flags=SFRAME_FLAGS)
    capture = capture_with_gdb(program, "leaf", tmp_path, args=["300"])
    assert len(capture.frames) == 303  # leaf, 301 x recurse, main
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)
    frames = result.backtrace[: len(capture.frames)]
    encoded = cbf.encode(frames)
    # 300 identical return addresses: one ra and one external rep.
    assert len(encoded) < 40
    assert cbf.decode(encoded).frames == [f.__class__(f.kind, f.address) for f in frames]


def test_kernel_core_matches_gdb(tmp_path: Path) -> None:
    """A core the kernel wrote (text segments left out) for a SIGSEGV in leaf."""
    require_tool("gdb")
    pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    if pattern.startswith("|"):
        pytest.skip(f"core dumps go to a helper here ({pattern}), not to a file")
    program = build_chain(SFRAME_FLAGS)
    proc = subprocess.run(
        ["bash", "-c", f"ulimit -c unlimited; exec {program} crash"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -11 or proc.returncode == 139
    cores = [p for p in tmp_path.iterdir() if p.name.startswith("core")]
    assert len(cores) == 1, f"expected one core file in {tmp_path}, found {cores}"
    reference = gdb_frames_of_core(program, cores[0], tmp_path)
    assert [f.name for f in reference][:2] == ["leaf", "level3"]
    result = unwind_core(cores[0])
    assert_matches_gdb(result, reference)


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_committed_sframe_binaries_match_gdb(gdb: str, tmp_path: Path, version: str) -> None:
    """The SFrame fixtures linked by binutils 2.40 (v1), 2.44 (v2), 2.47 (v3)."""
    program = tmp_path / f"deep-{version}"
    program.write_bytes((SFRAME_FIXTURES / f"deep-x86_64-{version}").read_bytes())
    program.chmod(0o755)
    capture = capture_with_gdb(program, "leaf", tmp_path)
    assert [f.name for f in capture.frames][-1] == "main"
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_committed_binaries_without_eh_frame_match_gdb(
    gdb: str, tmp_path: Path, version: str
) -> None:
    """The same fixtures with .eh_frame stripped: SFrame alone gives GDB's frames
    of the unstripped binary (the stop is at the same pcs: stripping moves no code)."""
    program = tmp_path / f"deep-{version}"
    program.write_bytes((SFRAME_FIXTURES / f"deep-x86_64-{version}").read_bytes())
    program.chmod(0o755)
    reference = capture_with_gdb(program, "leaf", tmp_path / "reference")
    stripped = tmp_path / f"deep-{version}-noeh"
    subprocess.run([*STRIP_EH_FRAME, str(program), str(stripped)], check=True)
    with ElfFile.open(stripped) as elf:
        assert elf.section(".eh_frame") is None and elf.section(".sframe") is not None
    result = unwind_core(capture_with_gdb(stripped, "leaf", tmp_path / "stripped").core)
    assert_matches_gdb(result, reference.frames)
    assert [f.name for f in reference.frames][-1] == "main"


def test_v3_flex_fde_drap_frame_matches_gdb(gdb: str, tmp_path: Path) -> None:
    """v3 describes the stack-realigning `drap` with a flex FDE (CFA = *(rbp-8))."""
    program = tmp_path / "edge-v3"
    program.write_bytes((SFRAME_FIXTURES / "edge-x86_64-v3").read_bytes())
    program.chmod(0o755)
    capture = capture_with_gdb(program, "realign", tmp_path, pass_signals=("SIGUSR1",))
    names = [f.name for f in capture.frames]
    assert names[:2] == ["realign", "drap"]  # on_signal tail-calls drap
    # Up to and including the frame the signal interrupted (inside libc's raise).
    upto = [f.type for f in capture.frames].index("sigtramp") + 2
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames[:upto])


def test_stripped_copy_is_where_gdb_fails(
    sframe_chain: tuple[Path, GdbCapture], tmp_path: Path
) -> None:
    """Keeps the premise of the stripped test honest: GDB itself cannot unwind
    the -O2 chain without .eh_frame (its prologue analyser guesses an rbp frame)."""
    _program, reference = sframe_chain
    stripped = build_chain(SFRAME_FLAGS, strip_eh_frame=True)
    capture = capture_with_gdb(stripped, "leaf", tmp_path)
    assert capture.pcs != reference.pcs


def test_every_thread_matches_gdb(gdb: str, tmp_path: Path) -> None:
    program = compile_program(
        "unwind_threads", ["unwind_threads.c"], flags=SFRAME_FLAGS, link_flags=["-pthread"]
    )
    capture = capture_with_gdb(program, "leaf", tmp_path)
    assert len(capture.threads) == 4
    with CoreFile(capture.core) as core:
        assert {t.tid for t in core.threads} == set(capture.threads)
        for index, thread in enumerate(core.threads):
            reference = capture.threads[thread.tid]
            result = Unwinder(CoreTarget(core, index)).unwind()
            if reference[0].name == "spin":
                # spin, worker, then libc's start_thread (no SFrame past it)
                assert [f.name for f in reference[:2]] == ["spin", "worker"]
                assert_matches_gdb(result, reference[:3])
            else:
                assert [f.name for f in reference] == ["leaf", "main"]
                assert_matches_gdb(result, reference)


GENERATED_FROM_EH_FRAME = ("-g", "-O2", "-fomit-frame-pointer")
GENERATED_FROM_DEBUG_FRAME = (
    "-g",
    "-O2",
    "-fomit-frame-pointer",
    "-fno-asynchronous-unwind-tables",
)


def _chain_with_generated_sframe(flags: tuple[str, ...], *, strip_eh_frame: bool) -> Path:
    """unwind_chain and its library built without --gsframe, then given an .sframe
    section by `stackmark sframe generate`; optionally the program is stripped of
    .eh_frame (not the library: there .eh_frame fills a whole PT_LOAD, and objcopy
    leaves an empty, misaligned segment that ld.so refuses to load)."""
    generate = [sys.executable, "-m", "stackmark", "sframe", "generate", "{out}", "-o", "{out}.g"]
    # The generator's source is part of the build recipe, so a change rebuilds the fixtures.
    sources = sorted((REPO / "stackmark" / "formats" / "sframe").glob("*.py"))
    generator = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    post = [["true", f"generator-{generator}"], generate, ["mv", "{out}.g", "{out}"]]
    variant = "-noeh" if strip_eh_frame else ""
    if "-fno-asynchronous-unwind-tables" in flags:
        variant += "-debug-frame"
    lib = compile_program("libunwind_lib.so", ["unwind_lib.c"], flags=flags, shared=True, post=post)
    return compile_program(
        f"unwind_chain_generated{variant}",
        ["unwind_chain.c"],
        flags=flags,
        link_flags=[str(lib), f"-Wl,-rpath,{lib.parent}"],
        post=[*post, [*STRIP_EH_FRAME, "{out}"]] if strip_eh_frame else post,
    )


def test_generated_sframe_without_eh_frame_matches_gdb(gdb: str, tmp_path: Path) -> None:
    """Built without --gsframe: SFrame generated from .eh_frame, then .eh_frame stripped.
    Our unwinder gives GDB's frames on the copy that still has .eh_frame."""
    reference = capture_with_gdb(
        _chain_with_generated_sframe(GENERATED_FROM_EH_FRAME, strip_eh_frame=False),
        "leaf",
        tmp_path / "reference",
    )
    assert [f.name for f in reference.frames][-1] == "main"
    stripped = _chain_with_generated_sframe(GENERATED_FROM_EH_FRAME, strip_eh_frame=True)
    with ElfFile.open(stripped) as elf:
        assert elf.section(".eh_frame") is None and elf.section(".sframe") is not None
    result = unwind_core(capture_with_gdb(stripped, "leaf", tmp_path / "stripped").core)
    assert_matches_gdb(result, reference.frames)
    depth = len(reference.frames)
    assert [f.frame.note for f in result.frames[1:depth]] == [BY_SFRAME] * (depth - 1)


def test_generated_sframe_from_debug_frame_matches_gdb(gdb: str, tmp_path: Path) -> None:
    """-fno-asynchronous-unwind-tables: the program's functions are described only in
    .debug_frame (the C runtime's in .eh_frame); SFrame generated from both."""
    program = _chain_with_generated_sframe(GENERATED_FROM_DEBUG_FRAME, strip_eh_frame=False)
    with ElfFile.open(program) as elf:
        assert elf.section(".debug_frame") is not None
    capture = capture_with_gdb(program, "leaf", tmp_path)
    assert [f.name for f in capture.frames][-1] == "main"
    result = unwind_core(capture.core)
    assert_matches_gdb(result, capture.frames)
    depth = len(capture.frames)
    assert [f.frame.note for f in result.frames[1:depth]] == [BY_SFRAME] * (depth - 1)
