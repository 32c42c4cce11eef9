"""The SFrame unwinder inside GDB: full backtraces where GDB's own unwinding fails.

The oracle is GDB itself: its native backtrace of the same program built
with `.eh_frame` (ASLR off, so both runs have the same addresses; removing
`.eh_frame` moves no code). Without the plugin, GDB's backtrace of the
stripped copy breaks; with it, every frame's pc and function must equal the
native ones.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.gdb.conftest import (
    LIST_FRAMES,
    OPTIMIZED,
    SFRAME_FIXTURES,
    STRIP_CFI,
    Program,
    listed_frames,
    marked,
    run_gdb,
    section,
    stop_at,
)
from tests.support.build import compile_program, run

SCENARIOS = {
    "chain": ["dyn", "outer", "mid", "lib_call", "leaf", "stop_here"],
    "signal": ["sig_outer", "faulting", "__restore_rt", "on_sigill", "stop_here"],
    "recurse 40": ["recurse"] * 41 + ["stop_here"],
}


def frames_of(program: Path, args: str, *, plugin: bool, extra: tuple[str, ...] = ()) -> list:
    result = run_gdb([*stop_at(), *extra, LIST_FRAMES], program, args=[args], plugin=plugin)
    return listed_frames(result)


@pytest.mark.parametrize("args", list(SCENARIOS))
def test_stripped_binary_unwinds_like_gdb_on_the_original(
    gdb_path: str, program: Program, stripped_program: Program, args: str
) -> None:
    native = frames_of(program.exe, args, plugin=False)
    names = [name for _pc, name in native]
    expected = list(reversed(SCENARIOS[args]))
    assert names[: len(expected)] == expected, native
    broken = frames_of(stripped_program.exe, args, plugin=False)
    assert broken != native, "GDB alone should fail on the stripped binary"
    fixed = frames_of(stripped_program.exe, args, plugin=True)
    assert fixed == native


_BT_ELEMENT = re.compile(r"\{\{\{bt:\d+:(0x[0-9a-f]+):(pc|ra)\}\}\}")


@pytest.mark.parametrize("args", list(SCENARIOS))
def test_a_binary_only_sframe_can_unwind_unwinds_like_gdb_on_the_original(
    gdb_path: str, program: Program, sframe_only_program: Program, args: str
) -> None:
    """Built -fno-asynchronous-unwind-tables -Wa,--gsframe and stripped with
    `strip --strip-debug` (docs/gdb.md): the program's .eh_frame still covers crt's
    _start and the PLT, so the unwinder decides per pc, not per module. Oracle: the
    physical frames of GDB's own unwinding of the same sources built with CFI."""
    markup = section("markup", "stackmark bt --markup")

    def frames(built: Program) -> list[tuple[str, str]]:
        result = run_gdb([*stop_at(), *markup], built.exe, args=[args])
        return _BT_ELEMENT.findall(marked(result, "markup"))

    native = frames(program)  # CFI everywhere: the unwinder stays idle
    assert len(native) >= len(SCENARIOS[args]) - 1
    assert frames(sframe_only_program) == native
    broken = run_gdb(
        [*stop_at(), *section("bt", "bt")], sframe_only_program.exe, args=[args], plugin=False
    )
    assert " main " not in marked(broken, "bt"), "GDB alone should fail on this binary"


def test_status_says_who_unwinds_what_per_pc(gdb_path: str, sframe_only_program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("status", "stackmark unwinder status")],
        sframe_only_program.exe,
        args=["chain"],
    )
    status = {
        line.split()[0]: line.split(None, 1)[1].strip()
        for line in marked(result, "status").splitlines()
        if line.startswith("  ")
    }
    # .eh_frame covers _start and the PLT (2 of dbg_main's SFrame functions), nothing else.
    counts = re.fullmatch(
        r"sframe v1; unwound by stackmark where no CFI covers the pc "
        r"\((\d+) of (\d+) functions\), by GDB elsewhere",
        status["dbg_main"],
    )
    assert counts is not None, status
    assert int(counts[2]) - int(counts[1]) == 2
    assert status["libdbg_lib.so"] == "sframe v1; unwound by stackmark"
    assert status["libc.so.6"] == "no .sframe section; unwound by GDB"


def test_arguments_in_unsaved_registers_read_as_docs_gdb_md_says(
    gdb_path: str, stripped_program: Program
) -> None:
    """SFrame restores no callee-saved register: GDB prints an argument kept in one as
    `<optimized out>` and an entry value as an error reading it (docs/gdb.md)."""
    result = run_gdb(
        ["set print frame-arguments all", *stop_at(), *section("bt", "bt")],
        stripped_program.exe,
        args=["chain"],
    )
    lines = marked(result, "bt").splitlines()
    assert "x@entry=<error reading variable: value has been optimized out>" in lines[0]
    assert " in leaf (x=<optimized out>)" in lines[1]


