"""The compiled GSYM kernels against their pure-Python references.

`stackmark._native._gsym_records` encodes FunctionInfo records and
`_gsym_extras` builds the cache extras' address index and column points.
Each must give the reference's bytes, or leave the input to the reference
(which then answers or raises as always): these tests run both on the same
input, from programs compiled here and from random and malformed records,
and require the same bytes or the same error.
"""

from __future__ import annotations

import copy
import random
from array import array
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark._native import forced_pure
from stackmark.dwarf.lines import WIDTH, Sequence
from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.formats.gsym import creator, dwarf_units, from_dwarf
from stackmark.formats.gsym import extras as extras_module
from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.gsym.creator import encode_records
from stackmark.formats.gsym.extras import ExtrasBuilder, NodeExtra
from stackmark.formats.gsym.from_dwarf import DwarfReport, ExtrasCollector, UnitConverter
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.ranges import merged
from stackmark.formats.gsym.stl_sort import stl_sort
from tests.support.build import compile_program
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)


def outcome(run: Callable[[], Any]) -> tuple[str, Any]:
    """What `run` returns, or the type and text of what it raises."""
    try:
        return ("value", run())
    except Exception as exc:  # the comparison is the point: any error must match
        return ("error", (type(exc), str(exc)))


def both(run: Callable[[], Any]) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """(compiled, reference) outcomes of `run`."""
    compiled = outcome(run)
    with pure_python():
        reference = outcome(run)
    return compiled, reference


PROGRAMS = {
    "c-inline": (["gsym_inline.c", "gsym_inline_b.c"], "gcc", ("-g", "-O2")),
    "cpp-O2": (["gsym_cpp.cpp"], "g++", ("-g", "-O2")),
    "cpp-O0": (["gsym_cpp.cpp"], "g++", ("-g", "-O0")),
    "templates": (["sym_templates.cpp"], "g++", ("-g", "-O2")),
    "merged-icf": (["gsym_merged.cpp"], "g++", ("-g", "-O2", "-ffunction-sections")),
}


