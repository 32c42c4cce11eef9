"""The GDB and LLDB plugins under bad input: a clear message, and the debugger stays usable.

Three kinds of trouble, each driven through the real debuggers in batch
mode (`tests/gdb`, `tests/lldb` helpers), several checks per session:

- a program whose `.sframe` section is damaged (dbg_main built with
  `-Wa,--gsframe` and `.eh_frame` removed, so SFrame is all there is to
  unwind it; copies corrupted at test time: bad version, garbage, FDE
  records past the section end, the FRE sub-section cut short, FRE counts
  past the end): `stackmark sframe info/dump/lookup`, `stackmark bt` (GDB:
  through the plugin's unwinder hook) and LLDB's `stackmark sframe-bt`
  name the section and an offset inside it, and no command fails with a
  traceback;
- unreadable memory: the stack pointer (and frame pointer) set to an
  unmapped address, a return address overwritten with one: the backtrace
  ends with a note saying why;
- a target that goes away: killed with SIGKILL from outside between two
  commands (the debugger learns of it only when it next touches the
  process), killed from the debugger, and a session with no process at all.

Every command runs through a wrapper that prints `CAPTURED {json}` with
its output or its error, so each check sees exactly what one command said
(and LLDB's batch mode, which stops at the first failing command, runs on).
After the trouble, `bt`, `info frame`/`frame info` and `p 1+1` must still
work, and the whole session output must hold no Python traceback.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from stackmark.formats.sframe.spec import FDE_V1_LAYOUT, HEADER_LAYOUT
from tests.gdb import conftest as gdb_conftest
from tests.gdb.conftest import Program, run_gdb
from tests.lldb import conftest as lldb_conftest
from tests.lldb.conftest import run_lldb
from tests.support.sessions import Completed

# The debugger tests' fixtures: the same programs (dbg_main + libdbg_lib.so).
gdb_path = gdb_conftest.gdb_path
lldb_path = lldb_conftest.lldb_path
stripped_program = gdb_conftest.stripped_program

# -- damaged .sframe sections ------------------------------------------------------------

HEADER = HEADER_LAYOUT.compiled("<")  # SFrame preamble + header (28 bytes, v1-v3)
AT = HEADER_LAYOUT.offsets  # header field offsets by spec name
V1_FDE = FDE_V1_LAYOUT  # binutils 2.40 writes SFrame v1


@dataclass(frozen=True)
class Damage:
    """A corrupted copy of the program, and where in the file the damage is."""

    name: str
    path: Path
    first: int  # the reported offset must lie in [first, last]
    last: int


def _sframe_location(path: Path) -> tuple[int, int]:
    """File offset and size of `.sframe` (pyelftools: not the reader under test)."""
    with open(path, "rb") as stream:
        section = ELFFile(stream).get_section_by_name(".sframe")
        assert section is not None, f"{path} has no .sframe"
        return section["sh_offset"], section["sh_size"]


def damaged_copies(program: Path, directory: Path) -> list[Damage]:
    offset, size = _sframe_location(program)
    original = program.read_bytes()
    fields = dict(zip(HEADER_LAYOUT.names, HEADER.unpack_from(original, offset), strict=True))
    assert fields["sfp_version"] == 1, "the compiler's assembler was expected to write SFrame v1"
    num_fdes, fre_len = fields["sfh_num_fdes"], fields["sfh_fre_len"]
    end = offset + size
    fdes_at = offset + HEADER.size + fields["sfh_fdeoff"]
    version_at, num_fdes_at = offset + AT["sfp_version"], offset + AT["sfh_num_fdes"]

    def bad_version(data: bytearray) -> None:
        data[version_at] = 9

    def garbage(data: bytearray) -> None:
        data[offset:end] = bytes((i * 37 + 11) & 0xFF for i in range(size))

    def fdes_past_end(data: bytearray) -> None:
        struct.pack_into("<I", data, num_fdes_at, 100_000)

    def fre_list_cut(data: bytearray) -> None:
        struct.pack_into("<I", data, offset + AT["sfh_fre_len"], fre_len // 3)

    def fre_counts_past_end(data: bytearray) -> None:
        for index in range(num_fdes):
            at = fdes_at + index * V1_FDE.size + V1_FDE.offsets["sfde_func_num_fres"]
            struct.pack_into("<I", data, at, 60_000)

    damages = [
        ("bad-version", bad_version, version_at, version_at),
        ("garbage", garbage, offset, offset),
        ("fdes-past-end", fdes_past_end, num_fdes_at, num_fdes_at),
        ("fre-list-cut", fre_list_cut, offset, end),
        ("fre-counts-past-end", fre_counts_past_end, offset, end),
    ]
    copies = []
    for name, mutate, first, last in damages:
        data = bytearray(original)
        mutate(data)
        path = directory / name
        path.write_bytes(bytes(data))
        path.chmod(0o755)
        copies.append(Damage(name, path, first, last))
    return copies


def assert_names_the_damage(text: str, damage: Damage) -> None:
    """`text` names .sframe, the file and an offset inside the damaged range."""
    assert ".sframe" in text and damage.name in text, text
    offsets = [int(found, 16) for found in re.findall(r"offset 0x([0-9a-f]+)", text)]
    assert any(damage.first <= found <= damage.last for found in offsets), (
        f"no offset in [0x{damage.first:x}, 0x{damage.last:x}]: {text}"
    )


# -- running commands one by one -------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    command: str
    ok: bool
    text: str  # the output, or the error message


GDB_CAPTURE = "python exec({!r})".format(
    "import json\n"
    "def stackmark_capture(command):\n"
    "    try:\n"
    "        text, ok = gdb.execute(command, to_string=True), True\n"
    "    except gdb.error as exc:\n"
    "        text, ok = str(exc), False\n"
    "    print('CAPTURED ' + json.dumps([command, ok, text]), flush=True)\n"
)
"""Defines `stackmark_capture(command)` in GDB's Python."""


