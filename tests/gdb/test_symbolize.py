"""`symbolize` and `stackmark cbf decode` in GDB, on logs from other (ASLR) runs.

A backtrace is recorded in one GDB session with address randomization on;
another session (its own random addresses) symbolizes it. The oracle for the
function names is GDB's `bt` in the recording session; the oracle for the
output as a whole is `stackmark symbolize` on the command line, given the
same binaries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gdb.conftest import Program, marked, parse_bt, run_gdb, section, stop_at
from tests.support.build import REPO, run

ASLR = "set disable-randomization off"
_FRAME = re.compile(r"^\s*#\d+(?:\.\d+)?\s+0x[0-9a-f]+ (\S+)")
_MMAP = re.compile(r"\{\{\{mmap:(0x[0-9a-f]+):")


def functions(lines: str) -> list[str]:
    return [m[1] for line in lines.splitlines() if (m := _FRAME.match(line))]


def gdb_names(text: str) -> list[str]:
    """GDB's bt names, with the trampoline named as symbolizers name it."""
    return [
        "__restore_rt" if f.function == "<signal handler called>" else f.function
        for f in parse_bt(text)
    ]


@pytest.fixture(scope="module")
def recorded(program: Program, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A randomized run's `bt`, markup and CBF, for the signal scenario."""
    result = run_gdb(
        [
            ASLR,
            *stop_at(),
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
    gdb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    log = recorded["log"]
    result = run_gdb(
        [
            ASLR,
            *stop_at(),
            *section("maps", "stackmark bt --markup"),
            *section("prefixed", f"stackmark symbolize {log}"),
            *section("plain", f"symbolize {log}"),
        ],
        program.exe,
        args=["chain"],
    )
    here = _MMAP.findall(marked(result, "maps"))
    there = _MMAP.findall(recorded["markup"])
    assert here and there and set(here).isdisjoint(there)  # the addresses really moved
    output = marked(result, "prefixed")
    assert functions(output) == gdb_names(recorded["bt"])
    assert "program output before the crash" in output  # log text is kept
    assert marked(result, "plain") == output  # the top-level command is the same one
    # ... and it is what `stackmark symbolize` prints, given the files GDB loaded.
    cli = run(
        [
            REPO / ".venv" / "bin" / "stackmark",
            "symbolize",
            "--obj",
            program.exe,
            "--obj",
            program.lib,
            log,
        ]
    )
    assert output == cli


def test_symbolize_without_a_process_uses_the_loaded_files(
    gdb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    result = run_gdb([*section("out", f"symbolize --basenames {recorded['log']}")], program.exe)
    names = functions(marked(result, "out"))
    # The program and its library are loaded as files (no process): their frames resolve.
    for name in ("stop_here", "on_sigill", "faulting", "sig_outer", "main"):
        assert name in names


def test_typed_markup_without_context_is_about_this_process(
    gdb_path: str, program: Program
) -> None:
    result = run_gdb(
        [*stop_at(), *section("out", 'eval "symbolize before {{{pc:%p}}} after", &leaf')],
        program.exe,
    )
    assert "error" not in result.stderr
    out = marked(result, "out").splitlines()
    assert out[-1].startswith("before leaf[") and out[-1].endswith("] after")


def test_typed_markup_kept_verbatim(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("out", "symbolize {{{bt:0:0x1:pc}}}   spaced   text")],
        program.exe,
    )
    assert marked(result, "out").splitlines()[-1].endswith(":pc]]]   spaced   text")
    assert "no mmap covers address" in result.stderr


def test_errors(gdb_path: str, program: Program) -> None:
    commands = ["symbolize", "symbolize /no/such/file", "stackmark cbf decode zz!"]
    result = run_gdb(commands, program.exe)
    assert "give log files to read, or markup text" in result.stderr
    assert "/no/such/file: no such file" in result.stderr
    assert "Traceback" not in result.output


def test_cbf_from_another_run_decodes_with_its_image_map(
    gdb_path: str, program: Program, recorded: dict[str, str]
) -> None:
    cbf_line, images_line = recorded["cbf"].splitlines()[:2]
    assert cbf_line.startswith("cbf: ") and images_line.startswith("images: ")
    listing = recorded["cbf"].splitlines()[2:]
    assert functions("\n".join(listing)) == gdb_names(recorded["bt"])
    result = run_gdb(
        [
            ASLR,
            *stop_at(),
            *section("decoded", f"stackmark cbf decode '{cbf_line}' --images '{images_line}'"),
        ],
        program.exe,
        args=["chain"],
    )
    decoded = marked(result, "decoded")
    assert functions(decoded) == gdb_names(recorded["bt"])
    assert decoded.splitlines() == listing


def test_cbf_decode_without_image_map_uses_this_process(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("bt", "bt"), *section("cbf", "stackmark bt --cbf")], program.exe
    )
    cbf_line = marked(result, "cbf").splitlines()[0]
    again = run_gdb(
        [*stop_at(), *section("decoded", f"stackmark cbf decode {cbf_line[5:]}")], program.exe
    )
    assert functions(marked(again, "decoded")) == gdb_names(marked(result, "bt"))


def test_damaged_cbf_is_reported(gdb_path: str, program: Program) -> None:
    # info byte 64-bit, a pc frame, then a reserved opcode (0x05).
    result = run_gdb([*stop_at(), "stackmark cbf decode 02107005"], program.exe)
    assert "stackmark cbf decode: DATA: offset" in result.stderr
    assert "Traceback" not in result.output
    assert "(backtrace truncated)" in result.stdout  # the frame before the damage is shown


def test_cbf_with_no_frame_before_the_damage_is_an_error(gdb_path: str, program: Program) -> None:
    # info byte 64-bit, then an opcode whose argument bytes are missing.
    result = run_gdb(
        [*stop_at(), *section("out", "stackmark cbf decode 0215"), "echo after\\n"], program.exe
    )
    message = "DATA: offset 0x1: opcode 0x15 needs 6 argument bytes, only 0 left"
    assert result.stderr.strip().endswith(message), result.stderr
    assert "[[[" not in result.stdout  # no listing of modules without frames


def test_completion(gdb_path: str, program: Program, tmp_path: Path) -> None:
    (tmp_path / "crash-log.txt").write_text("")
    result = run_gdb(
        [
            *section("bt", "complete stackmark bt --a"),
            *section("sframe", "complete stackmark sframe d"),
            *section("file", f"complete symbolize {tmp_path}/crash-l"),
        ],
        program.exe,
    )
    assert marked(result, "bt").split() == ["stackmark", "bt", "--all-threads"]
    assert marked(result, "sframe").split() == ["stackmark", "sframe", "dump"]
    assert marked(result, "file").strip() == f"symbolize {tmp_path}/crash-log.txt"


def test_the_cli_decodes_the_lines_and_the_block_gdb_printed(
    gdb_path: str, recorded: dict[str, str], tmp_path: Path
) -> None:
    """`stackmark cbf decode` on the command line takes what GDB's `stackmark bt
    --cbf` printed: the two prefixed lines, or the whole pasted block in a file."""
    block = recorded["cbf"]
    cbf_line, images_line = block.splitlines()[:2]
    # The oracle: the markup of the same stop (its bt lines and module lines).
    markup = recorded["markup"].splitlines()
    stackmark = REPO / ".venv" / "bin" / "stackmark"
    from_lines = run([stackmark, "cbf", "decode", cbf_line, "--images", images_line])
    decoded = from_lines.splitlines()
    assert [line for line in decoded if "{{{bt:" in line] == [
        line for line in markup if "{{{bt:" in line
    ]
    modules = [line for line in decoded if "{{{module:" in line]
    assert len(modules) >= 2 and set(modules) <= set(markup)
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(block)
    assert run([stackmark, "cbf", "decode", f"@{pasted}"]).splitlines() == decoded
    # --symbolize names the frames GDB showed (in the program and its library: the
    # trampoline's name is in libc's separate debug file, which --obj libc.so.6 hides).
    symbolized = run([stackmark, "cbf", "decode", "--symbolize", f"@{pasted}"])
    names = [name for name in gdb_names(recorded["bt"]) if name != "__restore_rt"]
    assert [name for name in functions(symbolized) if not name.startswith("(")] == names
