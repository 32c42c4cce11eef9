"""Finding the files split DWARF lives in: the package FILE.dwp, or a unit's .dwo file.

`DwarfReader` does not search the file system: for a skeleton unit it asks
the `SplitDwarfLoad` its caller gave for the package of the file it reads,
and, when there is none, for the .dwo files that may hold the unit the
skeleton names; it reads what it is given and checks the DWO id itself
(model: addr2line's `SplitDwarfLoad`). Given none, it looks for nothing.
`SplitDwarfFinder` looks where llvm looks:

1. the package: `FILE.dwp` beside the file (FILE's own name plus `.dwp`);
2. a .dwo file: at its absolute name; else under the skeleton's
   DW_AT_comp_dir, then beside the file; last, its base name beside the file.

The symbol store gives one to each module's files (`ModuleFiles.load_split`:
the module's DWARF source and its GSYM cache build read the same files);
`stackmark gsym convert` and `verify` give one, and so does
llvm-symbolizer-stackmark. A finder opens each path once and keeps what it
opened. It pickles as a fresh finder (the files stay behind), so that the
GSYM converter's worker processes look where their caller does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Protocol

from stackmark.elf import ElfFile
from stackmark.errors import FormatError


class SplitDwarfLoad(Protocol):
    """Where a reader's split units are (`referrer`: the path of the file it reads)."""

    def package(self, referrer: str) -> ElfFile | None:
        """The .dwp package for `referrer`, opened; None when there is none."""
        ...

    def dwo_files(self, name: str, comp_dir: str | None, referrer: str) -> Iterator[ElfFile]:
        """The .dwo files that may be the one a skeleton names (`name`, its
        DW_AT_dwo_name, and its DW_AT_comp_dir), opened, most likely first."""
        ...


class SplitDwarfFinder:
    """A `SplitDwarfLoad` looking in llvm's places (see the module docstring)."""

    def __init__(self) -> None:
        self._opened: dict[str, ElfFile | None] = {}

    def __reduce__(self) -> tuple[type[SplitDwarfFinder], tuple[()]]:
        return (SplitDwarfFinder, ())  # a worker process opens its own files

    def package(self, referrer: str) -> ElfFile | None:
        return self._open(referrer + ".dwp")

    def dwo_files(self, name: str, comp_dir: str | None, referrer: str) -> Iterator[ElfFile]:
        for path in _dwo_candidates(name, comp_dir, referrer):
            elf = self._open(path)
            if elf is not None:
                yield elf

    def _open(self, path: str) -> ElfFile | None:
        if path in self._opened:
            return self._opened[path]
        elf: ElfFile | None = None
        if os.path.isfile(path):
            try:
                elf = ElfFile.open(path)
            except FormatError:
                elf = None
        # Readers in several threads may share a finder: the first file opened is kept.
        kept = self._opened.setdefault(path, elf)
        if elf is not None and kept is not elf:
            elf.close()
        return kept


def _dwo_candidates(name: str, comp_dir: str | None, referrer: str) -> list[str]:
    """Where a .dwo file named `name` may be: at its absolute path, or under the
    compilation directory, or beside `referrer`; last, its base name beside `referrer`."""
    here = os.path.dirname(os.path.abspath(referrer))
    candidates = []
    if os.path.isabs(name):
        candidates.append(name)
    else:
        if comp_dir:
            candidates.append(os.path.join(comp_dir, name))
        candidates.append(os.path.join(here, name))
    candidates.append(os.path.join(here, os.path.basename(name)))
    return list(dict.fromkeys(candidates))