def gdb_capture(command: str) -> str:
    return f"python stackmark_capture({command!r})"


LLDB_CAPTURE = (
    "script import json; r = lldb.SBCommandReturnObject(); "
    "lldb.debugger.GetCommandInterpreter().HandleCommand({command!r}, r); "
    "print('CAPTURED ' + json.dumps([{command!r}, r.Succeeded(), "
    "(r.GetOutput() or '') + (r.GetError() or '')]))"
)


def lldb_capture(command: str) -> str:
    return LLDB_CAPTURE.format(command=command)


def outcomes(result: Completed) -> list[Outcome]:
    found = []
    for line in result.stdout.splitlines():
        if line.startswith("CAPTURED "):
            command, ok, text = json.loads(line[len("CAPTURED ") :])
            found.append(Outcome(command, ok, text))
    return found


KILL_FROM_OUTSIDE = "exec({!r})".format(
    "import os, signal, time\n"
    "pid = {pid}\n"
    "os.kill(pid, signal.SIGKILL)\n"
    "for _ in range(200):  # until it is a zombie (GDB) or reaped (lldb-server)\n"
    "    try:\n"
    "        stat = open(f'/proc/{{pid}}/stat').read()\n"
    "    except OSError:\n"
    "        break\n"
    "    if stat.rsplit(')', 1)[1].split()[0] in 'ZX':\n"
    "        break\n"
    "    time.sleep(0.05)\n"
)
"""Python for a debugger's `python`/`script` command: SIGKILL the inferior, wait
until it is dead (the debugger is not told until it next waits for it)."""


def no_traceback(result: Completed) -> None:
    for marker in ("Traceback", "Python Exception", "internal error"):
        assert marker not in result.output, result.output


def still_usable(runs: list[Outcome], frame_info: str) -> None:
    """The debugger's own commands after the trouble: `bt`, frame info, `p 1+1`."""
    by_command = {run.command: run for run in runs}
    assert by_command["bt"].ok and "#0" in by_command["bt"].text, by_command["bt"]
    # the debugger's own answer, which may be that it cannot read the stack either
    info = by_command[frame_info]
    assert info.ok or info.text.startswith("Cannot access memory at address"), info
    assert by_command["p 1+1"].ok and "2" in by_command["p 1+1"].text, by_command["p 1+1"]


# -- GDB --------------------------------------------------------------------------------------

GDB_DAMAGE_COMMANDS = (
    "stackmark sframe info",
    "stackmark sframe dump {name}",
    "stackmark sframe lookup $pc",
    "stackmark bt",
    "stackmark unwinder status",
    "bt",
    "info frame",
    "p 1+1",
)


