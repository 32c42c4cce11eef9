"""Run the DWARF conversion over every compile unit, in one process or several.

Sequentially, each unit's FunctionInfos go straight into the creator.

In parallel (`jobs` > 1), each worker converts a contiguous slice of the
units into FunctionInfos whose strings and files are indexes into the
worker's own tables, and returns the order in which it first inserted
them. The parent replays those insertions slice by slice, in unit order,
which yields exactly the string and file tables a single process builds
(first-insertion order is all that decides them), then renumbers the
workers' indexes. So the output never depends on the number of processes.

The object file is any `SectionSource` (an ELF file, a Mach-O image); the
workers open their own copy through `reopen`, a picklable callable. The
reader does not search for other files itself: a dwz supplementary file is
asked of `load_supplementary` (stackmark.dwarf.supplementary), split
DWARF's .dwp and .dwo files of `load_split` (stackmark.dwarf.split_files),
which the caller gives (the symbol store's look in the user's debug-file
directories and where llvm looks; none: no file is looked for); the
workers get the same ones, pickled.
"""

from __future__ import annotations

import multiprocessing
import os
from array import array
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from stackmark._native import load
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.sections import SectionSource
from stackmark.dwarf.split_files import SplitDwarfLoad
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.elf import ElfFile
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.extras import NodeExtra
from stackmark.formats.gsym.from_dwarf import (
    DwarfReport,
    ExtrasCollector,
    UnitConverter,
    unit_to_convert,
)
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.gc_pause import gc_paused
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.ranges import Range

if TYPE_CHECKING:
    from stackmark.formats.gsym.creator import GsymCreator

_native = load("_gsym_convert")  # `rebuild_functions`, or None

PARALLEL_MIN_DEBUG_INFO = 4 << 20
"""Below this much .debug_info, starting processes costs more than it saves."""


class ProgressSink(Protocol):
    def update(self, label: str, done: int, total: int) -> None: ...


Reopen = Callable[[], SectionSource[Any]]
"""Opens the object file again in a worker process (picklable: a partial of a
module-level function)."""


def default_jobs(obj: SectionSource[Any]) -> int:
    section = obj.section(".debug_info")
    if section is None:
        return 1
    _, start, end = obj.section_buffer(section)
    if end - start < PARALLEL_MIN_DEBUG_INFO:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def convert_dwarf(
    obj: SectionSource[Any],
    creator: GsymCreator,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    extras: ExtrasCollector | None = None,
    reopen: Reopen | None = None,
    load_supplementary: SupplementaryLoad | None = None,
    load_split: SplitDwarfLoad | None = None,
) -> DwarfReport:
    """Add the FunctionInfos of every compile unit of `obj` to `creator`.

    `jobs` 0 picks one process per core for large DWARF, else one. Workers
    open the file with `reopen` (default: `obj.name` as an ELF file).
    `load_supplementary` finds a dwz supplementary file, `load_split` the files
    of split DWARF (None: none is looked for); with several processes they
    must be picklable.
    """
    report = DwarfReport()
    dwarf = DwarfReader(obj, load_supplementary=load_supplementary, load_split=load_split)
    if not dwarf.has_info:
        return report
    units = list(dwarf.units())
    if jobs == 0:
        jobs = default_jobs(obj)
    if jobs > 1 and len(units) >= 2:
        opener = reopen if reopen is not None else partial(ElfFile.open, obj.name)
        _convert_parallel(
            opener,
            load_supplementary,
            load_split,
            units_sizes(units),
            creator,
            jobs,
            report,
            progress,
            extras,
        )
        return report
    names = NameBuilder()
    valid: Callable[[int], bool] = creator.is_valid_text_address
    for done, unit in enumerate(units):
        code = unit_to_convert(unit, report)
        converter = UnitConverter(code, creator, names, valid, report, extras)
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

    @property
    def inserted_strings(self) -> dict[str, int]:
        """The strings inserted and their numbers (see GsymCreator.inserted_strings)."""
        return self.strings

    def insert_file(self, path: str) -> int:
        found = self.files.get(path)
        if found is None:
            found = self.files[path] = len(self.files)
            self.events.append((True, path))
        return found


