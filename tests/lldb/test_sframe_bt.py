"""`stackmark sframe-bt`: the SFrame unwinder's backtrace in LLDB, where LLDB's own fails.

The oracle is GDB's native unwinding of the *unstripped* binary (the same
code and addresses: removing `.eh_frame` moves no code, and ASLR is off in
both debuggers), shown folded into physical frames by the GDB plugin's
`stackmark bt --markup` (the binary has CFI, so the GDB plugin's own SFrame
unwinder leaves its frames to GDB), and GDB's `bt` for the names.

The case LLDB 19 gets wrong: the v3 fixture whose
`drap` realigns its stack through a DRAP register (an SFrame v3 flex
FDE), with `.eh_frame` stripped, stopped in `realign` called from `drap`
called from a SIGUSR1 handler: LLDB's backtrace breaks after the
trampoline.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gdb.conftest import Program, marked, run_gdb, section
from tests.gdb.conftest import stop_at as gdb_stop_at
from tests.gdb.test_bt import bt_elements
from tests.gdb.test_symbolize import functions, gdb_names
from tests.gdb.test_unwinder import fixture_copy
from tests.lldb.conftest import command_output, parse_lldb_bt, run_lldb, stop_at
from tests.support.build import REPO

DRAP_FIXTURE = "edge-x86_64-v3"
SFRAME_BT = ("stackmark sframe-bt --markup", "stackmark sframe-bt")
FROM_CFI = ("stackmark sframe-bt --markup --from-cfi", "stackmark sframe-bt --from-cfi")
STOP_REASON = re.compile(r"^\(unwinding stopped: (.*)\)$", re.MULTILINE)


def gdb_reference(binary: Path, stop: list[str], stops: int) -> list[tuple[str, str]]:
    """(`stackmark bt --markup`, `bt`) in GDB at each of `stops` breakpoint hits."""
    commands = list(stop)
    for i in range(stops):
        if i:
            commands.append("continue")
        commands += section(f"markup{i}", "stackmark bt --markup") + section(f"bt{i}", "bt")
    result = run_gdb(commands, binary)
    return [(marked(result, f"markup{i}"), marked(result, f"bt{i}")) for i in range(stops)]


def drap_commands(stops: int) -> list[str]:
    commands = stop_at("realign")
    for i in range(stops):
        if i:
            commands.append("process continue")
        commands += ["bt", *SFRAME_BT, *FROM_CFI]
    return commands


def test_drap_behind_a_signal_handler_unwinds_where_lldb_fails(
    lldb_path: str, gdb_path: str, tmp_path: Path
) -> None:
    original = fixture_copy(DRAP_FIXTURE, tmp_path, strip=False)
    stripped = fixture_copy(DRAP_FIXTURE, tmp_path, strip=True)
    gdb_stop = ["handle SIGUSR1 nostop noprint pass", "break realign", "run"]
    reference = gdb_reference(original, gdb_stop, stops=3)
    result = run_lldb(drap_commands(3), stripped)
    assert "Traceback" not in result.output

    # Stop 1 (in the handler): LLDB's own backtrace breaks after the trampoline.
    gdb_markup, gdb_bt = reference[0]
    expected = bt_elements(gdb_markup)
    interrupted = ["realign", "drap", "__restore_rt", "__pthread_kill_implementation"]
    assert gdb_names(gdb_bt)[:4] == interrupted
    native = parse_lldb_bt(command_output(result, "bt", 0))
    assert [f.pc for f in native[:3]] == [pc for _n, pc, _k in expected[:3]]
    assert native[3].pc != expected[3][1]  # LLDB lost the interrupted frame
    # sframe-bt: realign (SFrame), drap (flex FDE), the trampoline, and the interrupted
    # frame from the kernel's signal context; then libc, which has neither SFrame nor
    # frame pointers, ends the walk (and says so).
    ours = bt_elements(command_output(result, SFRAME_BT[0], 0))
    assert ours == expected[:4]
    listing = command_output(result, SFRAME_BT[1], 0)
    assert functions(listing) == gdb_names(gdb_bt)[:4]
    assert "libc.so.6: no .sframe section" in STOP_REASON.findall(listing)[0]
    assert "libc.so.6 has no SFrame table: --from-cfi" in STOP_REASON.findall(listing)[0]
    # With tables generated from libc's .eh_frame the walk goes on through libc to
    # main: every frame of GDB's native backtrace (GDB's tail-call frame for
    # __pthread_kill_internal has no stack of its own, so no physical frame).
    assert bt_elements(command_output(result, FROM_CFI[0], 0)) == expected
    names = functions(command_output(result, FROM_CFI[1], 0))
    assert names[:4] == interrupted and names[-1] == "main" == gdb_names(gdb_bt)[-1]

    # Stop 3 (main -> drap -> realign): exactly GDB's frames, through the flex FDE.
    gdb_markup, gdb_bt = reference[2]
    assert gdb_names(gdb_bt) == ["realign", "drap", "main"]
    assert bt_elements(command_output(result, SFRAME_BT[0], 2)) == bt_elements(gdb_markup)
    assert functions(command_output(result, SFRAME_BT[1], 2)) == gdb_names(gdb_bt)


@pytest.mark.parametrize("args", [["chain"], ["signal"], ["recurse", "12"]], ids=" ".join)
def test_stripped_program_unwinds_like_gdb_on_the_original(
    lldb_path: str, gdb_path: str, program: Program, stripped_program: Program, args: list[str]
) -> None:
    commands = [*gdb_stop_at(), *section("markup", "stackmark bt --markup"), *section("bt", "bt")]
    reference = run_gdb(commands, program.exe, args=args)
    gdb_markup, gdb_bt = marked(reference, "markup"), marked(reference, "bt")
    result = run_lldb([*stop_at(args=args), *SFRAME_BT], stripped_program.exe)
    assert bt_elements(command_output(result, SFRAME_BT[0])) == bt_elements(gdb_markup)
    assert functions(command_output(result, SFRAME_BT[1])) == gdb_names(gdb_bt)


def test_a_core_file_unwinds_as_the_live_process(
    lldb_path: str, gdb_path: str, stripped_program: Program, tmp_path: Path
) -> None:
    core = tmp_path / "core"
    run_gdb([*gdb_stop_at(), f"gcore {core}"], stripped_program.exe, args=["signal"], plugin=False)
    live = run_lldb([*stop_at(args=["signal"]), *SFRAME_BT], stripped_program.exe)
    dead = run_lldb(list(SFRAME_BT), stripped_program.exe, core=core)
    for command in SFRAME_BT:
        assert command_output(dead, command) == command_output(live, command)
    assert len(bt_elements(command_output(dead, SFRAME_BT[0]))) == 7  # up to main


def test_cbf_holds_the_same_frames_and_full_goes_past_main(
    lldb_path: str, stripped_program: Program
) -> None:
    commands = [
        "stackmark sframe-bt --markup",
        "stackmark sframe-bt --cbf",
        "stackmark bt --cbf",
        "stackmark sframe-bt --markup --full --notes",
    ]
    result = run_lldb([*stop_at(args=["chain"]), *commands], stripped_program.exe)
    markup = command_output(result, commands[0])
    ours, debuggers = command_output(result, commands[1]), command_output(result, commands[2])
    assert ours == debuggers  # the same frames as LLDB's own here, so the same bytes
    full = command_output(result, commands[3])
    elements = bt_elements(full)
    assert elements[: len(bt_elements(markup))] == bt_elements(markup)
    assert len(elements) > len(bt_elements(markup))
    bt_lines = [line for line in full.splitlines() if line.startswith("{{{bt:")]
    assert bt_lines[0].endswith(":pc}}}")  # frame 0: the registers, nothing to say
    assert bt_lines[1].endswith(":ra}}} (sframe)")  # leaf's caller, found by SFrame
    assert STOP_REASON.search(full)


def test_threads_blocked_in_libc_unwind_through_it_with_tables_from_its_cfi(
    lldb_path: str, gdb_path: str, program: Program, stripped_program: Program
) -> None:
    """The worker threads wait in libc's read(), which has no .sframe and no frame
    pointer: the walk ends there, naming --from-cfi; with it, every thread's frames
    are GDB's native ones (up to clone3)."""
    commands = [*gdb_stop_at(), *section("markup", "stackmark bt -a --markup")]
    reference = marked(run_gdb(commands, program.exe, args=["threads"]), "markup")
    plain, from_cfi = "stackmark sframe-bt -a", "stackmark sframe-bt -a --markup --from-cfi"
    result = run_lldb([*stop_at(args=["threads"]), plain, from_cfi], stripped_program.exe)

    def per_thread(markup: str) -> list[str]:
        return [line for line in markup.splitlines() if line.startswith(("Thread ", "{{{bt:"))]

    assert per_thread(command_output(result, from_cfi)) == per_thread(reference)
    assert sum(line.startswith("Thread ") for line in per_thread(reference)) == 3
    reasons = STOP_REASON.findall(command_output(result, plain))
    assert sum("libc.so.6 has no SFrame table: --from-cfi" in r for r in reasons) == 2, reasons