@pytest.fixture(scope="module")
def damaged(stripped_program: Program, tmp_path_factory: pytest.TempPathFactory) -> list[Damage]:
    return damaged_copies(stripped_program.exe, tmp_path_factory.mktemp("sframe-damage"))


def test_gdb_on_damaged_sframe_sections(gdb_path: str, damaged: list[Damage]) -> None:
    commands = [GDB_CAPTURE, "handle SIGILL nostop noprint pass"]
    for damage in damaged:
        commands += [f"file {damage.path}", "break stop_here", "run"]
        commands += [gdb_capture(c.format(name=damage.name)) for c in GDB_DAMAGE_COMMANDS]
        commands += ["kill", "delete"]
    result = run_gdb(commands)
    runs = outcomes(result)
    assert len(runs) == len(damaged) * len(GDB_DAMAGE_COMMANDS), result.output
    for index, damage in enumerate(damaged):
        step = len(GDB_DAMAGE_COMMANDS)
        info, dump, lookup, bt, status, *_ = these = runs[index * step : (index + 1) * step]
        for run in (info, dump, lookup):
            assert run.ok, run  # a damaged table is reported, not an error of the command
            line = next(x for x in run.text.splitlines() if damage.name in x)
            assert_names_the_damage(line, damage)
        # the damage is named when the unwinder needed the table; the frames are GDB's
        assert bt.ok and "{{{bt:0:" in bt.text, bt
        assert_names_the_damage(bt.text.split("stackmark bt: warning: ", 1)[1], damage)
        assert "problem: " in status.text, status
        still_usable(these, "info frame")
    no_traceback(result)


def test_gdb_unreadable_memory_and_a_target_that_goes_away(
    gdb_path: str, stripped_program: Program
) -> None:
    def each(*commands: str) -> list[str]:
        return [gdb_capture(c) for c in commands]

    after = ("bt", "info frame", "p 1+1")
    commands = [
        GDB_CAPTURE,
        "handle SIGILL nostop noprint pass",
        "break stop_here",
        "run",
        # a stack pointer and frame pointer in unmapped memory
        "set $sp = 0x10",
        "set $rbp = 0x20",
        *each("stackmark bt", "stackmark bt --json", "stackmark bt --cbf"),
        *each("stackmark sframe lookup $sp", *after),
        "kill",
        "run",
        # frame 1's return address (at the SP on entry) in unmapped memory
        "set *(unsigned long *)$sp = 0x10",
        *each("stackmark bt", *after),
        "kill",
        "run",
        # the process killed with SIGKILL from outside: GDB does not know yet
        "python " + KILL_FROM_OUTSIDE.format(pid="gdb.selected_inferior().pid"),
        *each("stackmark bt", "symbolize {{{pc:0x1234}}}", "stackmark sframe info", *after),
        "kill",
        # no process any more
        *each("stackmark bt", "stackmark sframe info", "stackmark sframe lookup main"),
        *each("symbolize {{{pc:0x1234}}}", "stackmark cbf decode AhVVVVVVVLAA", "p 1+1"),
    ]
    result = run_gdb(commands, stripped_program.exe)
    runs = outcomes(result)
    assert len(runs) == 3 + 4 + 4 + 6 + 6, result.output
    bad_sp, bad_sp_json, bad_sp_cbf, lookup = runs[:4]
    assert bad_sp.ok and bad_sp.text.count("{{{bt:") == 1, bad_sp
    assert bad_sp.text.rstrip().endswith(
        "(backtrace stopped: Cannot access memory at address 0x10)"
    ), bad_sp
    stopped = json.loads(bad_sp_json.text)["threads"][0]["stopped"]
    assert stopped == "Cannot access memory at address 0x10"
    assert bad_sp_cbf.text.rstrip().endswith(
        "(backtrace stopped: Cannot access memory at address 0x10)"
    )
    assert not lookup.ok and lookup.text == "0x10 is not in any loaded module"
    still_usable(runs[4:7], "info frame")

    bad_ra = runs[7]
    assert bad_ra.ok and "{{{bt:1:0x10:ra}}}" in bad_ra.text, bad_ra
    # GDB takes the 0x0 it unwinds 0x10 to for the end of the stack: stackmark says why
    assert "(backtrace stopped: frame #2 at 0x0 is in no loaded module)" in bad_ra.text, bad_ra
    still_usable(runs[8:11], "info frame")

    killed = runs[11:17]
    assert killed[0].ok and "{{{bt:0:" in killed[0].text
    assert "(backtrace stopped: Cannot access memory at address" in killed[0].text, killed[0]
    assert killed[1].ok and "{{{pc:0x1234}}}" in killed[1].text  # kept, with a diagnostic
    assert killed[2].ok and "dbg_main" in killed[2].text
    still_usable(killed[3:], "info frame")

    gone = runs[17:]
    for run in gone[:3]:
        assert not run.ok and "the program is not being run" in run.text, run
    assert gone[3].ok and "{{{pc:0x1234}}}" in gone[3].text
    assert not gone[4].ok and "the program is not being run" in gone[4].text
    assert gone[5].ok and "2" in gone[5].text
    no_traceback(result)


