"""The compiled DWARF kernels (stackmark/_native/_dwarf.c) against the pure-Python
reference: on compiled programs and on damaged copies of them, reading with and
without the kernels gives the same results, or the same FormatError at the same
offset. Line programs are also run on random bytes, kernel against reference."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from stackmark._native import forced_pure
from stackmark.dwarf import abbrev, functions, lines, ranges
from stackmark.dwarf.functions import Function
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.sections import Section
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from tests.support import sym_builds
from tests.support.build import compile_program
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="compares the compiled kernels with the reference (run pure already)"
)

PROGRAMS: dict[str, Callable[[], Path]] = {
    "C -O2 (DWARF 5)": lambda: sym_builds.c_program(),
    "C -O2 DWARF 4 (.debug_ranges)": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-4"),
    "C++ templates -O2": lambda: sym_builds.cpp_program(),
    "C++ local classes -O2": lambda: sym_builds.local_classes_program(),
    "C -O0": lambda: sym_builds.c_program("-g", "-O0", name="sym_inline_O0"),
    "32-bit x86": lambda: sym_builds.freestanding_32bit(),
    "GNU C nested functions -O2": lambda: compile_program(
        "sym_nested", ["sym_nested.c"], flags=("-g", "-O2")
    ),
}


def _tree(function: Function) -> tuple[Any, ...]:
    return (
        function.offset,
        function.tag,
        tuple(function.ranges),
        function.call_file,
        function.call_line,
        function.call_column,
        function.name,
        tuple(_tree(child) for child in function.children),
        tuple(_tree(nested) for nested in function.nested_subprograms),
    )


def snapshot(reader: DwarfReader, addresses: list[int]) -> list[Any]:
    """Everything the kernels feed: DIE values, line tables, function trees, lookups."""
    out: list[Any] = []
    for unit in reader.units():
        out.append([(die.offset, die.depth, die.tag, die.values) for die in unit.dies()])
        for top in unit.function_index().top:  # the address map's input, before any parsing
            tree_ranges, nodes = top._tree_ranges()
            out.append((tree_ranges, [node.offset for node in nodes]))
        table = unit.line_table()
        if table is not None:
            out.append((list(table.rows), table.sequences))
        out.append([_tree(function) for function in unit.functions()])
    for address in addresses:
        unit = reader.unit_for_address(address)
        if unit is not None:
            out.append([node.offset for node in unit.inline_chain(address)])
            table = unit.line_table()
            out.append(table.lookup(address) if table is not None else None)
    return out


def outcome(data: bytes, addresses: list[int]) -> tuple[Any, ...]:
    try:
        return ("ok", snapshot(DwarfReader(ElfFile.from_bytes(data, "damaged")), addresses))
    except FormatError as exc:
        return ("error", str(exc), exc.offset)


class _Counting:
    """Wraps the compiled module, counting the calls that it answered (not None)."""

    def __init__(self, module: Any):
        self.module = module
        self.answered = 0

    def __getattr__(self, name: str) -> Any:
        kernel = getattr(self.module, name)

        def call(*args: Any) -> Any:
            result = kernel(*args)
            self.answered += result is not None
            return result

        return call


def _program(name: str) -> tuple[bytes, list[int]]:
    binary = PROGRAMS[name]()
    elf = ElfFile.open(binary)
    addresses = [s.value + d for s in elf.symbols() if s.type == 2 and s.value for d in (0, 5)]
    return binary.read_bytes(), addresses


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_programs_read_the_same_with_and_without_the_kernels(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, addresses = _program(name)
    spies = {module: _Counting(module._native) for module in (functions, lines, abbrev)}
    for module, spy in spies.items():
        monkeypatch.setattr(module, "_native", spy)
    compiled = outcome(data, addresses)
    monkeypatch.undo()
    with pure_python():
        reference = outcome(data, addresses)
    assert compiled[0] == "ok"
    assert compiled == reference
    # The kernels did the work (they did not hand every call back to the reference).
    assert all(spy.answered > 0 for spy in spies.values()), {
        module.__name__: spy.answered for module, spy in spies.items()
    }


@pytest.mark.parametrize("name", ["C -O2 (DWARF 5)", "C++ templates -O2", "C++ local classes -O2"])
def test_the_calls_a_lookup_reaches_are_the_nodes_of_the_tree_walked_afterwards(name: str) -> None:
    """The compiled walk keeps a subtree in arrays and makes a node's Function when a
    lookup reaches it: the tree walked after the lookups holds those same objects,
    with the same parents, and the lookups give the reference's chains."""
    data, _ = _program(name)
    reader = DwarfReader(ElfFile.from_bytes(data, name))
    tables = [unit.line_table() for unit in reader.units()]
    addresses = sorted({row[0] for table in tables if table is not None for row in table.rows})
    chains = []
    for address in addresses:
        unit = reader.unit_for_address(address)
        if unit is not None:
            chains.append(unit.inline_chain(address))
    assert any(node.is_inlined for chain in chains for node in chain)
    for chain in chains:
        if not chain:
            continue
        subprogram = chain[-1]
        tree = [node for top in (subprogram, *subprogram.nested_subprograms) for node in top.walk()]
        for node in chain:
            assert any(node is walked for walked in tree), node
        for inner, outer in pairwise(chain):
            assert inner.parent is outer
            assert any(inner is child for child in outer.children)
    with pure_python():
        reference = DwarfReader(ElfFile.from_bytes(data, name))
        expected = []
        for address in addresses:
            unit = reference.unit_for_address(address)
            if unit is not None:
                expected.append([(node.offset, node.name) for node in unit.inline_chain(address)])
    assert [[(node.offset, node.name) for node in chain] for chain in chains] == expected