@dataclass(slots=True)
class _Chunk:
    """What a worker sends back: flat arrays, so that pickling stays cheap.

    Per function: start, size, name, the number of its line rows (-1: no
    line table) and of its inline nodes (0: no tree). Rows are three
    parallel arrays. Inline trees are flattened depth first into `nodes`,
    one record per node: name, call file, call line, child count, range
    count, then the ranges' (start, end) pairs.
    """

    events: list[tuple[bool, str]]
    starts: array[int] = field(default_factory=lambda: array("Q"))
    sizes: array[int] = field(default_factory=lambda: array("Q"))
    names: array[int] = field(default_factory=lambda: array("I"))
    row_counts: array[int] = field(default_factory=lambda: array("q"))  # -1: no line table
    row_addrs: array[int] = field(default_factory=lambda: array("Q"))
    row_files: array[int] = field(default_factory=lambda: array("I"))
    row_lines: array[int] = field(default_factory=lambda: array("I"))
    node_counts: array[int] = field(default_factory=lambda: array("I"))
    nodes: array[int] = field(default_factory=lambda: array("Q"))
    extras: list[list[tuple[str | None, str | None, int]]] | None = None  # NodeExtra fields
    column_addresses: array[int] = field(default_factory=lambda: array("Q"))
    column_values: array[int] = field(default_factory=lambda: array("I"))
    report: DwarfReport = field(default_factory=DwarfReport)


def _flatten_tree(
    root: InlineInfo,
    out: array[int],
    extras: dict[int, NodeExtra] | None = None,
    extras_out: list[tuple[str | None, str | None, int]] | None = None,
) -> int:
    """Append `root`'s subtree to `out` depth first (see `_Chunk`); returns its
    node count. With `extras`, each node's `NodeExtra` (by id) also goes to
    `extras_out` as a plain tuple, in the same order, after the root's."""
    count = 0
    stack = [root]
    extend = out.extend
    while stack:
        node = stack.pop()
        count += 1
        ranges = node.ranges
        extend((node.name, node.call_file, node.call_line, len(node.children), len(ranges)))
        for pair in ranges:
            extend(pair)
        if extras_out is not None and count > 1:
            assert extras is not None
            extras_out.append(tuple(extras.get(id(node), _NO_EXTRA)))  # type: ignore[arg-type]
        stack.extend(reversed(node.children))
    return count


_NO_EXTRA = NodeExtra(None, None, 0)
"""An inline node the collector holds nothing for (as `ExtrasCollector.function_nodes`)."""


WORKER_KEEP_LIMIT = 1 << 30
"""A worker keeps what it converted while its peak memory stays under this many
bytes (see `_convert_chunk`)."""

_kept_by_worker: list[object] = []


def _convert_chunk(
    reopen: Reopen,
    load_supplementary: SupplementaryLoad | None,
    load_split: SplitDwarfLoad | None,
    offsets: list[int],
    text_ranges: list[Range] | None,
    want_extras: bool,
    keep: bool,
) -> _Chunk:
    """Worker: convert the units at `offsets` of the object file `reopen` opens.

    With `keep` (a pool whose workers end with `os._exit`: forked ones), the
    worker keeps the objects it made (the DWARF reader's, the FunctionInfos,
    the chunk once sent) rather than free them one by one before its next
    task: freeing a chunk's millions of rows and nodes took 30-50 ms each, on
    the cores that convert. Past `WORKER_KEEP_LIMIT` of peak memory it frees
    them as before."""
    heap: list[object] = []
    with gc_paused():
        chunk = _convert_units(
            reopen, load_supplementary, load_split, offsets, text_ranges, want_extras, heap
        )
    if keep and _peak_bytes() < WORKER_KEEP_LIMIT:
        _kept_by_worker.append((heap, chunk))
    return chunk


