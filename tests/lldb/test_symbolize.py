"""`symbolize`, `stackmark cbf decode` and `stackmark sframe` in LLDB.

A backtrace recorded in GDB with address randomization on is symbolized
in LLDB, also randomized: the oracle for the names is GDB's `bt` in the
recording session, for the output as a whole `stackmark symbolize` on the
command line given the same binaries. `stackmark sframe` and `cbf decode`
must print in LLDB what they print in GDB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from tests.gdb.conftest import Program, marked, run_gdb, section
from tests.gdb.conftest import stop_at as gdb_stop_at
from tests.gdb.test_symbolize import ASLR, functions, gdb_names
from tests.lldb.conftest import command_output, run_lldb, stop_at
from tests.support.build import REPO, run

LLDB_ASLR = "settings set target.disable-aslr false"


@pytest.fixture(scope="module")
def recorded(program: Program, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A randomized GDB run's `bt`, markup and CBF, for the signal scenario."""
    result = run_gdb(
        [
            ASLR,
            *gdb_stop_at(),
            *section("bt", "bt"),
            *section("markup", "stackmark bt --markup"),
            *section("cbf", "stackmark bt --cbf"),
        ],
        program.exe,
        args=["signal"],
    )
    log = tmp_path_factory.mktemp("log") / "crash.log"
    log.write_text("program output before the crash\n" + marked(result, "markup"))
    return {
        "bt": marked(result, "bt"),
        "markup": marked(result, "markup"),
        "cbf": marked(result, "cbf"),
        "log": str(log),
    }


def test_a_log_from_another_run_symbolizes(
    lldb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    log = recorded["log"]
    commands = [f"stackmark symbolize {log}", f"symbolize {log}", "stackmark bt"]
    result = run_lldb([LLDB_ASLR, *stop_at(args=["chain"]), *commands], program.exe)
    here = command_output(result, "stackmark bt")
    assert here.splitlines()[2] not in recorded["markup"]  # the addresses really moved
    output = command_output(result, commands[0])
    assert functions(output) == gdb_names(recorded["bt"])
    assert "program output before the crash" in output
    assert command_output(result, commands[1]) == output  # the top-level alias
    objects = ["--obj", program.exe, "--obj", program.lib]
    cli = run([REPO / ".venv/bin/stackmark", "symbolize", *objects, log])
    assert output == cli


def test_symbolize_without_a_process_uses_the_loaded_files(
    lldb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    command = f"symbolize --basenames {recorded['log']}"
    names = functions(command_output(run_lldb([command], program.exe), command))
    # The program and its library are loaded as files (no process): their frames resolve.
    for name in ("stop_here", "on_sigill", "faulting", "sig_outer", "main"):
        assert name in names


def test_cbf_from_gdb_decodes_in_lldb_as_in_gdb(
    lldb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    cbf_line, images_line = recorded["cbf"].splitlines()[:2]
    command = f"stackmark cbf decode '{cbf_line}' --images '{images_line}'"
    result = run_lldb([LLDB_ASLR, *stop_at(), command], program.exe)
    decoded = command_output(result, command)
    assert functions(decoded) == gdb_names(recorded["bt"])
    assert decoded.splitlines() == recorded["cbf"].splitlines()[2:]


def test_typed_markup_without_context_is_about_this_process(
    lldb_path: str, program: Program
) -> None:
    with ElfFile.open(program.exe) as elf:
        leaf = next(s.value for s in elf.symbols() if s.name == "leaf")
    base = 0x555555554000  # where Linux puts a PIE when ASLR is off (checked below)
    command = f"stackmark symbolize before {{{{{{pc:0x{base + leaf:x}}}}}}}   after"
    result = run_lldb([*stop_at(), "stackmark bt --json", command], program.exe)
    modules = json.loads(command_output(result, "stackmark bt --json"))["modules"]
    assert int(modules[0]["load_bias"], 16) == base
    last = command_output(result, command).splitlines()[-1]
    assert last.startswith("before leaf[") and last.endswith("]   after")  # kept verbatim


SFRAME_COMMANDS = (
    "stackmark sframe",
    "stackmark sframe info",
    "stackmark sframe dump dbg_main libdbg_lib.so",
    "stackmark sframe lookup leaf",
    "stackmark sframe lookup $pc",
    "stackmark sframe lookup --return-address 0x7ffff7fbc114",
)


def test_sframe_prints_what_it_prints_in_gdb(
    lldb_path: str, gdb_path: str, program: Program
) -> None:
    gdb_script = [*gdb_stop_at()]
    for i, command in enumerate(SFRAME_COMMANDS):
        gdb_script += section(f"out{i}", command)
    gdb = run_gdb(gdb_script, program.exe)
    lldb = run_lldb([*stop_at(), *SFRAME_COMMANDS], program.exe)
    assert "Traceback" not in lldb.output and not lldb.stderr.strip()
    for i, command in enumerate(SFRAME_COMMANDS):
        assert command_output(lldb, command) == marked(gdb, f"out{i}"), command
    assert "SFrame v1" in command_output(lldb, "stackmark sframe info")
    assert "FDE" in command_output(lldb, "stackmark sframe lookup leaf")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("stackmark symbolize", "give log files to read, or markup text"),
        ("stackmark symbolize /no/such/file", "/no/such/file: no such file"),
        ("stackmark cbf decode @/no/such.cbf", "/no/such.cbf: cannot read"),
        ("stackmark sframe lookup no_such_function", "no_such_function"),
        ("stackmark sframe dump nosuch.so", "no loaded module named nosuch.so"),
        ("stackmark bt --bogus", "unrecognized arguments: --bogus"),
        ("stackmark bt 'unbalanced", "No closing quotation"),
    ],
)
def test_errors_are_lldb_errors(
    lldb_path: str, program: Program, command: str, message: str, tmp_path: Path
) -> None:
    result = run_lldb([*stop_at(), command, "script print('not-reached')"], program.exe)
    assert message in result.stderr
    assert "error: " in result.stderr and "Traceback" not in result.output
    assert result.returncode == 1 and "not-reached" not in result.stdout  # the batch stopped
