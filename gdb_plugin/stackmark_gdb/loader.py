"""GDB loads stackmark by sourcing this file: `source /path/to/stackmark_gdb/loader.py`.

`stackmark gdb-init` prints that line for `~/.gdbinit`; `stackmark-gdb`
passes it with `-iex`. GDB runs this file in its `__main__` namespace
before stackmark is importable, so it first loads stackmark's bootstrap
module by path (it sits beside this package both in a checkout and in an
installed environment), which finds the environment and puts it on
`sys.path`; only then are stackmark and the plugin imported.

Nothing raised here may reach GDB: a failure prints one line and GDB
carries on without the plugin.
"""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import gdb


def _stackmark_load() -> None:
    here = Path(__file__).resolve()
    try:
        bootstrap = _stackmark_bootstrap_module(here)
        try:
            bootstrap.bootstrap(here)
        except bootstrap.BootstrapError as exc:
            gdb.write(f"stackmark: not loaded: {exc}\n", gdb.STDERR)
            return
        from stackmark_gdb.plugin import install

        install()
    except Exception as exc:  # never let an exception escape into GDB
        gdb.write(f"stackmark: not loaded: {type(exc).__name__}: {exc} (from {here})\n", gdb.STDERR)


def _stackmark_bootstrap_module(here: Path) -> ModuleType:
    """stackmark/debugger/bootstrap.py, loaded from its file."""
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


_stackmark_load()