def program(name: str) -> Path:
    sources, compiler, flags = PROGRAMS[name]
    return compile_program(f"native-gsym-{name}", sources, compiler=compiler, flags=flags)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_programs_convert_to_the_same_gsym_and_extras(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = str(program(name))
    handed_back: list[FunctionInfo] = []  # records the compiled encoder left to Python
    reference_record = creator.record_bytes

    def record_bytes(info: FunctionInfo, *, little: bool) -> bytes:
        handed_back.append(info)
        return reference_record(info, little=little)

    monkeypatch.setattr(creator, "record_bytes", record_bytes)
    indexed_natively: list[bool] = []
    compiled_line_tables: list[int] = []
    kernels = from_dwarf._native
    assert kernels is not None

    def line_entries(*args: Any) -> Any:
        compiled_line_tables.append(1)
        return kernels.line_entries(*args)

    inline_ranges_answered: list[int] = []

    def inline_ranges(*args: Any) -> Any:
        found = kernels.inline_ranges(*args)
        inline_ranges_answered.append(found is not None)
        return found

    convert_functions_answered: list[bool] = []

    def convert_functions(*args: Any) -> Any:
        found = kernels.convert_functions(*args)
        convert_functions_answered.append(found is True)
        return found

    inline_tree_answered: list[bool] = []

    def inline_tree(*args: Any) -> Any:
        found = kernels.inline_tree(*args)
        inline_tree_answered.append(found is True)
        return found

    column_runs_answered: list[bool] = []

    def column_runs(*args: Any) -> Any:
        found = kernels.column_runs(*args)
        column_runs_answered.append(found is not None)
        return found

    monkeypatch.setattr(
        from_dwarf,
        "_native",
        SimpleNamespace(
            line_entries=line_entries,
            column_points=kernels.column_points,
            inline_ranges=inline_ranges,
            inline_tree=inline_tree,
            convert_functions=convert_functions,
            column_runs=column_runs,
        ),
    )

    def build() -> tuple[bytes, bytes, list[bytes]]:
        collector = ExtrasCollector()
        result = convert_elf(binary, jobs=1, extras=collector)
        builder = ExtrasBuilder(collector.column_points())
        builder.add_functions(
            result.functions, [collector.function_nodes(info) for info in result.functions]
        )
        pieces = [encode_records(result.functions, little)[0] for little in (True, False)]
        indexed_natively.append(builder._state_tables is not None)
        return result.data, builder.encode(result.data), pieces

    compiled, reference = both(build)
    assert compiled[0] == "value"
    assert compiled == reference
    # The kernels answered (a converter's records and functions are their domain).
    # (convert_functions reads line tables and builds inline trees itself: the
    # Python-facing line_entries and inline_tree run only for what it hands back.)
    assert handed_back == [] and indexed_natively == [True, False]
    assert convert_functions_answered and all(convert_functions_answered)
    assert compiled_line_tables == [] and inline_tree_answered == []
    assert all(inline_ranges_answered)
    assert column_runs_answered and all(column_runs_answered)


# -- random records ----------------------------------------------------------------

# Values the compiled encoder takes, and ones it must leave to the reference:
# wider than 32 or 64 bits, negative where the reference masks them.
u32ish = st.one_of(
    st.integers(0, 0x7F),
    st.integers(0, 0xFFFFFFFF),
    st.sampled_from([0x80, 0x3FFF, 0x4000, 1 << 32, (1 << 64) - 1, 1 << 64, 1 << 70]),
)
masked = st.one_of(u32ish, st.sampled_from([-1, -(1 << 40)]))


@st.composite
def line_tables(draw: st.DrawFn, base: int) -> list[LineEntry] | None:
    if draw(st.integers(0, 5)) == 0:
        return None
    count = draw(st.integers(0, 30))
    addr = base - (draw(st.integers(0, 20)) == 0)  # rows below the start: an error
    step = draw(st.sampled_from([None, 0, 1, 3, 13, 14, -2]))  # None: lines at random
    line = draw(st.integers(0, 60))
    rows = []
    for _ in range(count):
        addr += draw(st.sampled_from([0, 0, 1, 2, 3, 17, 200, 300, 1 << 20]))
        if draw(st.integers(0, 200)) == 0:
            addr -= 5  # out of order: an error
        if step is not None:
            line = max(0, line + step)
        else:
            line = draw(
                st.one_of(
                    st.integers(0, 60),
                    st.integers(0, 0xFFFFFFFF),
                    st.sampled_from([1 << 32, (1 << 33) + 3]),
                )
            )
        file = draw(st.one_of(st.integers(0, 3), u32ish))
        rows.append(LineEntry(addr, file, line))
    return rows


@st.composite
def inline_trees(draw: st.DrawFn, start: int, end: int, depth: int = 0) -> InlineInfo:
    pieces = draw(st.integers(0 if depth else 1, 3))
    ranges: list[tuple[int, int]] = []
    for _ in range(pieces):
        a = draw(st.integers(start - 2 if depth else start, end))
        b = draw(st.integers(a, end + (3 if depth and draw(st.integers(0, 20)) == 0 else 0)))
        ranges.append((a, b))
    if draw(st.booleans()):
        ranges = merged(ranges)  # what the converter makes; otherwise as drawn
    node = InlineInfo(
        draw(masked),
        ranges,
        draw(st.one_of(st.integers(0, 5), u32ish)),
        draw(st.one_of(st.integers(0, 500), u32ish)),
    )
    if depth < 4 and ranges:
        low = min(r[0] for r in ranges)
        high = max(r[1] for r in ranges)
        for _ in range(draw(st.integers(0, 3))):
            node.children.append(draw(inline_trees(low, high, depth + 1)))
    return node


@st.composite
def functions(draw: st.DrawFn) -> list[FunctionInfo]:
    out = []
    start = 0x1000
    for _ in range(draw(st.integers(0, 6))):
        start += draw(st.integers(0, 0x100))
        size = draw(st.one_of(st.integers(0, 0x80), st.sampled_from([-4, 1 << 32, 1 << 64])))
        name = draw(st.one_of(st.integers(1, 1000), st.sampled_from([0, 1 << 32, -1])))
        info = FunctionInfo(start, size, name, draw(line_tables(start)))
        if draw(st.integers(0, 2)) == 0:
            info.inline = draw(inline_trees(start, start + max(size, 1) % 0x1000))
        extra = draw(st.integers(0, 12))
        if extra == 0:
            info.other_records = [(7, b"\x01\x02\x03")]
        elif extra == 1:
            info.merged = [FunctionInfo(start, 4, 5)]
        out.append(info)
    return out


@settings(max_examples=300, deadline=None)
@given(functions(), st.booleans())
def test_random_records_encode_to_the_same_bytes_or_error(
    infos: list[FunctionInfo], little: bool
) -> None:
    for info in infos:  # alone, so that another record's error hides nothing
        compiled, reference = both(partial(encode_records, [info], little))
        assert compiled == reference
    compiled, reference = both(lambda: encode_records(infos, little))
    assert compiled == reference


def test_a_refused_record_raises_the_reference_error() -> None:
    """A record the reference refuses comes back with its error, after records
    encoded natively."""
    good = FunctionInfo(0x1000, 4, 1, [LineEntry(0x1000, 1, 3)])
    rows_backwards = FunctionInfo(0x1000, 4, 2, [LineEntry(0x1002, 1, 3), LineEntry(0x1001, 1, 4)])
    for infos in ([good, rows_backwards], [good, FunctionInfo(0x1000, 4, 0)]):
        compiled, reference = both(partial(encode_records, infos, True))
        assert compiled[0] == "error"
        assert compiled == reference


# -- the extras' index ---------------------------------------------------------------


@st.composite
def extras_inputs(
    draw: st.DrawFn,
) -> tuple[list[FunctionInfo], list[list[NodeExtra]], tuple[array[int], array[int]]]:
    infos = []
    start = 0x400
    for _ in range(draw(st.integers(0, 8))):
        start += draw(st.sampled_from([0, 0, 4, 16, 0x40]))  # equal starts: one group
        size = draw(st.sampled_from([0, 1, 8, 0x30, 0x100]))
        info = FunctionInfo(start, size, 1, draw(line_tables(start)))
        if info.line_table and any(
            row.line > 0xFFFFFFFF or row.file > 0xFFFFFFFF for row in info.line_table
        ):
            info.line_table = None  # the reference's encode refuses those (array "I")
        if draw(st.booleans()):
            tree = draw(inline_trees(start, start + max(size, 1)))
            if draw(st.integers(0, 15)) == 0 and tree.children:
                tree.children.append(tree.children[0])  # one node twice
            info.inline = tree
        infos.append(info)
    nodes = [
        [NodeExtra("l", "n")] * draw(st.integers(0, 2)) if draw(st.booleans()) else []
        for _ in infos
    ]
    points = sorted(draw(st.lists(st.integers(0x3F0, 0x1000), max_size=30)))
    values = [draw(st.sampled_from([0, 1, 7, 0xFFFFFFFF])) for _ in points]
    return infos, nodes, (array("Q", points), array("I", values))


@settings(max_examples=150, deadline=None)
@given(extras_inputs())
def test_random_functions_index_to_the_same_extras(
    data: tuple[list[FunctionInfo], list[list[NodeExtra]], tuple[array[int], array[int]]],
) -> None:
    infos, nodes, columns = data

    def build() -> bytes:
        builder = ExtrasBuilder(columns)
        builder.add_functions(infos, nodes)
        return builder.encode(b"gsym")

    compiled, reference = both(build)
    assert compiled == reference


# Names as the converter gives them, and what the compiled tables must leave to the
# reference: a lone surrogate UTF-8 cannot encode, bytes, a column that is no int.
node_texts = st.sampled_from(
    [None, "", "main", "ns::f<int>()", "caf\u00e9", "\udcff", "x", "y", "z", "w"] * 3
    + ["\ud800", b"main"]
) | st.text(max_size=3)


@st.composite
def node_inputs(draw: st.DrawFn) -> tuple[list[FunctionInfo], list[list[Any]]]:
    infos, nodes = [], []
    columns = st.integers(0, 30).map(bool)  # now and then a column that is no int
    for _ in range(draw(st.integers(0, 6))):
        info = FunctionInfo(0x1000, 0x10, 1)
        if draw(st.booleans()):
            info.inline = draw(inline_trees(0x1000, 0x1010))  # call sites past u32 too
            children = info.inline.children
            if children and draw(st.integers(0, 5)) == 0:  # a call site no u32 holds
                hostile = draw(st.sampled_from([-1, 1 << 32, 1 << 64, "3"]))
                setattr(children[0], draw(st.sampled_from(["call_file", "call_line"])), hostile)
            if children and draw(st.integers(0, 15)) == 0:
                info.inline.children = tuple(children)  # type: ignore[assignment]
        extras: list[Any] = [
            NodeExtra(draw(node_texts), draw(node_texts), draw(masked) if draw(columns) else 1.5)
            for _ in range(draw(st.integers(0, 6)))  # fewer or more than the tree's nodes
        ]
        if extras and draw(st.integers(0, 15)) == 0:
            extras[-1] = tuple(extras[-1])  # not a NodeExtra
        infos.append(info)
        nodes.append(extras)
    return infos, nodes


@settings(max_examples=200, deadline=None)
@given(node_inputs())
def test_random_nodes_give_the_same_names_and_call_sites(
    data: tuple[list[FunctionInfo], list[list[NodeExtra]]],
) -> None:
    infos, nodes = data

    def build() -> tuple[bytes, list[array[int]]]:
        builder = ExtrasBuilder()
        builder.add_functions(infos, nodes)
        tables = [builder.first_node, builder.linkage, builder.name, builder.call_file]
        return builder.encode(b"gsym"), [*tables, builder.call_line, builder.call_column]

    compiled, reference = both(build)
    assert compiled == reference


def test_a_programs_node_tables_are_built_by_the_kernel() -> None:
    """The compiled tables answer for what the converter makes (a fallback to the
    reference on every input would pass the comparisons above)."""
    collector = ExtrasCollector()
    result = convert_elf(str(program("c-inline")), extras=collector)
    nodes = [collector.function_nodes(info) for info in result.functions]
    kernels = extras_module._native
    assert kernels is not None
    tables = kernels.node_tables(result.functions, nodes, NodeExtra)
    assert tables is not None
    with pure_python():
        builder = ExtrasBuilder()
        builder.add_functions(result.functions, nodes)
    assert tables[0] == builder._strings and tables[1] == builder._strtab
    own = [builder.first_node[1:], builder.linkage, builder.name, builder.call_file]
    assert list(tables[2:]) == [t.tobytes() for t in (*own, builder.call_line, builder.call_column)]
    assert any(builder.call_file) and len(builder.linkage) > sum(1 for n in nodes if n)  # calls


@pytest.mark.parametrize("seed", range(40))
def test_column_points_are_sorted_and_thinned_alike(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randrange(0, 200)
    addresses = sorted(rng.randrange(0, 300) for _ in range(count))
    if seed % 3 == 1:  # units out of address order
        rng.shuffle(addresses)
    elif seed % 3 == 2:  # line sequences: ascending runs in any order, ties across them
        cuts = sorted(rng.sample(range(count + 1), min(count + 1, rng.randrange(1, 9))))
        runs = [addresses[a:b] for a, b in zip([0, *cuts], [*cuts, count], strict=True)]
        rng.shuffle(runs)
        addresses = [address for run in runs for address in run]
    collector = ExtrasCollector()
    collector.column_addresses = array("Q", addresses)
    collector.column_values = array("I", (rng.choice([0, 1, 2, 0xFFFFFFFF]) for _ in addresses))
    compiled, reference = both(collector.column_points)
    assert compiled == reference


@pytest.mark.parametrize("seed", range(40))
def test_a_units_column_points_are_collected_alike(seed: int) -> None:
    """`_collect_columns` through `column_runs` and through the reference: the
    same points (new columns only, each sequence's end), or the same error for
    a column the array cannot hold; sequences outside the store go to the reference."""
    rng = random.Random(seed)
    flat: array[int] = array("Q")
    sequences = []
    for _ in range(rng.randrange(0, 5)):
        first = len(flat) // WIDTH
        for _ in range(rng.randrange(0, 8)):
            column = rng.choice(
                [0, 1, 2, 2, 0xFFFFFFFF, (1 << 64) - 1] if seed % 4 == 3 else [0, 1, 2]
            )
            flat.extend([0x1000 + rng.randrange(64), 1, 1, column, 1, 0, 0])
        end = len(flat) // WIDTH
        sequences.append(
            Sequence(0x1000 + rng.randrange(64), 0x2000 + rng.randrange(64), first, end)
        )
    if seed % 5 == 4:
        sequences.append(Sequence(0x1000, 0x1100, 0, len(flat) // WIDTH + 3))  # past the store

    def collect() -> tuple[list[int], list[int]]:
        converter = UnitConverter.__new__(UnitConverter)
        converter.lines = RowStore(flat, sequences)  # type: ignore[assignment]
        converter.is_valid_text_address = lambda address: address % 3 != 0
        collector = ExtrasCollector()
        converter._collect_columns(collector)
        return collector.column_addresses.tolist(), collector.column_values.tolist()

    compiled, reference = both(collect)
    assert compiled == reference


# -- DWARF rows into GSYM rows ------------------------------------------------------


class RowStore:
    """What `UnitConverter._line_table` reads of a stackmark.dwarf LineTable."""

    def __init__(self, flat: array[int], sequences: list[Sequence]) -> None:
        self._flat = flat
        self._addresses = flat[0::WIDTH]
        self._seq_highs = [seq.high for seq in sequences]
        self.sequences = sequences
        self.rows = [tuple(flat[i : i + WIDTH]) for i in range(0, len(flat), WIDTH)]

    def file_name(self, index: int) -> str | None:
        return None if index == 3 else f"/src/f{index}.c"


class Files:
    def __init__(self) -> None:
        self.paths: list[str] = []

    def insert_file(self, path: str) -> int:
        self.paths.append(path)
        return len(self.paths)


@st.composite
def row_stores(draw: st.DrawFn) -> RowStore:
    flat: array[int] = array("Q")
    sequences = []
    addr = 0x1000
    for _ in range(draw(st.integers(1, 3))):
        first = len(flat) // WIDTH
        low = addr
        for _ in range(draw(st.integers(1, 12))):
            addr += draw(st.sampled_from([0, 1, 2, 4, 16]))
            if draw(st.integers(0, 5)) == 0:
                addr -= 3  # addresses going back: "Non-monotonically increasing"
            line = draw(st.one_of(st.integers(1, 9), st.sampled_from([0, (1 << 32) + 5])))
            file = draw(st.sampled_from([1, 1, 2, 3, 7]))  # 3: no name; 7: past the table
            end = draw(st.integers(0, 4)) == 0
            flat.extend([addr, file, line, 0, 1, int(end), 0])
        addr = max(addr + 4, low + 1)
        flat.extend([addr, 1, 1, 0, 1, 1, 0])  # the end of the sequence
        sequences.append(Sequence(low, addr, first, len(flat) // WIDTH))
        addr += draw(st.sampled_from([0, 8]))
    return RowStore(flat, sequences)


@settings(max_examples=300, deadline=None)
@given(row_stores(), st.data())
def test_dwarf_rows_become_the_same_gsym_rows(store: RowStore, data: st.DataObject) -> None:
    """Rows, warnings and the files inserted (in order) are the reference's."""
    start, end = store.sequences[0].low, store.sequences[-1].high
    low = data.draw(st.one_of(st.integers(start, end), st.integers(start - 8, end + 8)))
    size = data.draw(st.one_of(st.just(end - low), st.integers(0, 0x100)))

    def convert() -> tuple[Any, dict[str, int], list[str]]:
        converter = UnitConverter.__new__(UnitConverter)
        converter.lines = store  # type: ignore[assignment]
        converter._file_cache = {}
        converter._file_limit = 5
        converter.sink = Files()  # type: ignore[assignment]
        converter.report = DwarfReport()
        function = SimpleNamespace(decl_file="/src/decl.c", decl_line=7)
        rows = converter._line_table(function, low, low + size)  # type: ignore[arg-type]
        return rows, converter.report.warnings, converter.sink.paths  # type: ignore[attr-defined]

    compiled, reference = both(convert)
    assert compiled == reference


def _random_ranges(rng: random.Random, edge: bool) -> list[tuple[int, int]]:
    """A DIE's range list: short, overlapping, touching, empty or reversed ranges, near
    the ends of the address space; with `edge`, sometimes values no address can take."""
    out = []
    top = 1 << 64
    for _ in range(rng.choice((0, 1, 1, 1, 2, 3, 5))):
        low = rng.choice((rng.randrange(0x1000, 0x1100), rng.randrange(top - 64, top)))
        high = low + rng.randrange(-4, 40)
        if edge and rng.random() < 0.1:
            high = rng.choice((top, -1, top + 5))
        out.append((low, min(high, top - 1) if not edge else high))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_inline_call_ranges_are_kept_and_warned_alike(seed: int) -> None:
    rng = random.Random(seed)
    edge = seed % 2 == 1
    handed_back = 0
    for _ in range(3000):
        call = SimpleNamespace(ranges=_random_ranges(rng, edge))
        parent = InlineInfo(1, merged(_random_ranges(rng, False)))
        all_parent = merged(parent.ranges + _random_ranges(rng, False))
        reference = DwarfReport()
        expected = UnitConverter._inline_ranges(
            SimpleNamespace(report=reference),  # type: ignore[arg-type]
            call,  # type: ignore[arg-type]
            parent,
            all_parent,
        )
        found = from_dwarf._native.inline_ranges(call.ranges, parent.ranges, all_parent)
        if found is None:
            handed_back += 1
            assert edge, call.ranges
            continue
        all_ranges, kept, uncontained = found
        assert (all_ranges, kept) == expected
        assert reference.warnings.get("Function DIE has uncontained address range", 0) == (
            uncontained
        )
    assert (handed_back > 0) == edge


def _random_function(rng: random.Random, wide: bool) -> FunctionInfo:
    """A FunctionInfo from a small pool of ranges and details, so that many compare
    equal in range and some are equivalent yet different (the ties std::sort breaks)."""
    start = rng.choice((0x1000, 0x1010, 0x2000, (1 << 64) - 8))
    if wide and rng.random() < 0.05:
        start = rng.choice((1 << 64, -4))
    size = rng.choice((0, 4, 16))
    lines = rng.choice((None, [LineEntry(start, 1, 3)], [LineEntry(start, 1, 3)] * 2))
    inline = rng.choice((None, InlineInfo(7, [(start, start + size)])))
    return FunctionInfo(start, size, rng.randrange(4), line_table=lines, inline=inline)


@pytest.mark.parametrize("seed", range(6))
def test_functions_are_sorted_exactly_as_std_sort_sorts_them(seed: int) -> None:
    rng = random.Random(seed)
    wide = seed % 3 == 2
    for _ in range(40):
        functions = [_random_function(rng, wide) for _ in range(rng.choice((1, 5, 17, 40, 300)))]
        reference = list(functions)
        stl_sort(reference, creator.function_less)
        found = creator._native.stl_sort_functions(functions, creator._detail_less)
        if found is None:  # a start or end past 64 bits: the reference's
            assert wide
            continue
        assert [id(info) for info in found] == [id(info) for info in reference]


def _worker_chunk(binary: Path) -> tuple[dwarf_units._Chunk, list[int], list[int]]:
    """What a conversion worker sends back for every unit of `binary`, with
    string and file maps as the parent's replay makes them (shifted, so that
    a kernel reading the worker's own indexes would be caught)."""
    with ElfFile.open(str(binary)) as elf:
        offsets = [unit.offset for unit in DwarfReader(elf).units()]
    chunk = dwarf_units._convert_units(
        partial(ElfFile.open, str(binary)), None, None, offsets, None, True
    )
    strings = [0] + [1000 + 7 * i for i, (is_file, _) in enumerate(chunk.events) if not is_file]
    files = [0] + [500 + 3 * i for i, (is_file, _) in enumerate(chunk.events) if is_file]
    return chunk, strings, files


def _rebuilt(chunk: dwarf_units._Chunk, strings: list[int], files: list[int]) -> Any:
    return dwarf_units._native.rebuild_functions(
        *dwarf_units._chunk_arrays(chunk), strings, files, FunctionInfo, InlineInfo, LineEntry
    )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_worker_functions_are_rebuilt_alike(name: str) -> None:
    """A worker's flat arrays become the same FunctionInfos (line rows, inline
    trees, global indexes) through the kernel as through the reference."""
    chunk, strings, files = _worker_chunk(program(name))
    expected = dwarf_units._rebuild_functions(chunk, strings, files)
    assert any(info.line_table for info in expected)
    if name == "c-inline":
        assert any(info.inline is not None and info.inline.children for info in expected)
    assert _rebuilt(chunk, strings, files) == expected


@pytest.mark.parametrize("seed", range(3))
def test_damaged_worker_arrays_are_left_to_the_reference(seed: int) -> None:
    """Counts and indexes pointing outside the arrays: the kernel hands back
    None (the reference then answers or raises), or gives the reference's answer."""
    base, strings, files = _worker_chunk(program("c-inline"))
    rng = random.Random(seed)
    handed_back = 0
    for trial in range(200):
        chunk = copy.deepcopy(base)
        field_name = rng.choice(
            ["names", "row_counts", "row_files", "node_counts", "nodes", "row_addrs"]
        )
        column = getattr(chunk, field_name)
        if trial % 3 == 0 and len(column):
            del column[rng.randrange(len(column)) :]  # cut short
        elif len(column):
            column[rng.randrange(len(column))] = rng.choice([0, 1, 5, 2**31, len(strings) + 1])
        found = _rebuilt(chunk, strings, files)
        reference = outcome(partial(dwarf_units._rebuild_functions, chunk, strings, files))
        if found is None:
            handed_back += 1
        else:
            assert reference == ("value", found), field_name
    assert handed_back > 0
    assert _rebuilt(base, strings[:1], files) is None  # names outside the string map


def _flattened(functions: list[FunctionInfo], collector: ExtrasCollector | None) -> Any:
    """`_Chunk`'s arrays and extras as `_convert_units` fills them (kernel or reference)."""
    chunk = dwarf_units._Chunk([])
    flat = dwarf_units._native.flatten_functions(
        functions,
        None if collector is None else collector.roots,
        None if collector is None else collector.nodes,
        dwarf_units._NO_EXTRA,
    )
    if flat is None:
        return None
    for column, data in zip(dwarf_units._chunk_arrays(chunk), flat[:9], strict=True):
        column.frombytes(data)
    chunk.extras = flat[9]
    return chunk


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("with_extras", [True, False])
def test_worker_functions_are_flattened_alike(name: str, with_extras: bool) -> None:
    """A worker's FunctionInfos (and extras) become the same flat arrays and
    tuples through the kernel as through the reference."""
    binary = program(name)
    collector = ExtrasCollector() if with_extras else None
    with ElfFile.open(str(binary)) as elf:
        dwarf = DwarfReader(elf)
        functions: list[FunctionInfo] = []
        names = dwarf_units.NameBuilder()
        for unit in dwarf.units():
            code = from_dwarf.unit_to_convert(unit, DwarfReport())
            converter = UnitConverter(
                code, dwarf_units._Recorder(), names, lambda _: True, DwarfReport(), collector
            )  # type: ignore[arg-type]
            functions.extend(converter.convert())
    expected = dwarf_units._Chunk([])
    dwarf_units._flatten_functions(functions, expected, collector)
    assert _flattened(functions, collector) == expected
    if collector is not None:  # a node the collector does not know gets empty extras
        collector.nodes.clear()
        expected = dwarf_units._Chunk([])
        dwarf_units._flatten_functions(functions, expected, collector)
        assert _flattened(functions, collector) == expected


def test_functions_an_array_cannot_hold_are_left_to_the_reference() -> None:
    tree = InlineInfo(1, [(0x10, 0x20)], 0, 0, [InlineInfo(2, [(0x10, 0x18)], 1, 7)])
    good = FunctionInfo(0x10, 0x10, 1, [LineEntry(0x10, 1, 3)], tree)
    assert _flattened([good], None) is not None
    for bad in (
        FunctionInfo(0x10, 0x10, 1 << 32),  # a name past u32
        FunctionInfo(-1, 0x10, 1),
        FunctionInfo(0x10, 0x10, 1, [LineEntry(0x10, 1, 1 << 32)]),
        FunctionInfo(0x10, 0x10, 1, [(0x10, 1)]),  # type: ignore[list-item]
        FunctionInfo(0x10, 0x10, 1, None, InlineInfo(1, [(0x10, 1 << 64)])),
        FunctionInfo(0x10, 0x10, 1, None, InlineInfo(1, [(0x10, 0x20, 0x30)])),  # type: ignore[list-item]
    ):
        assert _flattened([good, bad], None) is None
        reference = outcome(
            partial(dwarf_units._flatten_functions, [good, bad], dwarf_units._Chunk([]), None)
        )
        assert reference[0] == "error" or bad.inline is not None
