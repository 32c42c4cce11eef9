"""Loading the plugin: the loader, `stackmark gdb-init`, the `stackmark-gdb` launcher."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stackmark.cli import debuggers
from stackmark.cli.main import main as stackmark_main
from tests.gdb.conftest import LOADER, marked, run_gdb, section
from tests.support.build import REPO
from tests.support.sessions import clean_environment, run_in_session

VENV = REPO / ".venv"


def loaded(output: str) -> bool:
    return "List of stackmark subcommands" in output and "not loaded" not in output


def test_loader_registers_the_commands(gdb_path: str) -> None:
    result = run_gdb(["help stackmark"])
    assert loaded(result.output), result.output
    for name in ("stackmark bt", "stackmark unwinder"):
        assert name in result.stdout


COMMANDS = ("bt", "cbf decode", "sframe", "symbolize", "unwinder")


def test_every_command_has_help(gdb_path: str) -> None:
    """`help stackmark X` and `stackmark X --help` print the same text, with the usage."""
    commands = []
    for name in COMMANDS:
        commands += section(f"help {name}", f"help stackmark {name}")
        commands += section(f"option {name}", f"stackmark {name} --help")
    commands += section("top", "help symbolize")
    result = run_gdb(commands)
    assert "Traceback" not in result.output and not result.stderr.strip(), result.output
    for name in COMMANDS:
        text = marked(result, f"help {name}")
        assert f"usage: stackmark {name} [-h]" in text, text
        assert marked(result, f"option {name}") == text
    assert "usage: symbolize [-h]" in marked(result, "top")


def test_loading_twice_is_harmless(gdb_path: str) -> None:
    result = run_gdb([f"source {LOADER}", "help stackmark", "stackmark unwinder status"])
    assert loaded(result.output), result.output
    assert "Traceback" not in result.output and "Error" not in result.stderr


def test_a_bad_environment_is_one_line_and_gdb_carries_on(gdb_path: str, tmp_path: Path) -> None:
    env = clean_environment(STACKMARK_VENV=str(tmp_path))
    result = run_gdb(["echo still-running\\n"], env=env)
    messages = [line for line in result.stderr.splitlines() if "stackmark" in line]
    assert messages == [
        f"stackmark: not loaded: $STACKMARK_VENV={tmp_path} is not a virtual environment "
        "(no pyvenv.cfg)"
    ]
    assert "still-running" in result.stdout
    assert result.returncode == 0


def test_python_version_mismatch_is_refused(gdb_path: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv312"
    (venv / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.4\n")
    result = run_gdb(["stackmark bt"], env=clean_environment(STACKMARK_VENV=str(venv)))
    messages = [line for line in result.stderr.splitlines() if line.startswith("stackmark:")]
    assert len(messages) == 1, result.stderr
    assert "is for Python 3.12 but this debugger runs Python 3.11" in messages[0]
    assert 'Undefined command: "stackmark"' in result.stderr  # nothing was registered


def test_gdb_init_prints_the_line_first_and_installs_it_once(
    gdb_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    init = tmp_path / "home" / ".gdbinit"
    assert stackmark_main(["gdb-init"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"source {LOADER}"
    for expected in ("# added to", "# already in"):
        assert stackmark_main(["gdb-init", "--install", "--init-file", str(init)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == first and out[1].startswith(expected)
    assert init.read_text().splitlines() == [first]
    # GDB reading that file (no -nx) gets the plugin.
    env = clean_environment(HOME=str(init.parent))
    result = run_in_session(
        ["gdb", "-q", "-batch", "-ex", "help stackmark"], timeout=60, env=env, cwd=tmp_path
    )
    assert loaded(result.output), result.output


def test_install_keeps_existing_text(tmp_path: Path) -> None:
    init = tmp_path / ".gdbinit"
    init.write_text("set history save on")  # no final newline
    assert debuggers.install_line("source /x/loader.py", init)
    assert not debuggers.install_line("source /x/loader.py", init)
    assert init.read_text() == "set history save on\nsource /x/loader.py\n"


def test_install_into_an_impossible_place_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    init = blocker / ".gdbinit"
    assert stackmark_main(["gdb-init", "--install", "--init-file", str(init)]) != 0
    err = capsys.readouterr().err
    assert f"cannot create the directory {blocker} for .gdbinit: a file is in the way" in err
    assert "Traceback" not in err


def test_a_venv_the_loader_cannot_find_is_named_in_the_line(
    gdb_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An environment elsewhere whose site-packages leads to this checkout.
    venv = tmp_path / "elsewhere"
    site_packages = venv / "lib" / "python3.11" / "site-packages"
    site_packages.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    real_site = next((VENV / "lib").glob("python3.*/site-packages"))
    (site_packages / "stackmark-dev.pth").write_text(
        "\n".join(str(p) for p in (real_site, REPO, REPO / "gdb_plugin")) + "\n"
    )
    monkeypatch.setattr(sys, "prefix", str(venv))
    line = debuggers.init_line(debuggers.DEBUGGERS["gdb-init"])
    assert line.startswith("python ") and str(venv) in line and str(LOADER) in line
    script = tmp_path / "init.gdb"
    script.write_text(line + "\n")
    result = run_in_session(
        ["gdb", "-nx", "-q", "-batch", "-x", str(script), "-ex", "help stackmark"],
        timeout=60,
        env=clean_environment(),
    )
    assert loaded(result.output), result.output


def test_launcher_starts_gdb_with_the_plugin(gdb_path: str) -> None:
    launcher = VENV / "bin" / "stackmark-gdb"
    assert launcher.exists(), "pip install -e . installs the stackmark-gdb script"
    result = run_in_session(
        [str(launcher), "-nx", "-q", "-batch", "-ex", "help stackmark"],
        timeout=60,
        env=clean_environment(),
    )
    assert loaded(result.output), result.output


def test_launcher_reports_a_missing_gdb() -> None:
    env = clean_environment(STACKMARK_GDB="/nonexistent/gdb")
    result = run_in_session([str(VENV / "bin" / "stackmark-gdb"), "-batch"], timeout=60, env=env)
    assert result.returncode == 127
    assert "stackmark-gdb: error: cannot run /nonexistent/gdb" in result.stderr


def test_gdb_runs_the_compiled_accelerator_or_pure_python_when_asked(gdb_path: str) -> None:
    # GDB's embedded Python loads the same compiled modules as the `stackmark` command.
    query = "python from stackmark._native import implementation; print(implementation())"
    compiled = run_gdb([query], env=clean_environment(STACKMARK_PURE=""))
    loaded = compiled.stdout.partition("compiled accelerator: ")[2].split("\n")[0]
    assert {"dwarf", "gsym_records", "markup"} <= set(loaded.split(", ")), compiled.output
    pure = run_gdb([query], env=clean_environment(STACKMARK_PURE="1"))
    assert "pure Python: STACKMARK_PURE is set" in pure.stdout, pure.output