def test_gdb_without_a_program(gdb_path: str) -> None:
    commands = [GDB_CAPTURE]
    checked = (
        "stackmark bt",
        "stackmark bt --cbf",
        "stackmark sframe info",
        "stackmark sframe dump",
        "stackmark sframe lookup 0x1234",
        "stackmark cbf decode AhVVVVVVVLAA",
        "stackmark unwinder status",
        "symbolize {{{pc:0x1234}}}",
        "p 1+1",
    )
    result = run_gdb([*commands, *(gdb_capture(c) for c in checked)])
    runs = outcomes(result)
    assert [run.command for run in runs] == list(checked), result.output
    for run in runs[:6]:
        assert not run.ok and run.text == (
            "the program is not being run (start it, attach, or load a core)"
        ), run
    assert runs[6].ok and "stackmark SFrame unwinder: on" in runs[6].text
    assert runs[7].ok and "{{{pc:0x1234}}}" in runs[7].text
    assert runs[8].ok and "2" in runs[8].text
    no_traceback(result)


# -- LLDB -------------------------------------------------------------------------------------

LLDB_DAMAGE_COMMANDS = (
    "stackmark sframe info",
    "stackmark sframe dump {name}",
    "stackmark sframe lookup $pc",
    "stackmark sframe-bt",
    "stackmark sframe-bt --notes --markup",
    "bt",
    "frame info",
    "p 1+1",
)


def test_lldb_on_damaged_sframe_sections(lldb_path: str, damaged: list[Damage]) -> None:
    commands = [lldb_capture("process handle -s false -n false -p true SIGILL SIGUSR1")]
    for damage in damaged:
        commands += [f"target create {damage.path}", "breakpoint set -n stop_here"]
        commands += ["process launch"]
        commands += [lldb_capture(c.format(name=damage.name)) for c in LLDB_DAMAGE_COMMANDS]
        commands += ["process kill"]
    result = run_lldb(commands)
    runs = outcomes(result)[1:]
    assert len(runs) == len(damaged) * len(LLDB_DAMAGE_COMMANDS), result.output
    step = len(LLDB_DAMAGE_COMMANDS)
    for index, damage in enumerate(damaged):
        info, dump, lookup, sframe_bt, notes, *_ = these = runs[index * step : (index + 1) * step]
        for run in (info, dump, lookup):
            assert run.ok, run
            line = next(x for x in run.text.splitlines() if damage.name in x)
            assert_names_the_damage(line, damage)
        for run in (sframe_bt, notes):
            assert run.ok and ("stop_here" in run.text or "{{{bt:0:" in run.text), run
            stop = re.findall(r"^\(unwinding stopped: (.*)\)$", run.text, re.MULTILINE)
            assert len(stop) == 1, run
            assert_names_the_damage(stop[0], damage)
        still_usable(these, "frame info")
    no_traceback(result)