def test_threads_every_thread_unwinds(
    gdb_path: str, program: Program, stripped_program: Program
) -> None:
    all_threads = [*stop_at(), f"thread apply all {LIST_FRAMES}"]
    native = listed_frames(run_gdb(all_threads, program.exe, args=["threads"], plugin=False))
    fixed = listed_frames(run_gdb(all_threads, stripped_program.exe, args=["threads"]))
    assert fixed == native
    assert sum(1 for _pc, name in native if name == "worker_block") == 2


def test_frames_are_unchanged_where_gdb_has_cfi(gdb_path: str, program: Program) -> None:
    """On a binary with .eh_frame the plugin leaves `bt` as it was, arguments and all."""
    commands = [
        "set print frame-arguments all",
        *stop_at(),
        *section("bt", "thread apply all bt"),
    ]

    def backtraces(args: str, **options: bool) -> str:
        text = marked(run_gdb(commands, program.exe, args=[args], **options), "bt")
        return re.sub(r"LWP \d+", "LWP N", text)

    for args in ("chain", "signal", "threads"):
        plain = backtraces(args, plugin=False)
        assert backtraces(args) == plain
        assert "stop_here (x=" in plain


def test_idle_where_nothing_needs_it(gdb_path: str, program: Program) -> None:
    """With CFI everywhere the unwinder is not even registered: GDB's unwinding does
    not call into Python per frame."""
    result = run_gdb(
        [
            *stop_at(),
            *section("status", "stackmark unwinder status"),
            *section("unwinders", "info unwinder"),
            "stackmark unwinder on --everywhere",
            *section("everywhere", "info unwinder"),
        ],
        program.exe,
    )
    assert "on, idle: no loaded module has frames for it" in marked(result, "status")
    assert "stackmark-sframe" not in marked(result, "unwinders")
    assert "stackmark-sframe" in marked(result, "everywhere")


def test_unwinder_off_and_status(gdb_path: str, stripped_program: Program) -> None:
    result = run_gdb(
        [
            *stop_at(),
            *section("status", "stackmark unwinder status"),
            "stackmark unwinder off",
            *section("off", LIST_FRAMES),
            "stackmark unwinder on",
            *section("on", LIST_FRAMES),
        ],
        stripped_program.exe,
    )
    status = marked(result, "status")
    assert "stackmark SFrame unwinder: on" in status
    assert "dbg_main  " in status and "sframe v1; unwound by stackmark" in status
    assert "libc.so.6" in status and "unwound by GDB" in status
    off = [line for line in marked(result, "off").splitlines() if line.startswith("FRAME ")]
    on = [line for line in marked(result, "on").splitlines() if line.startswith("FRAME ")]
    assert " main " in "".join(on) and " main " not in "".join(off)


def test_core_file(
    gdb_path: str, program: Program, stripped_program: Program, tmp_path: Path
) -> None:
    core = tmp_path / "dbg_main.core"
    run_gdb([*stop_at(), f"gcore {core}"], stripped_program.exe, plugin=False)
    assert core.exists()
    from_core = listed_frames(run_gdb([LIST_FRAMES], stripped_program.exe, core=core))
    native = frames_of(program.exe, "chain", plugin=False)
    assert from_core == native


def test_aslr_on(gdb_path: str, program: Program, stripped_program: Program) -> None:
    aslr = ("set disable-randomization off",)
    native = frames_of(program.exe, "chain", plugin=False)
    randomized = run_gdb(
        [*aslr, *stop_at(), LIST_FRAMES, "info proc mappings"], stripped_program.exe, args=["chain"]
    )
    frames = listed_frames(randomized)
    assert [name for _pc, name in frames] == [name for _pc, name in native]
    assert [pc for pc, _name in frames] != [pc for pc, _name in native]  # really moved


def fixture_copy(name: str, tmp_path: Path, *, strip: bool) -> Path:
    """A committed SFrame fixture (tests/fixtures/sframe), optionally without .eh_frame."""
    copy = tmp_path / (name + ("-stripped" if strip else ""))
    shutil.copy(SFRAME_FIXTURES / name, copy)
    if strip:
        run(["llvm-objcopy-19", *STRIP_CFI[1:], str(copy)])
    return copy


