"""`stackmark gdb-init|lldb-init [--install]` and the `stackmark-gdb`/`stackmark-lldb` launchers.

A debugger loads stackmark through a loader file shipped in its plugin
package (`stackmark_gdb/loader.py`). `gdb-init` prints the init-file line
that loads it, as its first line, so `stackmark gdb-init >> ~/.gdbinit`
and copy-paste both work; `--install` appends the line to the init file
unless it is already there. The launcher runs the debugger with that line
given on the command line instead, so nothing needs installing.

The loader finds the environment from its own location; when it would not
find this one (say, an editable install into a venv outside the checkout),
the line names the environment in `$STACKMARK_VENV` itself.

Each debugger is one `DebuggerInit` entry; `add_arguments` learns which
one from the subcommand name (`stackmark gdb-init` -> "gdb-init").
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stackmark.debugger import bootstrap
from stackmark.errors import StackmarkError


@dataclass(frozen=True, slots=True)
class DebuggerInit:
    """How one debugger loads stackmark."""

    debugger: str  # the debugger's name for messages: "GDB"
    executable: str  # the program the launcher runs: "gdb"
    plugin_package: str  # the importable package holding the loader
    loader: str  # the loader's file name inside that package
    init_file: str  # the user's init file, "~/..."
    load_command: str  # the debugger command that loads a file, "{loader}" filled in
    python_load: str  # the same from the debugger's Python, for the $STACKMARK_VENV form
    launch_option: str  # the option that runs a command before anything else
    alternatives: tuple[str, ...] = ()  # programs the launcher tries when `executable` is missing


DEBUGGERS: dict[str, DebuggerInit] = {
    "gdb-init": DebuggerInit(
        debugger="GDB",
        executable="gdb",
        plugin_package="stackmark_gdb",
        loader="loader.py",
        init_file="~/.gdbinit",
        load_command="source {loader}",
        python_load="python import os; os.environ.setdefault({venv_var!r}, {venv!r}); "
        "gdb.execute({command!r})",
        launch_option="-iex",
    ),
    # LLDB imports the package directory (`loader` is its __init__.py): the module
    # LLDB imports is then named stackmark_lldb, which no other plugin's loader is.
    "lldb-init": DebuggerInit(
        debugger="LLDB",
        executable="lldb",
        plugin_package="stackmark_lldb",
        loader="__init__.py",
        init_file="~/.lldbinit",
        load_command="command script import {loader_dir}",
        python_load="script import os; os.environ.setdefault({venv_var!r}, {venv!r}); "
        "lldb.debugger.HandleCommand({command!r})",
        launch_option="-O",
        alternatives=("lldb-19", "lldb-20", "lldb-21", "lldb-18"),
    ),
}


def loader_path(spec: DebuggerInit) -> Path:
    """The loader file of the installed plugin package (without importing it)."""
    found = importlib.util.find_spec(spec.plugin_package)
    if found is None or not found.submodule_search_locations:
        raise StackmarkError(f"the {spec.plugin_package} package is not installed")
    for location in found.submodule_search_locations:
        candidate = Path(location) / spec.loader
        if candidate.is_file():
            return candidate.resolve()
    raise StackmarkError(f"{spec.plugin_package} has no {spec.loader}")


def current_environment() -> Path:
    """The virtual environment this stackmark runs from."""
    prefix = Path(sys.prefix)
    if not (prefix / "pyvenv.cfg").is_file():
        raise StackmarkError(
            f"stackmark runs from {prefix}, which is not a virtual environment; the debugger "
            "plugins load stackmark from one (python3 -m venv, then pip install stackmark)"
        )
    return prefix.resolve()


def init_line(spec: DebuggerInit) -> str:
    """The init-file line that loads stackmark into the debugger."""
    loader = loader_path(spec)
    command = spec.load_command.format(loader=loader, loader_dir=loader.parent)
    venv = current_environment()
    environ = {k: v for k, v in os.environ.items() if k != bootstrap.ENV_VAR}
    try:
        found = bootstrap.find_environment(loader, environ).venv.resolve()
    except bootstrap.BootstrapError:
        found = None
    if found == venv:
        return command
    return spec.python_load.format(venv_var=bootstrap.ENV_VAR, venv=str(venv), command=command)


def install_line(line: str, init_file: Path) -> bool:
    """Append `line` to `init_file` unless it is there already; True if appended."""
    try:
        existing = init_file.read_text(encoding="utf-8") if init_file.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StackmarkError(f"cannot read {init_file}: {exc}") from None
    if line in (candidate.strip() for candidate in existing.splitlines()):
        return False
    separator = "" if not existing or existing.endswith("\n") else "\n"
    try:
        init_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = "a file is in the way" if isinstance(exc, FileExistsError) else exc.strerror
        raise StackmarkError(
            f"cannot create the directory {init_file.parent} for {init_file.name}: {why or exc}"
        ) from None
    try:
        with init_file.open("a", encoding="utf-8") as out:
            out.write(f"{separator}{line}\n")
    except OSError as exc:
        raise StackmarkError(f"cannot write {init_file}: {exc.strerror or exc}") from None
    return True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    command = parser.prog.split()[-1]
    spec = DEBUGGERS[command]
    parser.description = (
        f"Print the line that loads stackmark into {spec.debugger}, for {spec.init_file}."
    )
    parser.set_defaults(init_command=command)
    parser.add_argument(
        "--install",
        action="store_true",
        help=f"also append the line to {spec.init_file} (once: not if it is already there)",
    )
    parser.add_argument(
        "--init-file",
        metavar="FILE",
        help=f"the init file --install edits (default: {spec.init_file})",
    )


def run(args: argparse.Namespace) -> int:
    spec = DEBUGGERS[args.init_command]
    line = init_line(spec)
    print(line)
    init_file = Path(args.init_file or spec.init_file).expanduser()
    if not args.install:
        print(f"# add this line to {init_file}, or run: stackmark {args.init_command} --install")
        return 0
    if install_line(line, init_file):
        print(f"# added to {init_file}")
    else:
        print(f"# already in {init_file}")
    return 0


def launch(command: str, argv: Sequence[str] | None = None) -> int:
    """Run the debugger with stackmark loaded (the `stackmark-gdb` console script)."""
    spec = DEBUGGERS[command]
    args = list(sys.argv[1:] if argv is None else argv)
    name = f"stackmark-{spec.executable}"
    try:
        loader = loader_path(spec)
        venv = current_environment()
    except StackmarkError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 1
    environ = dict(os.environ)
    environ[bootstrap.ENV_VAR] = str(venv)
    program = environ.get(f"STACKMARK_{spec.executable.upper()}") or _program(spec)
    load = spec.load_command.format(loader=loader, loader_dir=loader.parent)
    try:
        os.execvpe(program, [program, spec.launch_option, load, *args], environ)
    except OSError as exc:
        print(f"{name}: error: cannot run {program}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # not reached: execvpe replaces this process


def _program(spec: DebuggerInit) -> str:
    """The debugger to run: `executable` if it is on PATH, else the first alternative that is."""
    for name in (spec.executable, *spec.alternatives):
        if shutil.which(name):
            return name
    return spec.executable


def gdb_main() -> int:
    """Entry point of `stackmark-gdb`."""
    return launch("gdb-init")


def lldb_main() -> int:
    """Entry point of `stackmark-lldb`."""
    return launch("lldb-init")
