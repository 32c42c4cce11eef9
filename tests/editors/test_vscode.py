"""The VS Code extension in real VS Code: code-server 4.100.3 in Debian's headless Chromium.

The extension is packaged with `npm run package` (once per source change),
installed into a fresh code-server with `--install-extension`, and driven
through playwright-core by tests/editors/harness/vscode_driver.mjs: open the
log, hover, F12, inlay hints, the Problems panel, "Stackmark: Show
Symbolized Log" and the "Symbolize" code lens. The tests compare what the
editor showed with llvm-symbolizer-19's answers for the same lines.
Screenshots go to build/editors/screenshots/.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.editors.conftest import EDITORS, HARNESS, SHOTS, clean_env, require_file, require_node
from tests.editors.scenario import EditorLog
from tests.support.build import REPO

# code-server's start and a browser session: about a minute on an idle machine.
# The driver itself may take up to 900 s (see `vscode_run`), so pytest's global
# 600 s per-test timeout must not cut the module fixture short on a loaded one.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

EXTENSION = EDITORS / "vscode"
CODE_SERVER = HARNESS / "node_modules" / ".bin" / "code-server"
DRIVER = HARNESS / "vscode_driver.mjs"
VSIX_CACHE = REPO / "build" / "editors"
CHROMIUM = Path("/usr/bin/chromium")
DETECTED = "service-output.txt"
BARE_PYTHON = Path("/usr/bin/python3")  # Debian's, without stackmark installed
SERVER_SOURCES = (REPO / "server", REPO / "stackmark")  # what `stackmark lsp` runs
VIEW_SCHEME = "stackmark-symbolized"
VIEW_KEY = "ctrl+alt+y"  # "Show Symbolized Log", bound for the test in keybindings.json
EDIT_MARKER = "stackmark-test-typed-line"
# What goes into the .vsix (dist/ and bundled/ are built from these).
PACKAGED = ("src", "syntaxes", "l10n", "scripts")
PACKAGED_FILES = (
    "package.json",
    "package-lock.json",
    "package.nls.json",
    "package.nls.ja.json",
    "language-configuration.json",
    "tsconfig.json",
    ".vscodeignore",
    "README.md",
)


def _sources_digest() -> str:
    digest = hashlib.sha256()
    files = [EXTENSION / name for name in PACKAGED_FILES]
    for folder in PACKAGED:
        files += sorted(p for p in (EXTENSION / folder).rglob("*") if p.is_file())
    for path in files:
        digest.update(str(path.relative_to(EXTENSION)).encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"-")
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def vsix() -> Path:
    """The extension packaged by `npm run package`, rebuilt when its sources change."""
    require_file(EXTENSION / "node_modules" / ".bin" / "vsce", "the extension's npm packages")
    out = VSIX_CACHE / f"stackmark-{_sources_digest()}.vsix"
    if not out.exists():
        VSIX_CACHE.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(f".{os.getpid()}.vsix")
        proc = subprocess.run(
            ["npm", "run", "package", "--", "--out", str(partial)],
            cwd=EXTENSION,
            env=clean_env(),
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"npm run package failed:\n{proc.stdout}\n{proc.stderr}"
        partial.replace(out)
        for old in VSIX_CACHE.glob("stackmark-*.vsix"):  # builds of older sources
            if old != out:
                old.unlink(missing_ok=True)
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"code-server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)  # polling a condition: the server answers /healthz
    pytest.fail(f"code-server did not answer on {url}:\n{log.read_text()}")


def _settings(editor_log: EditorLog, python: str) -> dict[str, Any]:
    return {
        # A quiet workbench that asks nothing of the network.
        "telemetry.telemetryLevel": "off",
        "workbench.startupEditor": "none",
        "workbench.enableExperiments": False,
        "workbench.tips.enabled": False,
        "security.workspace.trust.enabled": False,
        "update.mode": "none",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "extensions.ignoreRecommendations": True,
        "npm.fetchOnlinePackageInfo": False,
        "json.schemaDownload.enable": False,
        "git.enabled": False,
        "editor.hover.delay": 100,
        # VS Code for the web saves after a second by default: the edits a test types
        # stay in the editor and are reverted, the log on disk is the one llvm read.
        "files.autoSave": "off",
        "editor.minimap.enabled": False,
        "editor.stickyScroll.enabled": False,
        "window.commandCenter": False,
        # One definition target jumps straight to it (several would open a peek).
        "editor.gotoLocation.multipleDefinitions": "goto",
        "stackmark.server.pythonPath": python,
        "stackmark.server.logLevel": "debug",  # in the output channel, read when a step fails
        "stackmark.debugFileDirectories": [str(editor_log.debug_dir)],
    }


def _machine_settings(editor_log: EditorLog, python: str) -> dict[str, Any]:
    """The machine-scoped settings of `_settings` (machine-overridable in package.json)."""
    keys = ("stackmark.server.pythonPath", "stackmark.debugFileDirectories")
    every = _settings(editor_log, python)
    return {key: every[key] for key in keys}


def _install(vsix: Path, dirs: list[str], env: dict[str, str]) -> None:
    """`code-server --install-extension`; once more if a run hangs (seen once, under load)."""
    output = ""
    for _attempt in range(2):
        proc = subprocess.Popen(
            [CODE_SERVER, *dirs, "--install-extension", str(vsix), "--force"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            output += "\n(timed out after 240 s)"
            continue
        if "successfully installed" in output:
            return
    pytest.fail(f"code-server --install-extension failed:\n{output}")


@pytest.fixture(scope="module")
def code_server(
    vsix: Path, editor_log: EditorLog, server_python: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """A code-server on 127.0.0.1 with the extension installed and the log's folder open."""
    require_file(CODE_SERVER, "code-server")
    require_node()
    work = tmp_path_factory.mktemp("code-server")
    data, extensions, folder = work / "data", work / "extensions", work / "workspace"
    (data / "User").mkdir(parents=True)
    folder.mkdir()
    shutil.copy(editor_log.path, folder / editor_log.path.name)
    shutil.copy(editor_log.path, folder / DETECTED)  # plain text by its name
    (data / "User" / "settings.json").write_text(
        json.dumps(_settings(editor_log, server_python), indent=1)
    )
    # The machine settings also where a remote window reads them (the Remote tab,
    # as the README says): under load the extension once read the user file's
    # pythonPath as unset and fell back to a python3 without the server.
    (data / "Machine").mkdir()
    (data / "Machine" / "settings.json").write_text(
        json.dumps(_machine_settings(editor_log, server_python), indent=1)
    )
    (data / "User" / "keybindings.json").write_text(
        json.dumps([{"key": VIEW_KEY, "command": "stackmark.showSymbolizedLog"}])
    )
    env = clean_env(
        XDG_CONFIG_HOME=str(work / "xdg-config"),
        XDG_DATA_HOME=str(work / "xdg-data"),
        XDG_CACHE_HOME=str(work / "xdg-cache"),
        # No extension gallery: nothing to fetch from the marketplace.
        EXTENSIONS_GALLERY=json.dumps({"serviceUrl": "", "itemUrl": ""}),
    )
    dirs = ["--user-data-dir", str(data), "--extensions-dir", str(extensions)]
    _install(vsix, dirs, env)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / "code-server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                CODE_SERVER,
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--auth",
                "none",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--disable-getting-started-override",
                *dirs,
                str(folder),
            ],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its extension hosts and servers die with the group
        )
    try:
        _wait_healthy(url, proc, log)
        yield {"url": url, "folder": folder, "work": work, "log": log}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def vscode_run(code_server: dict[str, Any], editor_log: EditorLog) -> dict[str, Any]:
    """One session in the browser; what VS Code showed at each step."""
    require_file(CHROMIUM, "Debian's chromium")
    work: Path = code_server["work"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    out = work / "observed.json"

    def at(element: Any) -> dict[str, int]:
        return {"line": element.line + 1, "column": element.column + 4}

    scenario = {
        "url": code_server["url"],
        "folder": str(code_server["folder"]),
        "log_name": editor_log.path.name,
        "out": str(out),
        "shots": str(SHOTS),
        "chromium": str(CHROMIUM),
        "hover": at(editor_log.hover),
        "definition": at(editor_log.definition),
        "hints": [editor_log.hover.text, editor_log.definition.text],
        "symbolize": {"line": editor_log.symbolize.line + 1},
        "lens_title": "Symbolize",
        "view_key": "Control+Alt+Y",
        "edit_marker": EDIT_MARKER,
        "detect_name": DETECTED,
        "bare_python": str(BARE_PYTHON),
    }
    (work / "scenario.json").write_text(json.dumps(scenario))
    started = time.time()
    proc = subprocess.run(
        ["node", str(DRIVER), str(work / "scenario.json")],
        cwd=HARNESS,
        # Chromium keeps its crash database under XDG_CONFIG_HOME: keep it in the test's folder.
        env=clean_env(
            XDG_CONFIG_HOME=str(work / "browser-config"), XDG_CACHE_HOME=str(work / "browser-cache")
        ),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.exists(), f"the driver wrote nothing:\n{proc.stdout}\n{proc.stderr}"
    observed: dict[str, Any] = json.loads(out.read_text())
    observed["driver_stderr"] = proc.stderr
    observed["server_log"] = code_server["log"]
    observed["folder"] = str(code_server["folder"])
    observed["edited_meanwhile"] = _sources_edited_since(started)
    return observed


def _sources_edited_since(started: float) -> list[str]:
    """The server's sources saved while the editor ran. The checkout is shared: a
    server started between two saves of one change runs half of it (a view that
    showed the raw log, cursor on line 2, was a view.py already taking the log's
    chunks with a server.py still passing it the whole text)."""
    edited = []
    for folder in SERVER_SOURCES:
        for path in sorted(folder.rglob("*.py")):
            try:
                if path.stat().st_mtime >= started:
                    edited.append(str(path.relative_to(REPO)))
            except FileNotFoundError:
                edited.append(str(path.relative_to(REPO)))
    return edited


def _step(observed: dict[str, Any], name: str) -> dict[str, Any]:
    result: dict[str, Any] = observed[name]
    if "error" in result:
        log = Path(observed["server_log"]).read_text()[-3000:]
        output = "\n".join(result.get("server_output", []))
        edited = observed.get("edited_meanwhile") or []
        torn = (
            f"\nnote: server sources saved while VS Code ran (a half-edited checkout?): {edited}"
            if edited
            else ""
        )
        pytest.fail(
            f"{name} failed in VS Code: {result['error']}\nserver output:\n{output}\n"
            f"code-server log:\n{log}{torn}"
        )
    return result


def test_log_opens_in_the_log_language_with_code_lenses(vscode_run: dict[str, Any]) -> None:
    opened = _step(vscode_run, "open")
    assert opened["mode"] == "Log"  # the built-in language, left alone
    assert opened["tab"]["label"] == "crash.log"


def test_hover_shows_the_inline_chain(vscode_run: dict[str, Any], editor_log: EditorLog) -> None:
    hover = _step(vscode_run, "hover")
    text = hover["text"]
    frames = editor_log.hover.frames
    assert len(frames) > 1
    assert re.match(r"frame #\d+", hover["heading"]), hover  # rendered markdown: an H3
    for frame in frames:
        assert frame.function in text
        assert f"{frame.file}:{frame.line}:{frame.column}" in text
    assert frames[0].module in text and frames[0].offset in text
    assert editor_log.build_id in text


def test_definition_opens_the_source_file_at_the_line(
    vscode_run: dict[str, Any], editor_log: EditorLog
) -> None:
    jumped = _step(vscode_run, "definition")
    (frame,) = editor_log.definition.frames
    assert jumped["tab"]["label"] == Path(frame.file).name
    assert jumped["selection"].startswith(f"Ln {frame.line}, Col {frame.column}")


def test_inlay_hints_follow_the_frames(vscode_run: dict[str, Any], editor_log: EditorLog) -> None:
    lines = _step(vscode_run, "hints")["lines"]
    for element, line in zip((editor_log.hover, editor_log.definition), lines, strict=True):
        after = line.split(element.text, 1)[1]
        assert "→" in after
        assert element.frames[0].function in after
        assert element.frames[-1].function in after


def test_problems_panel_shows_the_malformed_element(
    vscode_run: dict[str, Any], editor_log: EditorLog
) -> None:
    rows = _step(vscode_run, "problems")["rows"]
    expected = editor_log.diagnostic
    where = f"at line {expected.line + 1} and character {expected.column + 1}"
    assert any(
        row.startswith("Error") and expected.message in row and where in row for row in rows
    ), rows


def test_show_symbolized_log_opens_the_view_beside(
    vscode_run: dict[str, Any], editor_log: EditorLog
) -> None:
    view = _step(vscode_run, "symbolized_view")
    assert "Editor Group 2" in view["tab"]["aria"]  # beside the log
    assert view["tab"]["label"] == "crash (symbolized).log"  # not the log's own name
    assert _shown_log(view["uri"]) == Path(vscode_run["folder"]) / editor_log.path.name
    assert view["cursor"] == editor_log.symbolize.output[0]
    assert not any("{{{bt:" in line for line in view["lines"])


def _shown_log(uri: str) -> Path:
    """The log a view's URI names (the server's virtual document, not an untitled copy):
    its path with " (symbolized)" before the extension."""
    scheme, _, path = uri.partition(":")
    assert scheme == VIEW_SCHEME, uri
    view = Path(urllib.parse.unquote(path))
    assert view.stem.endswith(" (symbolized)"), uri
    return view.with_stem(view.stem.removesuffix(" (symbolized)"))


def test_view_opened_right_after_an_edit_shows_the_new_text_at_the_backtrace(
    vscode_run: dict[str, Any], editor_log: EditorLog
) -> None:
    view = _step(vscode_run, "edited_view")
    assert _shown_log(view["uri"]) == Path(vscode_run["folder"]) / editor_log.path.name
    # One line further down than in the unedited view: the typed line is above it.
    assert view["line"] == _step(vscode_run, "symbolized_view")["line"] + 1
    assert view["cursor"] == editor_log.symbolize.output[0]


def test_code_lens_opens_the_view_at_its_backtrace(
    vscode_run: dict[str, Any], editor_log: EditorLog
) -> None:
    view = _step(vscode_run, "code_lens")
    assert "Editor Group 2" in view["tab"]["aria"]  # beside the log, as the command does
    assert view["tab"]["label"] == "crash (symbolized).log"
    assert view["log_tab"]["label"] == editor_log.path.name  # the log stays open in group 1
    assert _shown_log(view["uri"]) == Path(vscode_run["folder"]) / editor_log.path.name
    assert view["cursor"] == editor_log.symbolize.output[0]
    assert not any("{{{bt:" in line for line in view["lines"])


def test_plain_text_with_markup_becomes_a_markup_log(vscode_run: dict[str, Any]) -> None:
    detected = _step(vscode_run, "detected")
    assert detected["mode"] == "Symbolizer markup log"
    assert detected["hinted"] > 0  # the server attached: inlay hints on screen


def test_python_without_the_server_is_reported(vscode_run: dict[str, Any]) -> None:
    shown = _step(vscode_run, "python_mismatch")
    assert f"{BARE_PYTHON} (Python 3." in shown["text"]
    assert "stackmark.server.pythonPath" in shown["text"]
    assert "cannot import stackmark_lsp" in shown["text"]
    assert f"{BARE_PYTHON} -m pip install '/path/to/stackmark[lsp]'" in shown["text"]
    assert shown["buttons"] == ["Open Settings", "Show Output"]
