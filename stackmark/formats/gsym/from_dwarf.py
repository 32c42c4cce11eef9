"""DWARF to GSYM FunctionInfos, as llvm-gsymutil 19 builds them.

Per compile unit, in unit order and DIE order (what `--num-threads=1`
does), every DW_TAG_subprogram with address ranges gives one FunctionInfo
per range, in the order DWARF lists them; the first range that is empty,
starts at the highest address, or starts outside the text sections stops
the list (LLVM `break`s there).

Line table (per function range): the unit's rows from the row in effect at
the range start up to the range end (LLVM's lookupAddressRange), with

- a first row before the start moved to the start;
- rows at or after the end skipped;
- a row with the file and line of the row kept before it skipped;
- an end_sequence row not kept (it only resets the "previous row");
- an address going backwards ending the table (a duplicated table);
- no rows at all replaced by a single row from DW_AT_decl_file/decl_line
  (always the case in a relocatable object: see `rows_unreachable`).

Files are inserted as the unit first uses them (a per-unit cache from DWARF
file index to GSYM file index); a DWARF index past the file list drops the
row, while the index just past it maps to file 0, as in LLVM.

Inline tree: the function's inlined calls (lexical blocks looked through,
nested subprograms not), each keeping only the ranges that lie inside one
of its parent's ranges; a call left without ranges, or whose call file is
not a valid index, is dropped with its subtree. The tree is kept only if
the root has at least one child. Strings are inserted in LLVM's order:
function name, line-table files, then the inline tree depth first (each
node's name, then its call file).

The loops have compiled twins in stackmark/_native/_gsym_convert.c:
`convert_functions` (the unit's loop, `_convert_function` with its line
tables and inline trees) and `inline_tree` (the recursion of `_inline`).
They read the caches the methods below fill and call the methods for the
rest, so the methods stay the reference and take what the kernels hand back.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from operator import le
from typing import Protocol

from stackmark._native import load
from stackmark.dwarf import constants as C
from stackmark.dwarf import lines as dwarf_lines
from stackmark.dwarf.lines import LineTable
from stackmark.dwarf.unit import Unit
from stackmark.elf import ET_REL, ElfFile
from stackmark.formats.gsym.creator import GsymCreator
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.dwarf_walk import DieFunction, UnitWalk
from stackmark.formats.gsym.extras import NO_COLUMN, NodeExtra
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.ranges import Range, contains_range, insert_range, merged

DW_AT_language = 0x13
_native = load("_gsym_convert")  # `line_entries`, `column_points`, `column_runs`, ... or None

_NO_FILE = 0xFFFFFFFF


class StringSink(Protocol):
    """Where strings and files go: a GsymCreator, or a recorder in a worker."""

    def insert_string(self, text: str) -> int: ...

    def insert_file(self, path: str) -> int: ...


@dataclass(slots=True)
class DwarfReport:
    """Counts for the converter log (LLVM's warning categories), and the
    warning lines llvm prints as it converts (`messages`, in unit order)."""

    functions: int = 0
    warnings: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)

    def warn(self, category: str) -> None:
        self.warnings[category] = self.warnings.get(category, 0) + 1

    def merge(self, other: DwarfReport) -> None:
        self.functions += other.functions
        for key, count in other.warnings.items():
            self.warnings[key] = self.warnings.get(key, 0) + count
        self.messages += other.messages


DWO_MISSING = (
    "warning: Unable to retrieve DWO .debug_info section for some object files. "
    "(Remove the --quiet flag for full output)"
)
"""llvm-gsymutil 19's category for skeleton units whose split unit is not found."""


def unit_to_convert(unit: Unit, report: DwarfReport) -> Unit:
    """The unit whose DIEs are converted for a compile unit of the file.

    Split DWARF, as llvm's DwarfTransformer does it: a unit with a DWO id
    (a skeleton) is converted from its split unit, found in the .dwo file
    it names; when none is found, its own (childless) DIE is, with llvm's
    warning and category."""
    if unit.dwo_id is None:
        return unit
    split = unit.split_unit
    if split is not None:
        return split
    report.warn(DWO_MISSING)
    name = unit.dwo_name or ""
    report.messages.append(f"warning: Unable to retrieve DWO .debug_info section for {name}")
    return unit


_FLAT_WIDTH: int | None = getattr(dwarf_lines, "WIDTH", None)
"""Fields per row of stackmark.dwarf's flat row store (address, file, line,
column, is_stmt, end_sequence, discriminator), when it has one."""


_Row = tuple[int, int, int, int]

_new_line_entry = partial(tuple.__new__, LineEntry)
"""A LineEntry from an (addr, file, line) tuple, without NamedTuple's Python-level
__new__ (this runs once per row)."""


def _row_runs(table: LineTable, low: int, high: int) -> list[tuple[int, int]] | None:
    """The (first, stop) indexes, in stackmark.dwarf's flat row store, of the rows
    llvm's lookupAddressRange gives for [low, high), sequence by sequence; None
    when the table keeps no flat store."""
    addresses = getattr(table, "_addresses", None)
    highs = getattr(table, "_seq_highs", None)
    if getattr(table, "_flat", None) is None or addresses is None or highs is None:
        return None
    runs: list[tuple[int, int]] = []
    sequences = table.sequences
    i = bisect_right(highs, low)
    if i == len(sequences) or not sequences[i].low <= low:
        return runs
    first = True
    while i < len(sequences) and sequences[i].low < high:
        seq = sequences[i]
        start = seq.first
        if first:
            start = bisect_right(addresses, low, seq.first + 1, seq.end - 1) - 1
            first = False
        if seq.low <= high - 1 < seq.high:
            stop = bisect_right(addresses, high - 1, seq.first + 1, seq.end - 1)
        else:
            stop = seq.end
        runs.append((start, stop))
        i += 1
    return runs


def _rows_in(table: LineTable, low: int, high: int) -> Iterator[_Row]:
    """(address, file, line, end_sequence) of the rows llvm's lookupAddressRange
    gives for [low, high).

    Reads stackmark.dwarf's flat row store directly when it has one: each
    sequence's part is cut out of the store column by column (array slices,
    in C) and zipped, instead of building a row tuple per row in Python;
    else goes through `LineTable.rows_in`.
    """
    runs = _row_runs(table, low, high)
    width = _FLAT_WIDTH
    if runs is None or width is None:
        return ((row[0], row[1], row[2], int(row[5])) for row in table.rows_in(low, high))
    flat = table._flat
    columns = [
        zip(
            flat[a:b:width],
            flat[a + 1 : b : width],
            flat[a + 2 : b : width],
            flat[a + 5 : b : width],
            strict=True,
        )
        for a, b in ((start * width, stop * width) for start, stop in runs)
    ]
    if not columns:
        return iter(())
    return columns[0] if len(columns) == 1 else chain.from_iterable(columns)


def _named_by_origin(values: dict[int, object]) -> bool:
    """Whether a DIE has an abstract origin and no names of its own."""
    return (
        C.DW_AT_abstract_origin in values
        and C.DW_AT_name not in values
        and C.DW_AT_linkage_name not in values
        and C.DW_AT_MIPS_linkage_name not in values
    )


def _merged(ranges: list[Range]) -> list[Range]:
    """`ranges` without empty ones, merged (most DIEs have a single range)."""
    if len(ranges) == 1:
        low, high = ranges[0]
        return [(low, high)] if low < high else []
    return merged(r for r in ranges if r[0] < r[1])


class ExtrasCollector:
    """What the cache's extras file needs, gathered during the conversion.

    `roots` and `nodes` map id() of FunctionInfo / InlineInfo objects (kept
    alive by the creator) to the DWARF names and call columns;
    `function_lists` maps id() of a FunctionInfo to all its nodes at once, in
    `function_nodes`' order (what worker processes send back, see
    `dwarf_units._merge`: no need to key every node and walk its tree again);
    `column_addresses` and `column_values` collect the (address, column)
    points of every unit's line table, in row order, as two flat arrays
    (a large binary has millions of them).
    """

    def __init__(self) -> None:
        self.roots: dict[int, NodeExtra] = {}
        self.nodes: dict[int, NodeExtra] = {}
        self.function_lists: dict[int, list[NodeExtra]] = {}
        self.column_addresses: array[int] = array("Q")
        self.column_values: array[int] = array("I")

    def function_nodes(self, info: FunctionInfo) -> list[NodeExtra]:
        """The extras nodes of a final FunctionInfo, in GSYM depth-first order."""
        whole = self.function_lists.get(id(info))
        if whole is not None:
            return whole
        root = self.roots.get(id(info))
        if root is None:
            return []
        out = [root]
        if info.inline is not None:
            stack = list(reversed(info.inline.children))
            while stack:
                node = stack.pop()
                out.append(self.nodes.get(id(node), NodeExtra(None, None, 0)))
                stack.extend(reversed(node.children))
        return out

    def column_points(self) -> tuple[array[int], array[int]]:
        """(addresses, columns) sorted by address (stably: row order breaks
        ties), without points that repeat the column before them."""
        addresses, values = self.column_addresses, self.column_values
        out_addresses: array[int] = array("Q")
        out_values: array[int] = array("I")
        if _native is not None:
            address_bytes, value_bytes = _native.column_points(addresses, values)
            out_addresses.frombytes(address_bytes)
            out_values.frombytes(value_bytes)
            return out_addresses, out_values
        if not all(map(le, addresses, addresses[1:])):  # units out of address order
            order = sorted(range(len(addresses)), key=addresses.__getitem__)
            addresses = array("Q", map(addresses.__getitem__, order))
            values = array("I", map(values.__getitem__, order))
            del order
        last = -1
        for addr, column in zip(addresses, values, strict=True):
            if column != last:
                out_addresses.append(addr)
                out_values.append(column)
                last = column
        return out_addresses, out_values


def _string_cache(sink: StringSink) -> dict[str, int] | None:
    """The dict behind `sink.insert_string`, when the sink shows it as
    `inserted_strings` (the creator's offsets, a worker's numbers): the compiled
    kernels look names up there and call `insert_string` only for new ones.
    None: they always call it."""
    found = getattr(sink, "inserted_strings", None)
    return found if type(found) is dict else None


class UnitConverter:
    """Converts the functions of one compile unit."""

    def __init__(
        self,
        unit: Unit,
        sink: StringSink,
        names: NameBuilder,
        is_valid_text_address: Callable[[int], bool],
        report: DwarfReport,
        extras: ExtrasCollector | None = None,
    ):
        self.extras = extras
        self.unit = unit
        self.sink = sink
        self.names = names
        names.enter_reader(unit.reader)  # a split unit's DIEs are numbered in its own file
        self.is_valid_text_address = is_valid_text_address
        self.report = report
        # llvm's CUInfo takes the language of the unit the file lists: for a
        # split unit, its skeleton's (which usually has none).
        listed = unit.skeleton if unit.skeleton is not None else unit
        language = listed.top.get(DW_AT_language)
        self.language = language if isinstance(language, int) else 0
        self.highest = (1 << (8 * unit.header.addr_size)) - 1
        self.lines: LineTable | None = unit.line_table()
        # llvm-gsymutil looks rows up by address alone (UndefSection); in a
        # relocatable object every sequence belongs to a section (its
        # DW_LNE_set_address is relocated against one), so llvm finds no rows
        # there and every function falls back to DW_AT_decl_file/decl_line.
        elf = listed.reader.elf
        self.rows_unreachable = isinstance(elf, ElfFile) and elf.e_type == ET_REL
        self._file_cache: dict[int, int] = {}
        self._file_limit = 0
        self._tree_tools: tuple[object, ...] | None = None  # while `convert` runs
        if self.lines is not None:
            self._file_limit = len(self.lines.header.files) + 1

    # -- names and files ---------------------------------------------------------

    def names_of(self, function: DieFunction) -> tuple[str | None, str | None, str | None]:
        """(GSYM name, linkage name, short name) of a subprogram or inlined call.

        An inlined call without names of its own is named by its abstract
        origin alone, so those answers are shared (most calls are such).
        """
        key = function.origin  # the walk's answer to the test below, when it has one
        if key is not None:
            cached = self.names.origin_names.get(key)
            if cached is not None:
                return cached
        elif function.is_inlined and _named_by_origin(values := function.values):
            key = function.unit.ref_attr(function.abbrev, values, C.DW_AT_abstract_origin)
            if key is not None:
                cached = self.names.origin_names.get(key)
                if cached is not None:
                    return cached
        linkage, short = function.names()
        text = self.names.name((function.unit, function.offset), self.language, linkage, short)
        result = (text, linkage, short)
        if key is not None:
            self.names.origin_names[key] = result
        return result

    def file_index(self, dwarf_index: int) -> int | None:
        """LLVM's CUInfo::DWARFToGSYMFileIndex: None drops what refers to it."""
        if self.lines is None or dwarf_index >= self._file_limit:
            return None
        cached = self._file_cache.get(dwarf_index)
        if cached is not None:
            return cached
        path = self.lines.file_name(dwarf_index)
        index = 0 if path is None else self.sink.insert_file(path)
        self._file_cache[dwarf_index] = index
        return index

    # -- functions ---------------------------------------------------------------

    def convert(self) -> list[FunctionInfo]:
        out: list[FunctionInfo] = []
        walk = UnitWalk(self.unit, self.names.parents)
        self._tree_tools = tools = self._inline_tree_tools()
        try:
            if (
                tools is None
                or _native is None
                or _native.convert_functions(walk.functions, out, tools, self._unit_tools()) is None
            ):
                for function in walk.functions:
                    self._convert_function(function, out)
        finally:
            self._tree_tools = None  # it refers back to this converter: no cycle kept
        self.report.functions += len(out)
        if self.extras is not None and self.lines is not None:
            self._collect_columns(self.extras)
        return out

    def _collect_columns(self, extras: ExtrasCollector) -> None:
        """The (address, column) points of the unit's sequences that start in
        code, and each sequence's end (compiled twin of the loop: `column_runs`)."""
        assert self.lines is not None
        flat = getattr(self.lines, "_flat", None) if _FLAT_WIDTH is not None else None
        width = _FLAT_WIDTH or 0
        valid = self.is_valid_text_address
        runs = [(first, end, high) for low, high, first, end in self.lines.sequences if valid(low)]
        if _native is not None and isinstance(flat, array) and flat.typecode == "Q":
            found = _native.column_runs(flat, width, runs)
            if found is not None:
                extras.column_addresses.frombytes(found[0])
                extras.column_values.frombytes(found[1])
                return
        rows = self.lines.rows
        addresses, values = extras.column_addresses, extras.column_values
        for first, end, high in runs:
            last = -1
            if flat is not None:
                for at in range(first * width, max(first, end - 1) * width, width):
                    column = flat[at + 3]
                    if column != last:
                        addresses.append(flat[at])
                        values.append(column)
                        last = column
            else:
                for i in range(first, max(first, end - 1)):
                    row = rows[i]
                    if row[3] != last:
                        addresses.append(row[0])
                        values.append(row[3])
                        last = row[3]
            addresses.append(high)
            values.append(NO_COLUMN)

    def _unit_tools(self) -> tuple[object, ...]:
        """What the compiled twin of `convert`'s loop (`convert_functions`) works
        with besides `_inline_tree_tools`: the row store and sequences when
        `_compiled_line_table` would read them (else it calls `_line_table`),
        and `_convert_function` for a function it does not take."""
        lines = self.lines
        flat = sequences = None
        if lines is not None and not self.rows_unreachable and _FLAT_WIDTH is not None:
            store = getattr(lines, "_flat", None)
            if (
                isinstance(store, array)
                and store.typecode == "Q"
                and getattr(lines, "_addresses", None) is not None
                and getattr(lines, "_seq_highs", None) is not None
            ):
                flat, sequences = store, lines.sequences
        # GsymCreator's text check (the converter's, sequential or in a worker)
        # is read from its ranges in C; any other is called.
        valid = self.is_valid_text_address
        text_known = getattr(valid, "__func__", None) is GsymCreator.is_valid_text_address
        return (
            FunctionInfo,
            LineEntry,
            valid,
            text_known,
            getattr(valid, "__self__").text_ranges if text_known else None,  # noqa: B009
            self.highest,
            None if self.extras is None else self.extras.roots,
            None if lines is None else self._line_table,
            flat,
            _FLAT_WIDTH or 0,
            sequences,
            self._decl_line_table,
            self._convert_function,
        )

    def _convert_function(self, function: DieFunction, out: list[FunctionInfo]) -> None:
        ranges = function.ranges
        if not ranges:
            return
        text, linkage, short = self.names_of(function)
        name = None if text is None else self.sink.insert_string(text)
        if name is None:
            self.report.warn("Function has no name")
            return
        all_ranges = _merged(ranges)
        for low, high in ranges:
            if low >= high or low == self.highest:
                break
            if not self.is_valid_text_address(low):
                if low != 0:
                    self.report.warn("Address range starts outside executable section")
                break
            info = FunctionInfo(low, high - low, name)
            if self.extras is not None:
                self.extras.roots[id(info)] = NodeExtra(linkage, short, 0)
            if self.lines is not None:
                info.line_table = self._line_table(function, low, high)
            if function.children:
                root = InlineInfo(name, [(low, high)])
                tools = self._tree_tools
                if (
                    tools is None
                    or _native is None
                    or _native.inline_tree(function.children, root, all_ranges, tools) is None
                ):
                    for child in function.children:
                        self._inline(child, root, all_ranges)
                if root.children:
                    info.inline = root
            out.append(info)

    def _line_table(self, function: DieFunction, low: int, high: int) -> list[LineEntry] | None:
        """The rows for [low, high) (see the module docstring); the loop runs
        for every row of every function, so it does no more than it must."""
        assert self.lines is not None
        if self.rows_unreachable:
            return self._decl_line_table(function, low)
        compiled = self._compiled_line_table(function, low, high)
        if compiled is not None:
            return compiled[0]
        rows: list[LineEntry] = []
        append = rows.append
        new_entry = _new_line_entry
        prev_addr = -1  # PrevRow.Address; -1: a default row, never compared
        cache = self._file_cache
        last_file = last_line = -1
        addr = -1
        for addr, dwarf_file, line, end_sequence in _rows_in(self.lines, low, high):
            file_index = cache.get(dwarf_file)
            if file_index is None:
                file_index = self.file_index(dwarf_file)
                if file_index is None:
                    self.report.warn("Invalid file index in DWARF line table")
                    continue
            if addr < low:
                self.report.warn("Start address lies between valid Row table entries")
                row_addr = low
            elif addr >= high:
                continue
            else:
                row_addr = addr
            line &= 0xFFFFFFFF
            if addr < prev_addr:
                if rows and rows[0] == (row_addr, file_index, line):
                    self.report.warn("Duplicate line table detected")
                else:
                    self.report.warn("Non-monotonically increasing addresses")
                break
            if file_index == last_file and line == last_line:
                continue
            if end_sequence:
                prev_addr = -1
            else:
                append(new_entry((row_addr, file_index, line)))
                last_file, last_line = file_index, line
                prev_addr = addr
        if addr == -1:  # no rows at all
            return self._decl_line_table(function, low)
        return rows or None

    def _compiled_line_table(
        self, function: DieFunction, low: int, high: int
    ) -> tuple[list[LineEntry] | None] | None:
        """`_line_table` by the compiled loop (`line_entries`), in a 1-tuple; None
        when it is not active or the rows are not in an array store of uint64."""
        assert self.lines is not None
        flat = getattr(self.lines, "_flat", None)
        if _native is None or _FLAT_WIDTH is None or not isinstance(flat, array):
            return None
        runs = _row_runs(self.lines, low, high)
        if runs is None or flat.typecode != "Q" or not 0 <= low <= high < 1 << 64:
            return None
        rows, seen = _native.line_entries(
            flat,
            _FLAT_WIDTH,
            runs,
            low,
            high,
            self._file_cache,
            self.file_index,
            self.report.warn,
            LineEntry,
        )
        if not seen:
            return (self._decl_line_table(function, low),)
        return (rows or None,)

    def _decl_line_table(self, function: DieFunction, low: int) -> list[LineEntry] | None:
        path = function.decl_file
        if not path:
            self.report.warn("Invalid file index in DW_AT_decl_file")
            index = function.decl_file_index
            self.report.messages.append(
                f"error: function DIE at 0x{function.offset:08x} has an invalid file index "
                f"{0xFFFFFFFF if index is None else index} in its DW_AT_decl_file attribute, "
                "unable to create a single line entry from the DW_AT_decl_file/DW_AT_decl_line "
                "attributes."
            )
            return None
        line = function.decl_line
        if line is None:
            return None
        return [LineEntry(low, self.sink.insert_file(path), line & 0xFFFFFFFF)]

    # -- inline tree -------------------------------------------------------------

    def _inline_tree_tools(self) -> tuple[object, ...] | None:
        """What the compiled twin of `_inline`'s recursion (`inline_tree`) works
        with, or None without it. It reads the caches the methods fill (origin
        names, the sink's strings, files) and calls the methods only for what
        they do not hold; a call it does not take goes to `_inline`."""
        if _native is None:
            return None
        return (
            DieFunction,
            InlineInfo,
            NodeExtra,
            self.names.origin_names,
            self.names_of,
            _string_cache(self.sink),
            self.sink.insert_string,
            self._file_cache,
            self.file_index,
            self.report.warn,
            None if self.extras is None else self.extras.nodes,
            self._inline,
        )

    def _inline(
        self, call: DieFunction, parent: InlineInfo, all_parent_ranges: list[Range]
    ) -> None:
        found = (
            None
            if _native is None
            else _native.inline_ranges(call.ranges, parent.ranges, all_parent_ranges)
        )
        if found is not None:
            all_ranges, ranges, uncontained = found
            for _ in range(uncontained):
                self.report.warn("Function DIE has uncontained address range")
        else:
            all_ranges, ranges = self._inline_ranges(call, parent, all_parent_ranges)
        if not ranges:
            return
        text, linkage, short = self.names_of(call)
        name = None if text is None else self.sink.insert_string(text)
        call_file = self.file_index(self._call_file(call))
        if call_file is None:
            self.report.warn("Inlined function die has invlaid file index in DW_AT_call_file")
            return
        node = InlineInfo(
            0 if name is None else name, ranges, call_file, call.call_line & 0xFFFFFFFF
        )
        if self.extras is not None:
            self.extras.nodes[id(node)] = NodeExtra(linkage, short, call.call_column)
        for child in call.children:
            self._inline(child, node, all_ranges)
        parent.children.append(node)

    def _inline_ranges(
        self, call: DieFunction, parent: InlineInfo, all_parent_ranges: list[Range]
    ) -> tuple[list[Range], list[Range]]:
        """(the call's ranges merged, those its parent node holds), warning about
        ranges outside the parent DIE's (compiled twin: `inline_ranges`)."""
        all_ranges = _merged(call.ranges)
        ranges: list[Range] = []
        parent_ranges = parent.ranges
        if len(all_ranges) == 1 and len(parent_ranges) == 1:  # the common case
            low, high = all_ranges[0]
            parent_low, parent_high = parent_ranges[0]
            if parent_low <= low and high <= parent_high:
                ranges.append((low, high))
            elif not contains_range(all_parent_ranges, low, high):
                self.report.warn("Function DIE has uncontained address range")
        else:
            for low, high in all_ranges:
                if contains_range(parent_ranges, low, high):
                    insert_range(ranges, low, high)
                elif not contains_range(all_parent_ranges, low, high):
                    self.report.warn("Function DIE has uncontained address range")
        return all_ranges, ranges

    def _call_file(self, call: DieFunction) -> int:
        """DW_AT_call_file, found recursively; an absent one is an invalid index."""
        value = call.call_file
        return _NO_FILE if value is None else value