@pytest.mark.parametrize(
    ("fixture", "breakpoint"),
    [
        ("deep-x86_64-v1", "leaf"),
        ("deep-x86_64-v2", "leaf"),
        ("deep-x86_64-v3", "leaf"),
        ("edge-x86_64-v3", "realign"),  # flex FDE (DRAP), called from a signal handler
    ],
)
def test_committed_fixtures(gdb_path: str, tmp_path: Path, fixture: str, breakpoint: str) -> None:
    commands = ["handle SIGUSR1 nostop noprint pass", f"break {breakpoint}", "run"]
    commands += [*section("first", LIST_FRAMES), "continue", *section("second", LIST_FRAMES)]
    original = fixture_copy(fixture, tmp_path, strip=False)
    stripped = fixture_copy(fixture, tmp_path, strip=True)

    def both_stops(result: object) -> list[str]:
        return [marked(result, "first"), marked(result, "second")]  # type: ignore[arg-type]

    native = both_stops(run_gdb(commands, original, plugin=False))
    assert "main" in native[0]
    assert both_stops(run_gdb(commands, stripped, plugin=False)) != native
    assert both_stops(run_gdb(commands, stripped)) == native


UNWIND_FROM_BACKEND = "python exec({!r})".format(
    "from stackmark.debugger.target import BackendTarget\n"
    "from stackmark.unwind.unwinder import Unwinder\n"
    "from stackmark_gdb.backend import GdbBackend\n"
    "result = Unwinder(BackendTarget(GdbBackend())).unwind()\n"
    "for frame in result.frames:\n"
    "    print('UNWOUND', hex(frame.frame.address), frame.frame.kind.value)\n"
)


def test_core_unwinder_over_the_gdb_backend(
    gdb_path: str, program: Program, stripped_program: Program
) -> None:
    """The debugger-agnostic path (what LLDB, which has no unwinder hook, relies on):
    the core unwinder walking GDB's process through BackendTarget."""
    native = frames_of(program.exe, "signal", plugin=False)
    result = run_gdb(
        ["stackmark unwinder off", *stop_at(), UNWIND_FROM_BACKEND],
        stripped_program.exe,
        args=["signal"],
    )
    lines = result.stdout.splitlines()
    unwound = [line.split()[1:] for line in lines if line.startswith("UNWOUND")]
    addresses = [int(address, 16) for address, _kind in unwound]
    assert addresses[: len(native)] == [pc for pc, _name in native]
    assert [kind for _a, kind in unwound][:5] == ["pc", "ra", "pc", "pc", "ra"]


@pytest.mark.parametrize("gone", ["deleted", "renamed"])
def test_tables_from_memory_when_the_file_is_gone(
    gdb_path: str, program: Program, stripped_program: Program, tmp_path: Path, gone: str
) -> None:
    """A binary deleted (or renamed, or rebuilt) after it started: the module is found by
    its build ID in memory, its SFrame table read from the PT_GNU_SFRAME segment."""
    exe = tmp_path / "dbg_main"
    shutil.copy(stripped_program.exe, exe)
    result = run_gdb(
        [
            *stop_at(),
            f"shell rm {exe}" if gone == "deleted" else f"shell mv {exe} {exe}.gone",
            "stackmark unwinder on",  # drops what was loaded from the file
            *section("info", "stackmark sframe info"),
            *section("status", "stackmark unwinder status"),
            LIST_FRAMES,
        ],
        exe,
    )
    info = marked(result, "info")
    assert re.search(r"^dbg_main +SFrame v1 at 0x[0-9a-f]+:", info, re.M), info
    assert "sframe v1 (from memory); unwound by stackmark" in marked(result, "status")
    assert listed_frames(result) == frames_of(program.exe, "chain", plugin=False)


def test_stopped_in_inlined_code_right_after_a_stack_adjustment(gdb_path: str) -> None:
    """Frame 0 is an inlined call (level 0), the function it was inlined into is
    level 1 with the same, exact pc: at the inlined block's first instruction, right
    after `sub $n, %rsp`, only that pc's row (not pc - 1's) gives the right CFA."""

    def build(strip: bool) -> Path:
        post = [[*STRIP_CFI, "{out}"]] if strip else []
        return compile_program(
            "dbg_inline_start", ["dbg_inline_start.c"], flags=OPTIMIZED, post=post
        )

    original, stripped = build(False), build(True)
    stop = ["break inl", "run"]
    premise = run_gdb([*stop, *section("row", "stackmark sframe lookup $pc")], original)
    # The premise: the breakpoint is where a row starts (pc - 1 is in the one before).
    assert re.search(r"\+0x([0-9a-f]+): .* row \[0x\1,", marked(premise, "row")), premise.output
    native = listed_frames(run_gdb([*stop, LIST_FRAMES], original, plugin=False))
    assert [name for _pc, name in native] == ["inl", "outer2", "top", "main"]
    assert listed_frames(run_gdb([*stop, LIST_FRAMES], stripped, plugin=False)) != native
    assert listed_frames(run_gdb([*stop, LIST_FRAMES], stripped)) == native
