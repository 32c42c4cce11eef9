"""The compiled accelerator, and the one place that decides whether it is used.

stackmark's pure-Python modules are the reference implementation. A few hot
kernels also exist in C, one extension module per concern, compiled from the
`_*.c` files of this package when stackmark is installed (`build_native.py`):

    _demangle.c       C++ names: libstdc++'s __cxa_demangle without ctypes
    _dwarf.c          DWARF: the line-number program, the DIE walks (the
                      symbolizer's and the GSYM converter's), attribute
                      decoding, abbreviation tables, range lists, address maps
    _gsym_convert.c   DWARF to GSYM: line rows into GSYM rows, the column points,
                      inlined calls' ranges, a worker's functions rebuilt
    _gsym_records.c   GSYM: FunctionInfo records (line tables, inline trees) and
                      their exact std::sort order
    _gsym_extras.c    GSYM cache extras: the address index
    _gsym_lookup.c    a warm GSYM cache lookup: the frames at an address
    _logindex.c       the language server's log index: the bulk frame check's scan,
                      the crash reports' contextual lines
    _markup.c         the markup filter's run of lone `bt` lines

(docs/accelerator.md lists each kernel and its Python twin.)

A module that runs a kernel asks for it here, once, at import:

    from stackmark._native import load
    _dwarf = load("_dwarf")          # the compiled module, or None
    ...
    if _dwarf is not None:
        result = _dwarf.kernel(...)  # None: not in the kernel's domain
    if result is None:
        result = pure_python(...)    # the reference

`load` gives None, and the pure-Python path runs, when STACKMARK_PURE=1 is set
in the environment, or when the module was not built (no C compiler at install
time) or cannot be loaded (a debugger embedding another Python version).
`implementation()` names what is active; `stackmark --version` prints it.

Contract of every kernel: it returns exactly what the reference returns, or
None when its input is outside what it handles (values wider than 64 bits,
damaged data...), and then the caller runs the reference, which computes the
result or raises the `FormatError` a user sees. So errors and their offsets
are the reference's by construction; the kernels still check every read
against the buffer's bounds, since the reference only runs after them.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_ENV = "STACKMARK_PURE"

MODULES = (
    "_demangle",
    "_dwarf",
    "_gsym_convert",
    "_gsym_extras",
    "_gsym_lookup",
    "_gsym_records",
    "_logindex",
    "_markup",
)
"""Every compiled module: each `_name.c` of this package, by name."""

_loaded: dict[str, ModuleType | None] = {}
_failures: dict[str, str] = {}


def forced_pure() -> bool:
    """True when the environment asks for the pure-Python implementation."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def load(name: str) -> ModuleType | None:
    """The compiled module `name` (one of MODULES), or None when it is not used."""
    if name in _loaded:
        return _loaded[name]
    module: ModuleType | None = None
    if not forced_pure():
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError as exc:  # not built, or built for another Python
            _failures[name] = str(exc)
    _loaded[name] = module
    return module


def implementation() -> str:
    """Which implementation runs, for `stackmark --version` and bug reports."""
    if forced_pure():
        return f"pure Python: {PURE_ENV} is set"
    compiled = [name.lstrip("_") for name in MODULES if load(name) is not None]
    missing = [name.lstrip("_") for name in MODULES if load(name) is None]
    if not compiled:
        return "pure Python: no compiled accelerator is built"
    if missing:
        return f"compiled accelerator: {', '.join(compiled)}; pure Python: {', '.join(missing)}"
    return f"compiled accelerator: {', '.join(compiled)}"
