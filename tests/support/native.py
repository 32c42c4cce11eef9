"""Run stackmark with or without its compiled accelerator inside one test process.

Whole runs are forced pure by the environment (STACKMARK_PURE=1, `make
pytest-pure`); differential tests need both implementations side by side, so
`pure_python()` hides the compiled modules from the modules that use them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

KERNEL_USERS = (
    "stackmark.demangle.itanium",
    "stackmark.dwarf.abbrev",
    "stackmark.dwarf.functions",
    "stackmark.dwarf.lines",
    "stackmark.dwarf.ranges",
    "stackmark.formats.gsym.creator",
    "stackmark.formats.gsym.dwarf_units",
    "stackmark.formats.gsym.dwarf_walk",
    "stackmark.formats.gsym.extras",
    "stackmark.formats.gsym.from_dwarf",
    "stackmark.formats.gsym.name_kernel",
    "stackmark.markup.fastpath",
    "stackmark.symbols.gsym_source",
    "stackmark_lsp.index",
)
"""Every module that runs a compiled kernel: each holds it as `_native`
(`_native = load("_dwarf")`); a test checks that this list is complete."""


@contextmanager
def pure_python() -> Iterator[None]:
    """Within the block, every kernel user runs its pure-Python reference."""
    modules = [importlib.import_module(name) for name in KERNEL_USERS]
    saved = [module._native for module in modules]
    for module in modules:
        module._native = None
    try:
        yield
    finally:
        for module, kernel in zip(modules, saved, strict=True):
            module._native = kernel