@pytest.mark.parametrize(
    "section", [".debug_info", ".debug_abbrev", ".debug_line", ".debug_rnglists", ".debug_ranges"]
)
def test_damaged_dwarf_gives_the_same_results_or_the_same_errors(section: str) -> None:
    program = "C -O2 DWARF 4 (.debug_ranges)" if section == ".debug_ranges" else "C -O2 (DWARF 5)"
    data, addresses = _program(program)
    target = ElfFile.from_bytes(data).section(section)
    assert target is not None
    start, size = target.offset, target.size
    rng = random.Random(section)
    errors = 0
    for trial in range(90):
        damaged = bytearray(data)
        if trial % 3 == 0:  # a run of garbage
            at = start + rng.randrange(size)
            for i in range(at, min(at + rng.randrange(1, 16), start + size)):
                damaged[i] = rng.randrange(256)
        elif trial % 3 == 1:  # one byte
            damaged[start + rng.randrange(size)] = rng.choice((0x00, 0x7F, 0x80, 0xFF))
        else:  # everything after a point zeroed, as if truncated
            at = start + rng.randrange(size)
            damaged[at : start + size] = bytes(start + size - at)
        compiled = outcome(bytes(damaged), addresses)
        with pure_python():
            reference = outcome(bytes(damaged), addresses)
        assert compiled == reference, f"trial {trial}"
        errors += compiled[0] == "error"
    if section != ".debug_ranges":  # garbage in a range list is still a range list
        assert errors > 0, "damage should be noticed at least sometimes"


def _random_program(rng: random.Random) -> tuple[lines.LineProgramHeader, bytes]:
    """A line-program header with random parameters and a program of random opcodes
    (valid-looking ones mostly, with wide LEB128s, tombstones and garbage mixed in)."""
    header = lines.LineProgramHeader()
    header.opcode_base = rng.choice((1, 4, 10, 13, 13, 13, 20))
    header.line_base = rng.randrange(-8, 2)
    header.line_range = rng.choice((0, 1, 4, 14, 14))
    header.min_inst_length = rng.choice((0, 1, 1, 4, 255))
    header.max_ops_per_inst = rng.choice((0, 1, 1, 3))
    header.default_is_stmt = rng.random() < 0.5
    header.standard_opcode_lengths = [rng.randrange(3) for _ in range(header.opcode_base - 1)]
    program = bytearray()
    for _ in range(rng.randrange(1, 60)):
        choice = rng.random()
        if choice < 0.3:
            program.append(rng.randrange(256))
        elif choice < 0.45:
            program += bytes((0, 9, 2)) + struct.pack("<Q", rng.choice((0x1000, (1 << 64) - 1)))
        elif choice < 0.55:
            program += bytes((0, 1, 1))
        elif choice < 0.7:
            program += bytes((rng.choice((2, 3, 4, 5)),)) + bytes(
                [0x80 | rng.randrange(128) for _ in range(rng.choice((0, 1, 9, 10)))]
            ) + bytes((rng.randrange(128),))
        elif choice < 0.8:
            program += bytes((0, 2, 4, rng.randrange(256)))
        else:
            program += bytes((0, rng.randrange(8))) + bytes(rng.randrange(256) for _ in range(3))
    return header, bytes(program)