def test_lldb_unreadable_memory_and_a_target_that_goes_away(
    lldb_path: str, stripped_program: Program
) -> None:
    def each(*commands: str) -> list[str]:
        return [lldb_capture(c) for c in commands]

    after = ("bt", "frame info", "p 1+1")
    commands = [
        "process handle -s false -n false -p true SIGILL SIGUSR1",
        "breakpoint set -n stop_here",
        "process launch",
        "register write rsp 0x10",
        "register write rbp 0x20",
        *each("stackmark bt", "stackmark bt --json", "stackmark sframe-bt"),
        *each("stackmark sframe-bt --cbf", "stackmark sframe lookup $sp", *after),
        "process kill",
        "process launch",
        "script p = lldb.process; t = p.GetSelectedThread(); "
        "sp = t.GetFrameAtIndex(0).GetSP(); e = lldb.SBError(); "
        "p.WriteMemory(sp, (0x10).to_bytes(8, 'little'), e); print('WROTE', e.Success())",
        *each("stackmark sframe-bt --notes", *after),
        "script " + KILL_FROM_OUTSIDE.format(pid="lldb.process.GetProcessID()"),
        *each("stackmark bt", "stackmark sframe-bt", "symbolize {{{pc:0x1234}}}", *after),
        lldb_capture("process kill"),
        *each("stackmark bt", "stackmark sframe-bt", "stackmark sframe info"),
        *each("symbolize {{{pc:0x1234}}}", "stackmark cbf decode AhVVVVVVVLAA", "image list"),
    ]
    result = run_lldb(commands, stripped_program.exe)
    runs = outcomes(result)
    assert len(runs) == 5 + 3 + 1 + 3 + 3 + 3 + 1 + 6, result.output
    assert "WROTE True" in result.stdout
    bt, bt_json, sframe_bt, sframe_cbf, lookup = runs[:5]
    note = "no caller of 0x{:x} (stop_here): its stack pointer 0x10 points to unreadable memory"
    assert bt.ok and bt.text.count("{{{bt:") == 1, bt
    pc = int(re.search(r"\{\{\{bt:0:0x([0-9a-f]+):pc\}\}\}", bt.text)[1], 16)  # type: ignore[index]
    assert bt.text.rstrip().endswith(f"(backtrace stopped: {note.format(pc)})"), bt
    assert json.loads(bt_json.text)["threads"][0]["stopped"] == note.format(pc)
    for run in (sframe_bt, sframe_cbf):
        assert run.ok and "stop_here" in run.text, run
    assert "(unwinding stopped: memory read failed at 0x10 (8 bytes))" in sframe_bt.text
    assert not lookup.ok and "0x10 is not in any loaded module" in lookup.text
    still_usable(runs[5:8], "frame info")

    bad_ra = runs[8]
    assert bad_ra.ok and "stop_here" in bad_ra.text, bad_ra
    assert re.search(r"^\(unwinding stopped: .*0x10.*\)$", bad_ra.text, re.MULTILINE), bad_ra
    still_usable(runs[9:12], "frame info")

    killed = runs[12:18]
    for run in killed[:2]:  # LLDB notices the death: a message, not a traceback
        assert run.text.strip(), run
    assert "{{{pc:0x1234}}}" in killed[2].text
    assert "overlapping mmap" not in killed[2].text  # the relaunch listed ld.so twice
    # LLDB's own answer: it may be that it cannot run the expression in a dead process
    assert killed[5].ok or "error: " in killed[5].text, killed[5]

    gone = runs[19:]
    for run in gone[:3]:
        assert not run.ok and "the program is not being run" in run.text, run
    assert gone[3].ok and "{{{pc:0x1234}}}" in gone[3].text
    assert not gone[4].ok and "the program is not being run" in gone[4].text
    assert gone[5].ok and "dbg_main" in gone[5].text  # (LLDB evaluates no expression now)
    no_traceback(result)


def test_lldb_without_a_program(lldb_path: str) -> None:
    checked = (
        "stackmark bt",
        "stackmark sframe-bt",
        "stackmark sframe info",
        "stackmark sframe lookup 0x1234",
        "stackmark cbf decode AhVVVVVVVLAA",
        "symbolize {{{pc:0x1234}}}",
        "p 1+1",
    )
    result = run_lldb([lldb_capture(c) for c in checked])
    runs = outcomes(result)
    assert [run.command for run in runs] == list(checked), result.output
    for run in runs[:5]:
        assert not run.ok and "the program is not being run" in run.text, run
    assert runs[5].ok and "{{{pc:0x1234}}}" in runs[5].text
    assert runs[6].text.strip(), runs[6]  # LLDB evaluates it, or says why not (no target)
    no_traceback(result)
