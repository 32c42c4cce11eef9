"""Modules named by the path of their file, as llvm-symbolizer's requests name them.

A sanitizer asks its symbolizer about `"/path/of/module" 0xOFFSET`, and a
user runs `llvm-symbolizer -e FILE ADDRESS`: both name a file, where the
markup and the debuggers name a build ID. `ModulesByPath` reads the file's
build ID once and gives the `Module` the `Symbolizer` takes, so that a
path is answered from every place a build ID is (debug-file directories,
--obj files, symbol paths, debuginfod, GSYM files and cache), with the
file itself as the place of last resort:

    modules = ModulesByPath()
    found = modules.module("/usr/bin/app")   # a Module, or a ModuleProblem
    lookup = symbolizer.code(found, 0x1234)

A name may end in `:ARCH` (compiler-rt appends the architecture of a
module when it knows it); that suffix is dropped when the whole name is no
file and ARCH is an architecture name, as llvm-symbolizer does.
"""

from __future__ import annotations

import os

from stackmark.elf import ElfFile, is_elf
from stackmark.errors import FormatError
from stackmark.model import Module
from stackmark.plain import Record

ARCHITECTURE_NAMES = frozenset(
    {
        "x86_64",
        "x86_64h",
        "i386",
        "i686",
        "arm",
        "arm64",
        "aarch64",
        "armv7",
        "armv7s",
        "armv7k",
        "arm64e",
        "loongarch64",
        "riscv64",
        "powerpc64",
        "powerpc64le",
        "s390x",
        "s390",
        "mips",
        "mips64",
    }
)
"""The `:ARCH` suffixes compiler-rt writes (sanitizer_common's ModuleArchToString),
and llvm's spellings of the same machines."""


NOT_ELF = "not an ELF file"
"""The `ModuleProblem.reason` of a file that is no ELF file."""


class ModuleProblem(Record):
    """Why a path gives no module: `path` as asked, `reason` for a person."""

    __slots__ = _fields = ("path", "reason")
    path: str
    reason: str

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason


class ModulesByPath:
    """A `Module` per file path, its build ID read once (`id` counts the paths seen)."""

    def __init__(self) -> None:
        self._known: dict[str, Module | ModuleProblem] = {}

    def module(self, name: str) -> Module | ModuleProblem:
        """The module for the file `name` (see the module docstring for `:ARCH`)."""
        known = self._known.get(name)
        if known is None:
            known = self._known[name] = self._read(name)
        return known

    def _read(self, name: str) -> Module | ModuleProblem:
        path = strip_architecture(name)
        if not os.path.exists(path):
            return ModuleProblem(path, "no such file")
        if not os.path.isfile(path):
            return ModuleProblem(path, "not a regular file")
        if not is_elf(path):
            return ModuleProblem(path, NOT_ELF)
        try:
            with ElfFile.open(path) as elf:
                build_id = elf.build_id or ""
        except FormatError as exc:
            return ModuleProblem(path, f"unreadable ({exc.reason})")
        except OSError as exc:
            return ModuleProblem(path, exc.strerror or str(exc))
        return Module(len(self._known), path, build_id, path=path)


def strip_architecture(name: str) -> str:
    """`name` without a trailing `:ARCH`, when it names no file as it stands."""
    head, colon, arch = name.rpartition(":")
    if colon and arch in ARCHITECTURE_NAMES and not os.path.exists(name):
        return head
    return name