def test_line_programs_of_random_bytes_run_the_same_in_the_kernel_and_the_reference() -> None:
    rng = random.Random(18)
    answered = 0
    for case in range(3000):
        header, program = _random_program(rng)
        cut = rng.randrange(len(program) + 1) if case % 4 == 0 else len(program)
        buf = program[:cut]
        section = Section(".debug_line", buf, 0, len(buf), "random")
        header.header_end = 0
        header.program_end = max(len(buf) - rng.randrange(3), 0)
        compiled = lines._run_program_compiled(section, header, "<")
        try:
            # (rows and sequences; the kernel leaves the addresses' offsets to the
            # reference, which relocatable objects alone need)
            reference: Any = lines._run_program(section, header, "<")[:2]
        except (IndexError, struct.error):
            reference = "error"
        if compiled is not None:
            answered += 1
            assert compiled == reference, f"case {case}: {buf.hex()}"
    assert answered > 400


def test_range_lists_of_random_bytes_read_the_same_in_the_kernel_and_the_reference() -> None:
    assert ranges._native is not None
    rng = random.Random(5)
    answered = 0
    for case in range(3000):
        data = bytearray()
        for _ in range(rng.randrange(1, 8)):
            kind = rng.choice((4, 4, 4, 5, 6, 7, 1, 9))  # indexed (1) and unknown (9) too
            data.append(kind)
            if kind in (4, 7):  # LEB128 operands, some wider than 64 bits
                data += bytes(8 * (kind == 7))
                for _ in range(2 if kind == 4 else 1):
                    wide = rng.choice((0, 0, 1, 10))
                    data += bytes([0xFF] * wide) + bytes((rng.randrange(128),))
            else:
                data += bytes(rng.randrange(256) for _ in range({5: 8, 6: 16}.get(kind, 2)))
        data += bytes(rng.choice(((0,), (0,), (0,), ())))  # mostly with an end marker
        base = rng.choice((0, 0x400000, (1 << 64) - 1))
        offset = rng.choice((0, 0, 0, rng.randrange(len(data) + 1)))
        compiled = ranges._native.read_rnglist(bytes(data), 0, len(data), offset, 8, True, base)
        reference = _reference_rnglist(bytes(data), offset, base)
        if compiled is not None:
            answered += 1
            assert compiled == reference, f"case {case}: {data.hex()} at {offset}"
    assert answered > 500


def _reference_rnglist(data: bytes, offset: int, base: int) -> Any:
    """ranges._read_rnglist over `data` alone (a unit stand-in gives it what it asks)."""

    class _Reader:
        rnglists = Section(".debug_rnglists", data, 0, len(data), "random")

    class _Header:
        addr_size = 8

    class _Enc:
        endian = "<"

    class _Unit:
        reader = _Reader()
        header = _Header()
        enc = _Enc()
        base_address = base

        def indexed_address(self, index: int) -> int:
            raise FormatError("indexed", offset=index)

    saved = ranges._native
    ranges._native = None
    try:
        return ranges._read_rnglist(_Unit(), offset)  # type: ignore[arg-type]
    except FormatError as exc:
        return ("error", str(exc))
    finally:
        ranges._native = saved


def test_address_maps_of_random_ranges_are_built_the_same_by_the_kernel() -> None:
    # Nested, overlapping, empty, reversed and out-of-range ranges, inserted in order.
    assert functions._native is not None
    rng = random.Random(7)
    for case in range(2000):
        ranges: list[tuple[int, int]] = []
        for _ in range(rng.randrange(1, 30)):
            low = rng.randrange(0, 200)
            high = low + rng.randrange(-20, 80)
            if rng.random() < 0.02:
                high = rng.choice(((1 << 64) - 1, 1 << 64, -1))
            ranges.append((low, high))
        nodes = list(range(len(ranges)))
        built = functions._AddressMap.built(ranges, nodes)  # type: ignore[arg-type]
        reference = functions._AddressMap()
        for (low, high), node in zip(ranges, nodes, strict=True):
            reference.insert(low, high, node)  # type: ignore[arg-type]
        assert (built.starts, built.ends, built.nodes) == (
            reference.starts,
            reference.ends,
            reference.nodes,
        ), f"case {case}: {ranges}"