def _peak_bytes() -> int:
    """This process's peak resident memory (getrusage: KiB on Linux, bytes on macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _convert_units(
    reopen: Reopen,
    load_supplementary: SupplementaryLoad | None,
    load_split: SplitDwarfLoad | None,
    offsets: list[int],
    text_ranges: list[Range] | None,
    want_extras: bool,
    heap: list[object] | None = None,
) -> _Chunk:
    """The units' chunk; `heap`, if given, receives the objects made on the way."""
    from stackmark.formats.gsym.creator import GsymCreator

    validity = GsymCreator()
    if text_ranges is not None:
        validity.set_text_ranges(text_ranges)
    recorder = _Recorder()
    chunk = _Chunk(recorder.events)
    collector = ExtrasCollector() if want_extras else None
    obj = reopen()
    try:
        dwarf = DwarfReader(obj, load_supplementary=load_supplementary, load_split=load_split)
        names = NameBuilder()
        functions: list[FunctionInfo] = []
        for offset in offsets:
            unit = unit_to_convert(dwarf.unit_at(offset), chunk.report)
            converter = UnitConverter(
                unit, recorder, names, validity.is_valid_text_address, chunk.report, collector
            )
            functions.extend(converter.convert())
    finally:
        obj.close()
    flat = None
    if _native is not None:
        flat = _native.flatten_functions(
            functions,
            None if collector is None else collector.roots,
            None if collector is None else collector.nodes,
            _NO_EXTRA,
        )
    if flat is None:
        _flatten_functions(functions, chunk, collector)
    else:
        for column, data in zip(_chunk_arrays(chunk), flat[:9], strict=True):
            column.frombytes(data)
        chunk.extras = flat[9]
    if collector is not None:
        chunk.column_addresses = collector.column_addresses
        chunk.column_values = collector.column_values
    if heap is not None:
        heap.extend((functions, dwarf, names, collector, validity))
    return chunk


def _chunk_arrays(chunk: _Chunk) -> tuple[array[int], ...]:
    """The arrays `flatten_functions` fills, in its order."""
    return (
        chunk.starts,
        chunk.sizes,
        chunk.names,
        chunk.row_counts,
        chunk.row_addrs,
        chunk.row_files,
        chunk.row_lines,
        chunk.node_counts,
        chunk.nodes,
    )


def _flatten_functions(
    functions: list[FunctionInfo], chunk: _Chunk, collector: ExtrasCollector | None
) -> None:
    """A worker's functions into `chunk`'s arrays, with their extras as plain
    tuples (compiled twin: `flatten_functions`)."""
    if collector is not None:
        chunk.extras = []
    for info in functions:
        chunk.starts.append(info.start)
        chunk.sizes.append(info.size)
        chunk.names.append(info.name)
        rows = info.line_table
        if rows is None:
            chunk.row_counts.append(-1)
        else:
            chunk.row_counts.append(len(rows))
            if rows:
                addrs, files, lines = zip(*rows, strict=True)
                chunk.row_addrs.extend(addrs)
                chunk.row_files.extend(files)
                chunk.row_lines.extend(lines)
        # Plain tuples for the extras: they pickle in C, named tuples through Python calls.
        extra_nodes: list[tuple[str | None, str | None, int]] | None = None
        if collector is not None:
            root = collector.roots.get(id(info))
            extra_nodes = [] if root is None else [tuple(root)]  # type: ignore[list-item]
            assert chunk.extras is not None
            chunk.extras.append(extra_nodes)
            if root is None:
                extra_nodes = None  # no extras for this function (see function_nodes)
        if info.inline is None:
            chunk.node_counts.append(0)
        else:
            chunk.node_counts.append(
                _flatten_tree(
                    info.inline,
                    chunk.nodes,
                    None if collector is None else collector.nodes,
                    extra_nodes,
                )
            )


