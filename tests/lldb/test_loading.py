"""Loading the LLDB plugin: the loader, `stackmark lldb-init`, the `stackmark-lldb` launcher,
and commands that behave as LLDB commands (help, results, errors)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stackmark.cli import debuggers
from stackmark.cli.main import main as stackmark_main
from tests.gdb.conftest import Program
from tests.lldb.conftest import LOADER, command_output, run_lldb, stop_at
from tests.support.build import REPO
from tests.support.sessions import clean_environment, run_in_session

VENV = REPO / ".venv"
SUBCOMMANDS = ("bt", "cbf", "sframe", "sframe-bt", "symbolize")


def loaded(output: str) -> bool:
    return "stackmark sframe-bt" in output or (
        "sframe-bt --" in output and "not loaded" not in output
    )


def test_loader_registers_every_command_with_help(lldb_path: str) -> None:
    helps = [f"help stackmark {name}" for name in SUBCOMMANDS]
    result = run_lldb(["help stackmark", *helps, "help stackmark cbf decode", "help symbolize"])
    assert "not loaded" not in result.output and not result.stderr.strip(), result.output
    listing = command_output(result, "help stackmark")
    for name in SUBCOMMANDS:
        assert f"      {name} " in listing, listing
    for name in ("bt", "sframe", "sframe-bt", "symbolize"):
        assert f"usage: stackmark {name} [-h]" in command_output(result, f"help stackmark {name}")
    assert "decode" in command_output(result, "help stackmark cbf")
    assert "usage: stackmark cbf decode" in command_output(result, "help stackmark cbf decode")
    assert "usage: symbolize" in command_output(result, "help symbolize")


def test_loading_twice_keeps_working(lldb_path: str, program: Program) -> None:
    result = run_lldb([f"command script import {LOADER}", *stop_at(), "stackmark bt"], program.exe)
    assert "Traceback" not in result.output and "error" not in result.stderr
    assert "{{{bt:0:" in command_output(result, "stackmark bt")


def test_a_bad_environment_is_one_line_and_lldb_carries_on(lldb_path: str, tmp_path: Path) -> None:
    env = clean_environment(STACKMARK_VENV=str(tmp_path))
    result = run_lldb(["script print('still-running')"], env=env)
    messages = [line for line in result.stderr.splitlines() if "stackmark" in line]
    assert messages == [
        f"stackmark: not loaded: $STACKMARK_VENV={tmp_path} is not a virtual environment "
        "(no pyvenv.cfg)"
    ]
    assert "still-running" in result.stdout
    assert result.returncode == 0


def test_python_version_mismatch_is_refused(lldb_path: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv312"
    (venv / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.4\n")
    result = run_lldb(["stackmark bt"], env=clean_environment(STACKMARK_VENV=str(venv)))
    messages = [line for line in result.stderr.splitlines() if line.startswith("stackmark:")]
    assert len(messages) == 1, result.stderr
    assert "is for Python 3.12 but this debugger runs Python 3.11" in messages[0]
    assert "'stackmark' is not a valid command" in result.stderr  # nothing was registered


def test_lldb_init_prints_the_line_first_and_installs_it_once(
    lldb_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = tmp_path / "home" / ".lldbinit"
    assert stackmark_main(["lldb-init"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"command script import {LOADER}"
    for expected in ("# added to", "# already in"):
        assert stackmark_main(["lldb-init", "--install", "--init-file", str(init)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == first and out[1].startswith(expected)
    assert init.read_text().splitlines() == [first]
    # LLDB reading that file (no -x) gets the plugin.
    env = clean_environment(HOME=str(init.parent))
    result = run_lldb(["help stackmark"], plugin=False, env=env, cwd=tmp_path, init_files=True)
    assert loaded(result.output), result.output


def test_a_venv_the_loader_cannot_find_is_named_in_the_line(
    lldb_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An environment elsewhere whose site-packages leads to this checkout.
    venv = tmp_path / "elsewhere"
    site_packages = venv / "lib" / "python3.11" / "site-packages"
    site_packages.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    real_site = next((VENV / "lib").glob("python3.*/site-packages"))
    (site_packages / "stackmark-dev.pth").write_text(
        "\n".join(str(p) for p in (real_site, REPO, REPO / "lldb_plugin")) + "\n"
    )
    monkeypatch.setattr(sys, "prefix", str(venv))
    line = debuggers.init_line(debuggers.DEBUGGERS["lldb-init"])
    assert line.startswith("script ") and str(venv) in line and str(LOADER) in line
    init = tmp_path / "home" / ".lldbinit"
    init.parent.mkdir()
    init.write_text(line + "\n")
    env = clean_environment(HOME=str(init.parent))
    result = run_lldb(["help stackmark"], plugin=False, env=env, cwd=tmp_path, init_files=True)
    assert loaded(result.output), result.output


def test_launcher_starts_lldb_with_the_plugin(lldb_path: str) -> None:
    launcher = VENV / "bin" / "stackmark-lldb"
    assert launcher.exists(), "pip install -e . installs the stackmark-lldb script"
    # No `lldb` on PATH here: the launcher finds lldb-19 (else STACKMARK_LLDB names it).
    result = run_in_session(
        [str(launcher), "-x", "-b", "-o", "help stackmark"], timeout=60, env=clean_environment()
    )
    assert loaded(result.output), result.output


def test_launcher_reports_a_missing_lldb() -> None:
    env = clean_environment(STACKMARK_LLDB="/nonexistent/lldb")
    result = run_in_session([str(VENV / "bin" / "stackmark-lldb"), "-b"], timeout=60, env=env)
    assert result.returncode == 127
    assert "stackmark-lldb: error: cannot run /nonexistent/lldb" in result.stderr


CAPTURE = (
    "script r = lldb.SBCommandReturnObject(); "
    "lldb.debugger.GetCommandInterpreter().HandleCommand({command!r}, r); "
    "print('CAPTURED', r.Succeeded(), repr(r.GetOutput()), repr(r.GetError()))"
)


def test_output_and_errors_go_to_the_command_result(lldb_path: str, program: Program) -> None:
    """IDEs and lldb-dap run commands through HandleCommand and see only the result:
    everything stackmark says must be in it, errors as errors."""
    commands = [
        CAPTURE.format(command="stackmark bt"),
        *stop_at(),
        CAPTURE.format(command="stackmark bt"),
        CAPTURE.format(command="stackmark sframe dump dbg_main"),
    ]
    result = run_lldb(commands, program.exe)
    captured = [line for line in result.stdout.splitlines() if line.startswith("CAPTURED ")]
    assert len(captured) == 3, result.output
    failed, markup, dump = captured
    assert failed.startswith("CAPTURED False ''") and "the program is not being run" in failed
    assert markup.startswith("CAPTURED True '{{{reset}}}\\n") and "{{{bt:0:" in markup
    assert "\\n\\n" in dump and "Contents of the SFrame section .sframe" in dump
    assert "Traceback" not in result.output


def test_a_running_process_is_refused(lldb_path: str, tmp_path: Path) -> None:
    result = run_lldb(
        [
            "process launch --stop-at-entry -- 30",
            "script lldb.debugger.SetAsync(True)",
            "process continue",
            CAPTURE.format(command="stackmark bt"),
            "script lldb.debugger.SetAsync(False)",
            "process kill",
        ],
        Path("/bin/sleep"),
    )
    captured = [line for line in result.stdout.splitlines() if line.startswith("CAPTURED ")]
    assert captured and "the process is running; stop it first" in captured[0], result.output


def test_lldb_runs_the_compiled_accelerator_or_pure_python_when_asked(lldb_path: str) -> None:
    # LLDB's embedded Python loads the same compiled modules as the `stackmark` command.
    query = "script from stackmark._native import implementation; print(implementation())"
    compiled = run_lldb([query], env=clean_environment(STACKMARK_PURE=""))
    loaded = compiled.stdout.partition("compiled accelerator: ")[2].split("\n")[0]
    assert {"dwarf", "gsym_records", "markup"} <= set(loaded.split(", ")), compiled.output
    pure = run_lldb([query], env=clean_environment(STACKMARK_PURE="1"))
    assert "pure Python: STACKMARK_PURE is set" in pure.stdout, pure.output
