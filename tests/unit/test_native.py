"""The compiled accelerator: built, used by default, named by --version, optional."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from stackmark import _native
from tests.support.build import REPO
from tests.support.native import KERNEL_USERS


def test_the_default_run_uses_every_compiled_module() -> None:
    # A missing or broken build must not pass as the accelerated run: unless the
    # run is forced pure on purpose, every module of stackmark/_native loads.
    sources = sorted(p.stem for p in (REPO / "stackmark" / "_native").glob("_*.c"))
    assert sources == sorted(_native.MODULES)
    if _native.forced_pure():
        assert all(_native.load(name) is None for name in _native.MODULES)
        return
    missing = [name for name in _native.MODULES if _native.load(name) is None]
    assert not missing, (
        f"compiled modules {missing} did not load ({_native._failures}); "
        "build them with `python build_native.py` or run `make`"
    )


def test_version_names_the_active_implementation() -> None:
    def version(**env: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "stackmark", "--version"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        ).stdout

    assert "pure Python: STACKMARK_PURE is set" in version(STACKMARK_PURE="1")
    if not _native.forced_pure():
        assert "compiled accelerator: demangle, dwarf" in version(STACKMARK_PURE="")


def test_every_module_that_runs_a_kernel_is_known_to_the_differential_tests() -> None:
    # The core's modules, and the language server's (its package is under server/).
    users = sorted(
        ".".join(path.relative_to(root).with_suffix("").parts)
        for root, package in ((REPO, "stackmark"), (REPO / "server", "stackmark_lsp"))
        for path in (root / package).rglob("*.py")
        if re.search(r"^_native = load\(", path.read_text(), re.MULTILINE)
    )
    assert users == sorted(KERNEL_USERS)


def _wheel(tmp_path: Path, **env: str) -> tuple[str, list[str]]:
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"),
            *(str(REPO), "-w", str(tmp_path)),
        ],
        capture_output=True,
        check=True,
        env={**os.environ, **env},
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return wheel.name, [n for n in archive.namelist() if n.startswith("stackmark/_native/")]


def test_a_wheel_carries_the_compiled_modules_or_is_pure_python_without_a_compiler(
    tmp_path: Path,
) -> None:
    name, files = _wheel(tmp_path / "cc")
    assert re.search(r"-cp3\d+-cp3\d+-linux_\w+\.whl$", name), name
    assert any(f.startswith("stackmark/_native/_dwarf.") and f.endswith(".so") for f in files)
    assert not any(f.endswith((".c", ".h")) for f in files)

    name, files = _wheel(tmp_path / "no-cc", CC="/nonexistent/cc")
    assert name.endswith("-py3-none-any.whl"), name
    assert files == ["stackmark/_native/__init__.py"]
