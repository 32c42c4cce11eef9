"""LLDB loads stackmark by importing this package: `command script import /path/to/stackmark_lldb`.

`stackmark lldb-init` prints that line for `~/.lldbinit`; `stackmark-lldb`
passes it with `-O`. LLDB puts the package's parent directory on
`sys.path`, imports the package and calls `__lldb_init_module`. At that
point stackmark itself may not be importable (a development checkout, or
a venv LLDB's Python does not know), so the loader first loads
stackmark's bootstrap module by path (it sits beside this package, both in
a checkout and in an installed environment), which finds the environment,
checks its Python version and puts it on `sys.path`; only then are
stackmark and the plugin imported. Importing the package has no other
effect, so the plugin's modules can import it freely.

Nothing raised here may reach LLDB: a failure prints one line and LLDB
carries on without the plugin.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def __lldb_init_module(debugger: Any, internal_dict: dict[str, Any]) -> None:
    here = Path(__file__).resolve()
    try:
        bootstrap = _bootstrap_module(here)
        try:
            bootstrap.bootstrap(here)
        except bootstrap.BootstrapError as exc:
            _say(f"stackmark: not loaded: {exc}")
            return
        from stackmark_lldb.plugin import install

        install(debugger, sys.modules[__name__])
    except Exception as exc:  # never let an exception escape into LLDB
        _say(f"stackmark: not loaded: {type(exc).__name__}: {exc} (from {here.parent})")


def _say(line: str) -> None:
    """One line on LLDB's error output (the script interpreter's stderr)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _bootstrap_module(here: Path) -> ModuleType:
    """stackmark/debugger/bootstrap.py, loaded from its file (see the module docstring)."""
    for root in (here.parents[1], here.parents[2]):  # site-packages/, or the checkout
        path = root / "stackmark" / "debugger" / "bootstrap.py"
        if path.is_file():
            spec = importlib.util.spec_from_file_location("_stackmark_bootstrap", path)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module  # dataclasses look their module up
                spec.loader.exec_module(module)
                return module
    raise ImportError(f"stackmark/debugger/bootstrap.py not found beside {here.parent}")