def test_a_walk_cut_at_max_frames_says_so_in_markup_and_cbf(
    lldb_path: str, stripped_program: Program, tmp_path: Path
) -> None:
    """`--max-frames 3` on a deeper stack: three `bt` elements then the truncated line in
    markup, and CBF whose decoding (outside the debugger) ends with the truncated marker."""
    commands = [
        "stackmark sframe-bt --markup --max-frames 3",
        "stackmark sframe-bt --cbf --max-frames 3",
        "stackmark sframe-bt --markup",
    ]
    result = run_lldb([*stop_at(args=["chain"]), *commands], stripped_program.exe)
    cut, whole = command_output(result, commands[0]), command_output(result, commands[2])
    assert bt_elements(cut) == bt_elements(whole)[:3] and len(bt_elements(whole)) > 3
    assert cut.splitlines()[-1] == "... (backtrace truncated)"
    cbf_line = next(line for line in command_output(result, commands[1]).splitlines()
                    if line.startswith("cbf: "))  # fmt: skip
    decoded = subprocess.run(
        [sys.executable, "-m", "stackmark", "cbf", "decode", "--json", cbf_line[len("cbf: ") :]],
        capture_output=True, text=True, check=True, cwd=REPO,
    )  # fmt: skip
    answer = json.loads(decoded.stdout)
    assert answer["truncated"] is True
    assert [f["kind"] for f in answer["frames"]] == ["pc", "ra", "ra"]
