"""Run the DWARF conversion over every compile unit, in one process or several.

Sequentially, each unit's FunctionInfos go straight into the creator.

In parallel (`jobs` > 1), each worker converts a slice of the units into
FunctionInfos whose strings and files are indexes into the worker's own
tables, and returns the order in which it first inserted them. The parent
replays those insertions unit by unit, in unit order, which yields exactly
the string and file tables a single process builds (insertion order is all
that decides them), then renumbers the workers' indexes. So the output
never depends on the number of processes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.from_dwarf import DwarfReport, ExtrasCollector, UnitConverter

if TYPE_CHECKING:
    from stackmark.formats.gsym.creator import GsymCreator


class ProgressSink(Protocol):
    def update(self, label: str, done: int, total: int) -> None: ...


def convert_dwarf(
    elf: ElfFile,
    creator: GsymCreator,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    extras: ExtrasCollector | None = None,
) -> DwarfReport:
    """Add the FunctionInfos of every compile unit of `elf` to `creator`."""
    report = DwarfReport()
    if not elf.has_dwarf:
        return report
    dwarf = DwarfReader(elf)
    units = list(dwarf.units())
    names = NameBuilder()
    valid: Callable[[int], bool] = creator.is_valid_text_address
    for done, unit in enumerate(units):
        converter = UnitConverter(unit, creator, names, valid, report, extras)
        creator.functions.extend(converter.convert())
        if progress is not None:
            progress.update("converting DWARF units", done + 1, len(units))
    return report


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
