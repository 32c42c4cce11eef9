"""Finding, checking and activating the stackmark environment (stackmark.debugger.bootstrap)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stackmark.debugger import bootstrap
from stackmark.debugger.bootstrap import BootstrapError


def make_venv(root: Path, version: str = "3.11.7", key: str = "version") -> Path:
    minor = ".".join(version.split(".")[:2])
    (root / "lib" / f"python{minor}" / "site-packages").mkdir(parents=True)
    (root / "pyvenv.cfg").write_text(f"home = /usr/bin\n{key} = {version}\n")
    return root


def test_environment_variable_wins(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "chosen")
    make_venv(tmp_path / "checkout" / ".venv")
    loader = tmp_path / "checkout" / "gdb_plugin" / "stackmark_gdb" / "loader.py"
    env = bootstrap.find_environment(loader, {"STACKMARK_VENV": str(venv)})
    assert env.venv == venv
    assert env.found_by == "$STACKMARK_VENV"
    assert env.site_packages == venv / "lib" / "python3.11" / "site-packages"


def test_loader_installed_inside_a_venv(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    loader = venv / "lib" / "python3.11" / "site-packages" / "stackmark_gdb" / "loader.py"
    env = bootstrap.find_environment(loader, {})
    assert env.venv == venv.resolve()
    assert env.found_by == "the loader's location"


def test_checkout_dot_venv(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "checkout" / ".venv", "3.11.2.final.0", key="version_info")
    loader = tmp_path / "checkout" / "gdb_plugin" / "stackmark_gdb" / "loader.py"
    env = bootstrap.find_environment(loader, {})
    assert env.venv == venv.resolve()
    assert env.python_version == (3, 11)


def test_nothing_found_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(BootstrapError, match="set STACKMARK_VENV"):
        bootstrap.find_environment(tmp_path / "somewhere" / "loader.py", {})


def test_variable_pointing_at_a_non_venv(tmp_path: Path) -> None:
    with pytest.raises(BootstrapError, match="not a virtual environment"):
        bootstrap.find_environment(tmp_path / "loader.py", {"STACKMARK_VENV": str(tmp_path)})


def test_version_mismatch_is_one_clear_line(tmp_path: Path) -> None:
    env = bootstrap.find_environment(
        tmp_path / "loader.py", {"STACKMARK_VENV": str(make_venv(tmp_path / "v", "3.12.1"))}
    )
    with pytest.raises(BootstrapError) as caught:
        bootstrap.check_python(env, running=(3, 11))
    message = str(caught.value)
    assert "\n" not in message
    assert "Python 3.12" in message and "Python 3.11" in message
    bootstrap.check_python(env, running=(3, 12))  # same major.minor: accepted


def test_activate_processes_pth_files_and_goes_first(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    site_packages = venv / "lib" / "python3.11" / "site-packages"
    extra = tmp_path / "editable-source"
    extra.mkdir()
    (site_packages / "_editable.pth").write_text(f"{extra}\n")
    env = bootstrap.find_environment(tmp_path / "x.py", {"STACKMARK_VENV": str(venv)})
    saved = list(sys.path)
    try:
        bootstrap.activate(env)
        assert sys.path[:2] == [str(site_packages), str(extra)]
    finally:
        sys.path[:] = saved
