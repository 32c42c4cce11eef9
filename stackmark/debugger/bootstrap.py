"""Find, check and activate the stackmark environment from inside a debugger.

GDB and LLDB embed their own Python (3.11.2 on Debian 12) with their own
`sys.path`; stackmark and its dependencies live in a virtual environment.
The debugger loaders (`stackmark_gdb/loader.py`, the LLDB one) load this
file *by path*, before `stackmark` is importable, so it imports only the
standard library and nothing from stackmark.

Where the environment comes from, first match wins:
1. `$STACKMARK_VENV`;
2. the loader's own location: installed into a venv, the loader sits at
   `<venv>/lib/pythonX.Y/site-packages/<plugin>/`, so an ancestor holds
   `pyvenv.cfg`;
3. a development checkout: an ancestor holding `.venv/pyvenv.cfg`.

The venv must have been made for the same Python major.minor as the
debugger's (compiled wheels and bytecode are per minor version; patch
releases mix fine). Activation uses `site.addsitedir`, which processes
`.pth` files (editable installs rely on them), and moves the new entries to
the front of `sys.path` so the venv wins over the system's dist-packages.
"""

from __future__ import annotations

import os
import re
import site
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "STACKMARK_VENV"


class BootstrapError(Exception):
    """The environment cannot be used; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Environment:
    """A virtual environment stackmark can run from."""

    venv: Path
    site_packages: Path
    python_version: tuple[int, int]
    found_by: str  # how it was found, for messages ("$STACKMARK_VENV", ...)


def read_venv_version(venv: Path) -> tuple[int, int]:
    """Python major.minor a venv was made for, from its `pyvenv.cfg`.

    `python -m venv` writes `version = 3.11.7`; virtualenv and uv write
    `version_info = 3.11.7.final.0`.
    """
    cfg = venv / "pyvenv.cfg"
    try:
        text = cfg.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise BootstrapError(f"cannot read {cfg}: {exc.strerror}") from None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("version", "version_info"):
            match = re.match(r"\s*(\d+)\.(\d+)", value)
            if match:
                return int(match.group(1)), int(match.group(2))
    raise BootstrapError(f"{cfg} does not say which Python version the environment is for")


def site_packages_of(venv: Path, version: tuple[int, int]) -> Path:
    """The venv's site-packages directory for `version`."""
    expected = venv / "lib" / f"python{version[0]}.{version[1]}" / "site-packages"
    if expected.is_dir():
        return expected
    candidates = sorted((venv / "lib").glob("python*/site-packages"))
    if candidates:
        return candidates[0]
    raise BootstrapError(f"{venv} has no lib/python*/site-packages directory")


def _venv_candidates(loader_file: Path, environ: Mapping[str, str]) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    explicit = environ.get(ENV_VAR)
    if explicit:
        found.append((Path(explicit).expanduser(), f"${ENV_VAR}"))
        return found
    ancestors = list(loader_file.resolve().parents)
    found += [(p, "the loader's location") for p in ancestors if (p / "pyvenv.cfg").is_file()]
    found += [
        (p / ".venv", "the checkout's .venv")
        for p in ancestors
        if (p / ".venv" / "pyvenv.cfg").is_file()
    ]
    return found


def find_environment(
    loader_file: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> Environment:
    """The environment a loader at `loader_file` should use (see module docstring)."""
    env = os.environ if environ is None else environ
    candidates = _venv_candidates(Path(loader_file), env)
    if not candidates:
        raise BootstrapError(
            f"no stackmark environment found near {loader_file}; "
            f"set {ENV_VAR} to the virtual environment stackmark is installed in"
        )
    venv, found_by = candidates[0]
    if not (venv / "pyvenv.cfg").is_file():
        raise BootstrapError(f"{found_by}={venv} is not a virtual environment (no pyvenv.cfg)")
    version = read_venv_version(venv)
    return Environment(venv, site_packages_of(venv, version), version, found_by)


def check_python(env: Environment, running: tuple[int, int] | None = None) -> None:
    """Refuse an environment made for another Python major.minor than `running`."""
    have = running or (sys.version_info[0], sys.version_info[1])
    if env.python_version != have:
        want = f"{env.python_version[0]}.{env.python_version[1]}"
        raise BootstrapError(
            f"{env.venv} (from {env.found_by}) is for Python {want} but this debugger "
            f"runs Python {have[0]}.{have[1]}; create the environment with "
            f"python{have[0]}.{have[1]} or point {ENV_VAR} at one that matches"
        )


def activate(env: Environment) -> None:
    """Put the environment's site-packages (and its .pth entries) first on sys.path."""
    before = list(sys.path)
    site.addsitedir(str(env.site_packages))
    added = [entry for entry in sys.path if entry not in before]
    sys.path[:] = added + [entry for entry in sys.path if entry not in added]


def bootstrap(
    loader_file: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> Environment:
    """Find, check and activate the environment for the loader at `loader_file`."""
    env = find_environment(loader_file, environ)
    check_python(env)
    activate(env)
    return env
