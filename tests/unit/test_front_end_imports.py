"""The core imports no web framework and no Dask: those are the front ends' extras."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import stackmark

FRONT_ENDS = ("stackmark.cli", "stackmark.service", "stackmark.debugger")
EXTRAS = ("starlette", "uvicorn", "prometheus_client", "dask", "distributed", "anyio")


def core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(stackmark.__path__, "stackmark."):
        if not info.name.startswith(FRONT_ENDS) and not info.name.endswith("__main__"):
            names.append(info.name)
    return names


def test_importing_every_core_module_loads_no_extra() -> None:
    modules = core_modules()
    assert "stackmark.symbols.symbolication_v5" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {EXTRAS!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
