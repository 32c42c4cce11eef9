"""Run the DWARF conversion over every compile unit, in one process or several.

Sequentially, each unit's FunctionInfos go straight into the creator.

In parallel (`jobs` > 1), each worker converts a contiguous slice of the
units into FunctionInfos whose strings and files are indexes into the
worker's own tables, and returns the order in which it first inserted
them. The parent replays those insertions slice by slice, in unit order,
which yields exactly the string and file tables a single process builds
(first-insertion order is all that decides them), then renumbers the
workers' indexes. So the output never depends on the number of processes.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.extras import NodeExtra
from stackmark.formats.gsym.from_dwarf import DwarfReport, ExtrasCollector, UnitConverter
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.ranges import Range

if TYPE_CHECKING:
    from stackmark.formats.gsym.creator import GsymCreator

PARALLEL_MIN_DEBUG_INFO = 4 << 20
"""Below this much .debug_info, starting processes costs more than it saves."""


class ProgressSink(Protocol):
    def update(self, label: str, done: int, total: int) -> None: ...


def default_jobs(elf: ElfFile) -> int:
    section = elf.section(".debug_info")
    if section is None or section.size < PARALLEL_MIN_DEBUG_INFO:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def convert_dwarf(
    elf: ElfFile,
    creator: GsymCreator,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    extras: ExtrasCollector | None = None,
) -> DwarfReport:
    """Add the FunctionInfos of every compile unit of `elf` to `creator`.

    `jobs` 0 picks one process per core for large DWARF, else one.
    """
    report = DwarfReport()
    if not elf.has_dwarf:
        return report
    dwarf = DwarfReader(elf)
    units = list(dwarf.units())
    if jobs == 0:
        jobs = default_jobs(elf)
    if jobs > 1 and len(units) >= 2:
        _convert_parallel(elf.name, units_sizes(units), creator, jobs, report, progress, extras)
        return report
    names = NameBuilder()
    valid: Callable[[int], bool] = creator.is_valid_text_address
    for done, unit in enumerate(units):
        converter = UnitConverter(unit, creator, names, valid, report, extras)
        creator.functions.extend(converter.convert())
        if progress is not None:
            progress.update("converting DWARF units", done + 1, len(units))
    return report


def units_sizes(units: list) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    return [(u.offset, u.header.end - u.offset) for u in units]


# -- parallel ---------------------------------------------------------------------


class _Recorder:
    """A string/file sink that numbers first insertions and remembers their order."""

    def __init__(self) -> None:
        self.strings: dict[str, int] = {"": 0}
        self.files: dict[str, int] = {"": 0}
        self.events: list[tuple[bool, str]] = []  # (is_file, text)

    def insert_string(self, text: str) -> int:
        found = self.strings.get(text)
        if found is None:
            found = self.strings[text] = len(self.strings)
            self.events.append((False, text))
        return found

    def insert_file(self, path: str) -> int:
        found = self.files.get(path)
        if found is None:
            found = self.files[path] = len(self.files)
            self.events.append((True, path))
        return found


_Tree = tuple[int, tuple[Range, ...], int, int, tuple["_Tree", ...]]


@dataclass(slots=True)
class _Chunk:
    """What a worker sends back (compact, so that pickling stays cheap)."""

    events: list[tuple[bool, str]]
    starts: array[int] = field(default_factory=lambda: array("Q"))
    sizes: array[int] = field(default_factory=lambda: array("Q"))
    names: array[int] = field(default_factory=lambda: array("I"))
    row_counts: array[int] = field(default_factory=lambda: array("q"))  # -1: no line table
    row_addrs: array[int] = field(default_factory=lambda: array("Q"))
    row_files: array[int] = field(default_factory=lambda: array("I"))
    row_lines: array[int] = field(default_factory=lambda: array("I"))
    trees: list[_Tree | None] = field(default_factory=list)
    extras: list[list[NodeExtra]] | None = None
    columns: list[tuple[int, int]] = field(default_factory=list)
    report: DwarfReport = field(default_factory=DwarfReport)


def _tree(node: InlineInfo) -> _Tree:
    return (
        node.name,
        tuple(node.ranges),
        node.call_file,
        node.call_line,
        tuple(_tree(c) for c in node.children),
    )


def _convert_chunk(
    path: str,
    offsets: list[int],
    text_ranges: list[Range] | None,
    want_extras: bool,
) -> _Chunk:
    """Worker: convert the units at `offsets` of the ELF file at `path`."""
    from stackmark.formats.gsym.creator import GsymCreator

    validity = GsymCreator()
    if text_ranges is not None:
        validity.set_text_ranges(text_ranges)
    recorder = _Recorder()
    chunk = _Chunk(recorder.events)
    collector = ExtrasCollector() if want_extras else None
    with ElfFile.open(path) as elf:
        dwarf = DwarfReader(elf)
        names = NameBuilder()
        functions: list[FunctionInfo] = []
        for offset in offsets:
            unit = dwarf.unit_at(offset)
            converter = UnitConverter(
                unit, recorder, names, validity.is_valid_text_address, chunk.report, collector
            )
            functions.extend(converter.convert())
    for info in functions:
        chunk.starts.append(info.start)
        chunk.sizes.append(info.size)
        chunk.names.append(info.name)
        rows = info.line_table
        if rows is None:
            chunk.row_counts.append(-1)
        else:
            chunk.row_counts.append(len(rows))
            for addr, file, line in rows:
                chunk.row_addrs.append(addr)
                chunk.row_files.append(file)
                chunk.row_lines.append(line)
        chunk.trees.append(None if info.inline is None else _tree(info.inline))
    if collector is not None:
        chunk.extras = [collector.function_nodes(info) for info in functions]
        chunk.columns = collector.columns
    return chunk


def _convert_parallel(
    path: str,
    sizes: list[tuple[int, int]],
    creator: GsymCreator,
    jobs: int,
    report: DwarfReport,
    progress: ProgressSink | None,
    extras: ExtrasCollector | None,
) -> None:
    # Contiguous slices of about equal DWARF size; more slices than workers
    # so that a slow one does not hold the others up.
    slices: list[list[int]] = []
    total = sum(size for _, size in sizes)
    target = max(1, total // (jobs * 4))
    current: list[int] = []
    acc = 0
    for offset, size in sizes:
        current.append(offset)
        acc += size
        if acc >= target:
            slices.append(current)
            current, acc = [], 0
    if current:
        slices.append(current)
    ranges = creator.text_ranges
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [
            pool.submit(_convert_chunk, path, offsets, ranges, extras is not None)
            for offsets in slices
        ]
        for done, future in enumerate(futures):
            _merge(future.result(), creator, report, extras)
            if progress is not None:
                progress.update("converting DWARF units", done + 1, len(futures))


def _merge(
    chunk: _Chunk, creator: GsymCreator, report: DwarfReport, extras: ExtrasCollector | None
) -> None:
    """Replay a worker's insertions and add its functions with global indexes."""
    strings = [0]
    files = [0]
    for is_file, text in chunk.events:
        if is_file:
            files.append(creator.insert_file(text))
        else:
            strings.append(creator.insert_string(text))
    report.merge(chunk.report)

    def tree(t: _Tree) -> InlineInfo:
        return InlineInfo(strings[t[0]], list(t[1]), files[t[2]], t[3], [tree(c) for c in t[4]])

    row = 0
    addrs, row_files, lines = chunk.row_addrs, chunk.row_files, chunk.row_lines
    for i, start in enumerate(chunk.starts):
        info = FunctionInfo(start, chunk.sizes[i], strings[chunk.names[i]])
        count = chunk.row_counts[i]
        if count >= 0:
            info.line_table = [
                LineEntry(addrs[k], files[row_files[k]], lines[k]) for k in range(row, row + count)
            ]
            row += count
        t = chunk.trees[i]
        if t is not None:
            info.inline = tree(t)
        creator.functions.append(info)
        if extras is not None and chunk.extras is not None and chunk.extras[i]:
            nodes = chunk.extras[i]
            extras.roots[id(info)] = nodes[0]
            if info.inline is not None:
                stack = list(reversed(info.inline.children))
                k = 1
                while stack:
                    node = stack.pop()
                    extras.nodes[id(node)] = nodes[k]
                    k += 1
                    stack.extend(reversed(node.children))
    if extras is not None:
        extras.columns.extend(chunk.columns)
