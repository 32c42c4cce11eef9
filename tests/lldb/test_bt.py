"""`stackmark bt` in LLDB: the same bytes as in GDB, LLDB's quirks handled.

Oracles: GDB running the same program to the same place (ASLR off in both,
so the addresses agree) and printing `stackmark bt`; LLDB's own `bt` and
`image list`; llvm-symbolizer-19 reading what `stackmark cbf decode`
makes of the CBF outside any debugger.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.gdb.conftest import (
    OPTIMIZED,
    STRIP_CFI,
    Program,
    build_program,
    marked,
    run_gdb,
    section,
)
from tests.gdb.conftest import stop_at as gdb_stop_at
from tests.gdb.test_bt import bt_elements, debug_directory, llvm_functions
from tests.lldb.conftest import command_output, parse_lldb_bt, run_lldb, stop_at
from tests.support.build import REPO, build_id_of, compile_program, run
from tests.support.sessions import run_in_session

STACKMARK = REPO / ".venv" / "bin" / "stackmark"
NO_BUILD_ID = "-Wl,--build-id=none"  # after compile_program's own --build-id=sha1


def in_gdb(program: Path, args: list[str], *commands: str) -> list[str]:
    """What GDB's plugin prints for each of `commands`, stopped at stop_here."""
    markers = [f"out{i}" for i in range(len(commands))]
    script = [*gdb_stop_at()]
    for marker, command in zip(markers, commands, strict=True):
        script += section(marker, command)
    result = run_gdb(script, program, args=args)
    return [marked(result, marker) for marker in markers]


def in_lldb(program: Path, args: list[str], *commands: str, core: Path | None = None) -> list[str]:
    """What LLDB's plugin prints for each of `commands`, stopped at stop_here (or in `core`)."""
    launch = [] if core is not None else stop_at(args=args)
    result = run_lldb([*launch, *commands], program, core=core)
    assert "Traceback" not in result.output, result.output
    return [command_output(result, command) for command in commands]


