"""`npm run package:bundled`: a .vsix that carries the server and its Python dependencies.

The bundled build is for machines where nothing is installed into Python:
the extension runs `python3 -m stackmark_lsp` with the .vsix's
`bundled/libs` on PYTHONPATH (editors/vscode/src/launch.ts). The test
builds it, unpacks it, and runs exactly that command with Debian's
/usr/bin/python3 (which has no stackmark, pygls or pyelftools), then asks
the server for a hover over stdio and checks it against llvm-symbolizer-19.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import IO, Any

import pytest

from tests.editors.conftest import EDITORS, clean_env, require_file
from tests.editors.scenario import EditorLog

EXTENSION = EDITORS / "vscode"
BARE_PYTHON = Path("/usr/bin/python3")


def _send(pipe: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    pipe.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    pipe.flush()


def _receive(pipe: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (header := pipe.readline()) not in (b"\r\n", b""):
        name, _, value = header.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    assert length, "the server closed its output"
    answer: dict[str, Any] = json.loads(pipe.read(length))
    return answer


def _answer(server: subprocess.Popen[bytes], request_id: int) -> Any:
    """The result of request `request_id`; the server's own requests get empty answers
    (no configuration: the initialization options hold the settings)."""
    assert server.stdin is not None and server.stdout is not None
    while True:
        message = _receive(server.stdout)
        if "method" in message and "id" in message:
            items = message.get("params", {}).get("items", [])
            result = [None] * len(items) if message["method"] == "workspace/configuration" else None
            _send(server.stdin, {"id": message["id"], "result": result})
        elif message.get("id") == request_id:
            assert "error" not in message, message
            return message.get("result")


@pytest.fixture(scope="module")
def bundled_extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_file(EXTENSION / "node_modules" / ".bin" / "vsce", "the extension's npm packages")
    work = tmp_path_factory.mktemp("bundled-vsix")
    vsix = work / "stackmark-bundled.vsix"
    proc = subprocess.run(
        ["npm", "run", "package:bundled", "--", "--python", sys.executable, "--out", str(vsix)],
        cwd=EXTENSION,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"npm run package:bundled failed:\n{proc.stdout}\n{proc.stderr}"
    with zipfile.ZipFile(vsix) as archive:
        archive.extractall(work / "unpacked")
    # Leave the checkout as a plain build would: no bundled copy lying around.
    subprocess.run(["rm", "-rf", str(EXTENSION / "bundled")], check=True)
    return work / "unpacked" / "extension"


@pytest.mark.slow
def test_bundled_vsix_carries_the_server(bundled_extension: Path) -> None:
    libs = bundled_extension / "bundled" / "libs"
    for package in ("stackmark", "stackmark_lsp", "pygls", "lsprotocol", "elftools", "cxxfilt"):
        assert (libs / package).is_dir(), f"{package} is not bundled"
    assert not list(libs.rglob("__pycache__")), "compiled files are for one Python only"


@pytest.mark.slow
def test_bundled_server_runs_on_a_bare_python(
    bundled_extension: Path, editor_log: EditorLog
) -> None:
    require_file(BARE_PYTHON, "Debian's python3")
    bare = subprocess.run([BARE_PYTHON, "-c", "import pygls"], capture_output=True)
    assert bare.returncode != 0, "this test needs a Python without pygls"
    libs = bundled_extension / "bundled" / "libs"
    env = clean_env(PYTHONPATH=str(libs), PYTHONNOUSERSITE="1")
    server = subprocess.Popen(
        [BARE_PYTHON, "-m", "stackmark_lsp"],  # what launch.ts runs for a bundled build
        env=env,
        cwd=editor_log.path.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        root = editor_log.path.parent.as_uri()
        _send(
            server.stdin,
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": root,
                    "capabilities": {},
                    "initializationOptions": {
                        "debugFileDirectories": [str(editor_log.debug_dir)],
                        "cacheDir": str(editor_log.path.parent / "cache"),
                    },
                },
            },
        )
        assert _answer(server, 1)["serverInfo"]["name"] == "stackmark"
        _send(server.stdin, {"method": "initialized", "params": {}})
        uri = editor_log.path.as_uri()
        text = editor_log.path.read_text()
        _send(
            server.stdin,
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {"uri": uri, "languageId": "log", "version": 1, "text": text}
                },
            },
        )
        element = editor_log.hover
        _send(
            server.stdin,
            {
                "id": 2,
                "method": "textDocument/hover",
                "params": {
                    "textDocument": {"uri": uri},
                    "position": {"line": element.line, "character": element.column + 4},
                },
            },
        )
        hover = _answer(server, 2)
        contents = hover["contents"]["value"]
        for frame in element.frames:
            assert f"{frame.file}:{frame.line}:{frame.column}" in contents
        _send(server.stdin, {"id": 3, "method": "shutdown"})
        _answer(server, 3)
        _send(server.stdin, {"method": "exit"})
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
