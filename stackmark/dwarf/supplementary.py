"""Finding the supplementary file a dwz-compressed file names (.gnu_debugaltlink).

`DwarfReader` does not search the file system: when a DIE points into the
supplementary file, it calls the `SupplementaryLoad` its caller gave with
what the link says (the file name and build ID) and the path of the file
that names it, and reads what it is given (model: addr2line's
`SplitDwarfLoad`); given none, it looks for nothing. The symbol store makes
one over the user's debug-file directories (`stackmark.symbols.store`,
whose default is GDB's, /usr/lib/debug); `stackmark gsym convert` over its
--debug-file-directory. A `supplementary_finder` looks, in order, at:

1. the name the link gives (relative names: beside the file that names it);
2. `DIR/.build-id/xx/rest.debug` in each debug-file directory DIR;

and takes the first ELF file there with the build ID the link gives.

A finder is picklable (a partial of a module-level function), so that the
GSYM converter's worker processes look where their caller does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial

from stackmark.elf import ElfFile
from stackmark.errors import FormatError

SupplementaryLoad = Callable[[str, str, str], "ElfFile | None"]
"""(name in .gnu_debugaltlink, its build ID in hex, path of the file naming it)
-> the supplementary file, opened, or None when there is none to be had."""


def supplementary_finder(debug_file_directories: Sequence[str]) -> SupplementaryLoad:
    """A `SupplementaryLoad` looking beside the file and in `debug_file_directories`."""
    return partial(_find, tuple(debug_file_directories))


def _find(directories: tuple[str, ...], name: str, build_id: str, referrer: str) -> ElfFile | None:
    here = os.path.dirname(os.path.abspath(referrer))
    candidates = [name if os.path.isabs(name) else os.path.join(here, name)]
    if build_id:
        for directory in directories:
            candidates.append(
                os.path.join(directory, ".build-id", build_id[:2], build_id[2:] + ".debug")
            )
    for path in dict.fromkeys(candidates):
        if not os.path.isfile(path):
            continue
        try:
            elf = ElfFile.open(path)
        except FormatError:
            continue
        if build_id and elf.build_id != build_id:
            elf.close()
            continue
        return elf
    return None