SCENARIOS = {
    "chain": ["chain"],
    "signal": ["signal"],
    "recurse": ["recurse", "5"],
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("stripped", [False, True], ids=["eh_frame", "stripped"])
def test_markup_and_cbf_are_the_bytes_gdb_prints(
    lldb_path: str,
    gdb_path: str,
    program: Program,
    stripped_program: Program,
    scenario: str,
    stripped: bool,
) -> None:
    built = stripped_program if stripped else program
    commands = ("stackmark bt --markup", "stackmark bt --cbf")
    gdb = in_gdb(built.exe, SCENARIOS[scenario], *commands)
    lldb = in_lldb(built.exe, SCENARIOS[scenario], *commands)
    assert "{{{bt:3:" in gdb[0]
    assert lldb[0] == gdb[0]
    assert lldb[1].splitlines()[:2] == gdb[1].splitlines()[:2]  # cbf: and images: lines
    assert lldb[1] == gdb[1]  # and the decoded listing


def test_all_threads_and_full_are_the_bytes_gdb_prints(
    lldb_path: str, gdb_path: str, program: Program
) -> None:
    commands = ("stackmark bt --all-threads", "stackmark bt --full", "stackmark bt -a --cbf")
    gdb = in_gdb(program.exe, ["threads"], *commands)
    lldb = in_lldb(program.exe, ["threads"], *commands)
    assert [line for line in gdb[0].splitlines() if line.startswith("Thread ")] == [
        'Thread 1 "dbg_main":',
        'Thread 2 "dbg_main":',
        'Thread 3 "dbg_main":',
    ]
    assert "__libc_start_call_main" in gdb[1] or len(bt_elements(gdb[1])) > 4
    assert lldb == gdb


def test_full_ends_at_the_entry_point_as_gdbs_own_backtrace(
    lldb_path: str, gdb_path: str, program: Program, stripped_program: Program
) -> None:
    """Without .eh_frame, `_start` has no CFI saying it is outermost: GDB's prologue
    analysis would invent callers past it (so `backtrace past-entry` stays off) and
    LLDB lists `_start` again with another CFA. Both stop at `_start`, as GDB's own
    unwinding of the binary with .eh_frame does."""
    command = "stackmark bt --full"
    native = bt_elements(in_gdb(program.exe, [], command)[0])
    gdb = in_gdb(stripped_program.exe, [], command)[0]
    lldb = in_lldb(stripped_program.exe, [], command)[0]
    assert bt_elements(gdb) == native
    assert lldb == gdb


@pytest.mark.parametrize("stripped", [False, True], ids=["eh_frame", "stripped"])
def test_stopped_in_inlined_code_prints_the_bytes_gdb_prints(
    lldb_path: str, gdb_path: str, stripped: bool
) -> None:
    """Frame 0 is an inlined call (tests/fixtures/src/dbg_inline_start.c), stopped at
    the inlined block's first instruction, where a new SFrame row starts. LLDB's own
    `b inl` stops elsewhere (at the entry pc DWARF gives), so LLDB stops at the
    address GDB's `break inl` chose."""
    post = [[*STRIP_CFI, "{out}"]] if stripped else []
    binary = compile_program("dbg_inline_start", ["dbg_inline_start.c"], flags=OPTIMIZED, post=post)
    commands = ("stackmark bt --markup", "stackmark bt --cbf")
    script = ["break inl", "run", *section("pc", 'printf "%#lx\\n", $pc')]
    for i, command in enumerate(commands):
        script += section(f"out{i}", command)
    reference = run_gdb(script, binary)
    pc = marked(reference, "pc").strip()
    gdb = [marked(reference, f"out{i}") for i in range(len(commands))]
    launch = ["process launch --stop-at-entry", f"breakpoint set -a {pc}", "process continue"]
    lldb_commands = (*commands, "stackmark sframe-bt --markup")
    result = run_lldb([*launch, *lldb_commands], binary)
    lldb = [command_output(result, command) for command in lldb_commands]
    assert [e[2] for e in bt_elements(gdb[0])] == ["pc", "ra", "ra"]  # inl+outer2, top, main
    assert lldb[:2] == gdb
    assert bt_elements(lldb[2]) == bt_elements(gdb[0])


def test_an_inlined_frame_has_the_pc_of_the_inlined_code(lldb_path: str, program: Program) -> None:
    """LLDB reports the inlined block's start as the pc of the frame `mid` is inlined
    into; the physical frame must carry the inlined frame's pc, the return address."""
    result = run_lldb([*stop_at(), "bt", "stackmark bt"], program.exe)
    frames = parse_lldb_bt(command_output(result, "bt"))
    names = [f.function for f in frames]
    mid, outer = frames[names.index("mid")], frames[names.index("outer")]
    assert outer.index == mid.index + 1 and outer.pc != mid.pc  # the quirk is there
    elements = bt_elements(command_output(result, "stackmark bt"))
    assert (3, mid.pc, "ra") in elements
    assert all(address != outer.pc for _n, address, _k in elements)


def test_cbf_decodes_outside_the_debugger_to_the_functions_lldb_shows(
    lldb_path: str, program: Program, tmp_path: Path
) -> None:
    result = run_lldb([*stop_at(args=["signal"]), "bt", "stackmark bt --cbf"], program.exe)
    lines = command_output(result, "stackmark bt --cbf").splitlines()
    assert lines[0].startswith("cbf: ") and lines[1].startswith("images: ")
    decoded = run_in_session(
        [str(STACKMARK), "cbf", "decode", lines[0][5:], "--images", lines[1][8:]], timeout=60
    )
    assert decoded.returncode == 0, decoded.stderr
    llvm = llvm_functions(decoded.stdout, debug_directory(tmp_path, program.exe, program.lib))
    lldb = [f.function for f in parse_lldb_bt(command_output(result, "bt"))]
    assert llvm == lldb[: lldb.index("main") + 1]
    assert llvm[:4] == ["stop_here", "on_sigill", "__restore_rt", "faulting"]


def test_a_core_file_prints_what_the_live_process_did(
    lldb_path: str, gdb_path: str, stripped_program: Program, tmp_path: Path
) -> None:
    core = tmp_path / "core"
    commands = ("stackmark bt --markup", "stackmark bt --cbf")
    script = [*gdb_stop_at()]
    for i, command in enumerate(commands):
        script += section(f"out{i}", command)
    live_gdb = run_gdb([*script, f"gcore {core}"], stripped_program.exe, args=["signal"])
    assert core.exists()
    gdb = [marked(live_gdb, f"out{i}") for i in range(len(commands))]
    live = in_lldb(stripped_program.exe, ["signal"], *commands)
    from_core = in_lldb(stripped_program.exe, [], *commands, core=core)
    assert from_core == live == gdb


def test_a_binary_without_build_id_gets_none_not_lldbs_crc(
    lldb_path: str, gdb_path: str, tmp_path: Path
) -> None:
    lib = build_program(strip_cfi=False).lib
    exe = compile_program(
        "dbg_main",
        ["dbg_main.c"],
        flags=["-g", "-O1", "-fPIE", "-pie"],
        link_flags=[f"-L{lib.parent}", "-ldbg_lib", f"-Wl,-rpath,{lib.parent}", NO_BUILD_ID],
    )
    assert "Build ID" not in run(["readelf", "-n", exe])
    commands = ("stackmark bt", "stackmark bt --json")
    result = run_lldb([*stop_at(), "image list", *commands], exe)
    images = command_output(result, "image list")
    uuid = next(line for line in images.splitlines() if str(exe) in line).split()[2]
    assert re.fullmatch(r"[0-9A-F]{8}", uuid), images  # LLDB's invented CRC32 "UUID"
    modules = {m["name"]: m for m in json.loads(command_output(result, commands[1]))["modules"]}
    assert modules["dbg_main"]["build_id"] == ""
    assert modules["libdbg_lib.so"]["build_id"] == build_id_of(lib)
    markup = command_output(result, commands[0])
    assert ":dbg_main:" not in markup  # markup has no module without a build ID
    assert markup == in_gdb(exe, [], commands[0])[0]


def test_json_names_the_frames_as_lldb_does(lldb_path: str, program: Program) -> None:
    result = run_lldb([*stop_at(), "bt", "stackmark bt --json"], program.exe)
    document = json.loads(command_output(result, "stackmark bt --json"))
    (thread,) = document["threads"]
    names = [name["name"] for frame in thread["frames"] for name in frame["functions"]]
    lldb = [f.function for f in parse_lldb_bt(command_output(result, "bt"))]
    assert names == lldb[: lldb.index("main") + 1]
    modules = {m["name"]: m for m in document["modules"]}
    assert modules["dbg_main"]["build_id"] == build_id_of(program.exe)
    assert modules["libdbg_lib.so"]["build_id"] == build_id_of(program.lib)
    inlined = thread["frames"][3]["functions"]
    assert [f["name"] for f in inlined] == ["mid", "outer"]
    assert inlined[0]["file"].endswith("dbg_main.c") and inlined[0]["line"] == 48


def test_no_process_is_an_error_not_a_traceback(lldb_path: str, program: Program) -> None:
    result = run_lldb(["stackmark bt", "script print('not-reached')"], program.exe)
    assert "the program is not being run" in result.stderr
    assert "Traceback" not in result.output
    assert result.returncode == 1 and "not-reached" not in result.stdout  # -b stopped


def test_json_of_a_crash_in_inlined_code_is_what_gdb_prints(lldb_path: str, gdb_path: str) -> None:
    """The crash of tests/fixtures/src/dbg_inline_crash.c (a SIGSEGV at the first
    instruction of an inlined call): LLDB's `stackmark bt --json` lists the same
    frames, inline chains and full paths as GDB's (tests/gdb/test_bt.py checks
    those against llvm-symbolizer-19)."""
    exe = compile_program(
        "dbg_inline_crash", ["dbg_inline_crash.c"], flags=("-g", "-O2", "-fomit-frame-pointer")
    )
    reference = run_gdb(
        ["run", *section("pc", 'printf "%#lx\\n", $pc'), *section("json", "stackmark bt --json")],
        exe,
        args=["crash"],
    )
    gdb = json.loads(marked(reference, "json"))["threads"][0]["frames"]
    # LLDB's batch mode ends at a signal stop: stop at the faulting pc instead.
    pc = marked(reference, "pc").strip()
    launch = [
        "process launch --stop-at-entry -- crash",
        f"breakpoint set -a {pc}",
        "process continue",
    ]
    result = run_lldb([*launch, "stackmark bt --json"], exe)
    lldb = json.loads(command_output(result, "stackmark bt --json"))["threads"][0]["frames"]
    assert [f["name"] for f in lldb[0]["functions"]] == ["weigh", "stock"]
    assert lldb == gdb