def _convert_parallel(
    reopen: Reopen,
    load_supplementary: SupplementaryLoad | None,
    load_split: SplitDwarfLoad | None,
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
    context = multiprocessing.get_context()
    # Forked and forkserver workers end with os._exit; spawned ones free their heap.
    keep = context.get_start_method() != "spawn"
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [
            pool.submit(
                _convert_chunk,
                reopen,
                load_supplementary,
                load_split,
                offsets,
                ranges,
                extras is not None,
                keep,
            )
            for offsets in slices
        ]
        for done, future in enumerate(futures):
            _merge(future.result(), creator, report, extras)
            futures[done] = None  # type: ignore[call-overload]  # free the chunk now
            if progress is not None:
                progress.update("converting DWARF units", done + 1, len(futures))


_line_entry = partial(tuple.__new__, LineEntry)
"""LineEntry from an (addr, file, line) tuple without Python-level __new__."""

_node_extra = partial(tuple.__new__, NodeExtra)
"""NodeExtra from a plain tuple, the same way."""


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
    infos = None
    if _native is not None:
        infos = _native.rebuild_functions(
            *_chunk_arrays(chunk), strings, files, FunctionInfo, InlineInfo, LineEntry
        )
    if infos is None:
        infos = _rebuild_functions(chunk, strings, files)
    creator.functions.extend(infos)
    if extras is not None and chunk.extras is not None:
        lists = extras.function_lists
        for info, extra in zip(infos, chunk.extras, strict=True):
            if extra:
                # Already in the order `function_nodes` gives (the worker's walk
                # is the same depth-first walk of the same tree).
                lists[id(info)] = list(map(_node_extra, extra))
    if extras is not None:
        extras.column_addresses.extend(chunk.column_addresses)
        extras.column_values.extend(chunk.column_values)


def _rebuild_functions(chunk: _Chunk, strings: list[int], files: list[int]) -> list[FunctionInfo]:
    """A worker's functions with global string and file indexes (`strings` and
    `files` map the worker's to the creator's); compiled twin: `rebuild_functions`."""
    addrs, lines = chunk.row_addrs, chunk.row_lines
    row_files = list(map(files.__getitem__, chunk.row_files))
    nodes = chunk.nodes
    row = 0
    at = 0  # in `nodes`
    out: list[FunctionInfo] = []
    for i, start in enumerate(chunk.starts):
        info = FunctionInfo(start, chunk.sizes[i], strings[chunk.names[i]])
        count = chunk.row_counts[i]
        if count >= 0:
            end = row + count
            info.line_table = list(
                map(
                    _line_entry,
                    zip(addrs[row:end], row_files[row:end], lines[row:end], strict=True),
                )
            )
            row = end
        if chunk.node_counts[i]:
            info.inline, at = _unflatten_tree(nodes, at, strings, files)
        out.append(info)
    return out


def _unflatten_tree(
    nodes: array[int], at: int, strings: list[int], files: list[int]
) -> tuple[InlineInfo, int]:
    """The tree `_flatten_tree` wrote at `nodes[at]`, with global string and
    file indexes."""
    # The children lists still being filled, and how many each still awaits.
    open_children: list[list[InlineInfo]] = []
    awaited: list[int] = []
    root: InlineInfo | None = None
    while True:
        name, call_file, call_line, child_count, range_count = nodes[at : at + 5]
        at += 5
        if range_count == 1:  # the common case
            ranges = [(nodes[at], nodes[at + 1])]
            at += 2
        else:
            pairs = nodes[at : at + 2 * range_count]
            at += 2 * range_count
            ranges = list(zip(pairs[::2], pairs[1::2], strict=True))
        node = InlineInfo(strings[name], ranges, files[call_file], call_line)
        if open_children:
            open_children[-1].append(node)
            awaited[-1] -= 1
            if not awaited[-1]:
                open_children.pop()
                awaited.pop()
        else:
            root = node
        if child_count:
            open_children.append(node.children)
            awaited.append(child_count)
        if not open_children:  # every node of the tree read
            assert root is not None
            return root, at
