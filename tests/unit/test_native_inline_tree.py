"""The compiled inline tree against `UnitConverter._inline`, its reference.

`inline_tree` (stackmark/_native/_gsym_convert.c) builds a function's whole
inline tree: InlineInfo nodes, their NodeExtras, the strings and files it
inserts and the warnings it counts, in the reference's order. These tests
convert compiled C and C++ programs (deep always-inline chains, templates,
lambdas, gcc and clang, -O2 and -O3) unit by unit with and without the
kernels and require the same FunctionInfos, extras, string and file
insertions and warnings; then the same with the walked trees damaged the
ways DWARF can be (no call file, a call file past the table or found
through another DIE, odd call lines and columns, ranges outside the parent,
ranges no address can take, nodes of another class, trees deeper than the
kernel goes), where the kernel hands single calls to the reference.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from stackmark._native import forced_pure
from stackmark.dwarf import constants as C
from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.formats.gsym import dwarf_units, from_dwarf
from stackmark.formats.gsym.creator import GsymCreator
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.dwarf_walk import DieFunction
from stackmark.formats.gsym.from_dwarf import DwarfReport, ExtrasCollector, UnitConverter
from tests.support.build import compile_program
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

RELOCATABLE = "g++ deep -O2 object file"
PROGRAMS: dict[str, tuple[list[str], str, tuple[str, ...]]] = {
    "g++ deep -O3": (["gsym_inline_deep.cpp"], "g++", ("-g", "-O3")),
    "g++ deep -O2 DWARF 4": (["gsym_inline_deep.cpp"], "g++", ("-g", "-gdwarf-4", "-O2")),
    "clang++ deep -O2": (["gsym_inline_deep.cpp"], "clang++-19", ("-g", "-O2")),
    "gcc two units -O2": (["gsym_inline.c", "gsym_inline_b.c"], "gcc", ("-g", "-O2")),
    "g++ templates -O2": (["sym_templates.cpp"], "g++", ("-g", "-O2")),
    # A relocatable object: llvm finds no rows there, every function gets its
    # declaration's row (through `_line_table`, which the kernel calls).
    RELOCATABLE: (["gsym_inline_deep.cpp"], "g++", ("-g", "-O2", "-c")),
}


def program(name: str) -> Path:
    sources, compiler, flags = PROGRAMS[name]
    slug = "".join(c if c.isalnum() else "-" for c in name)
    return compile_program(f"inline-tree-{slug}", sources, compiler=compiler, flags=flags)


class _PlainSink:
    """A sink that keeps no dict the kernel could read: it calls insert_string."""

    def __init__(self) -> None:
        self.events: list[tuple[bool, str]] = []
        self._numbers: dict[tuple[bool, str], int] = {}

    def insert_string(self, text: str) -> int:
        return self._number(False, text)

    def insert_file(self, path: str) -> int:
        return self._number(True, path)

    def _number(self, is_file: bool, text: str) -> int:
        key = (is_file, text)
        if key not in self._numbers:
            self._numbers[key] = len(self._numbers) + 1
            self.events.append(key)
        return self._numbers[key]


SINKS: dict[str, Callable[[], Any]] = {
    "creator": GsymCreator,
    "recorder": dwarf_units._Recorder,
    "plain": _PlainSink,
}


def _inserted(sink: Any) -> object:
    """What the sink was given, in order."""
    if isinstance(sink, GsymCreator):
        return sink.string_table(), sink.files
    return sink.events


Damage = Callable[[list[DieFunction], random.Random, NameBuilder], None]


def _all_valid(addr: int) -> bool:
    return True


def convert(
    binary: Path,
    sink_kind: str,
    damage: Damage | None,
    seed: int,
    valid: Callable[[int], bool] = _all_valid,
) -> object:
    """Every unit converted with one sink and one NameBuilder, as a conversion
    does: the FunctionInfos, their extras, the insertions and the report."""
    sink = SINKS[sink_kind]()
    collector = ExtrasCollector()
    report = DwarfReport()
    names = NameBuilder()
    rng = random.Random(seed)
    functions = []
    real_walk = from_dwarf.UnitWalk

    def damaged_walk(*args: Any) -> Any:
        walk = real_walk(*args)
        if damage is not None:
            damage(walk.functions, rng, names)
        return walk

    from_dwarf.UnitWalk = damaged_walk  # type: ignore[misc,assignment]
    try:
        with ElfFile.open(str(binary)) as elf:
            dwarf = DwarfReader(elf)
            for unit in dwarf.units():
                code = from_dwarf.unit_to_convert(unit, report)
                converter = UnitConverter(code, sink, names, valid, report, collector)
                functions.extend(converter.convert())
    finally:
        from_dwarf.UnitWalk = real_walk  # type: ignore[misc]
    extras = [collector.function_nodes(info) for info in functions]
    return functions, extras, _inserted(sink), report.warnings, report.messages


@contextmanager
def counted_kernel(whole_units: bool = True) -> Iterator[SimpleNamespace]:
    """The compiled kernels, with their answers and the calls they hand to the
    references counted; without `whole_units`, `convert_functions` hands every
    unit back (the Python loop then calls `inline_tree` per function)."""
    kernels = from_dwarf._native
    assert kernels is not None
    seen = SimpleNamespace(answers=[], handed=0, functions_handed=0, lines_handed=0)

    def counted(kernel: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            found = kernel(*args)
            seen.answers.append(found)
            return found

        return run

    real = UnitConverter._inline, UnitConverter._convert_function, UnitConverter._line_table

    def inline(self: UnitConverter, *args: Any) -> None:
        seen.handed += 1
        real[0](self, *args)

    def convert_function(self: UnitConverter, *args: Any) -> None:
        seen.functions_handed += 1
        real[1](self, *args)

    def line_table(self: UnitConverter, *args: Any) -> Any:
        seen.lines_handed += 1
        return real[2](self, *args)

    proxy = SimpleNamespace(
        **{name: getattr(kernels, name) for name in dir(kernels) if not name.startswith("_")}
    )
    proxy.inline_tree = counted(kernels.inline_tree)
    proxy.convert_functions = counted(
        kernels.convert_functions if whole_units else lambda *args: None
    )
    from_dwarf._native = proxy  # type: ignore[assignment]
    UnitConverter._inline = inline  # type: ignore[method-assign]
    UnitConverter._convert_function = convert_function  # type: ignore[method-assign]
    UnitConverter._line_table = line_table  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        from_dwarf._native = kernels
        UnitConverter._inline, UnitConverter._convert_function, UnitConverter._line_table = real  # type: ignore[method-assign]


def compare(
    binary: Path,
    sink_kind: str,
    damage: Damage | None = None,
    valid: Callable[[int], bool] = _all_valid,
    whole_units: bool = True,
) -> SimpleNamespace:
    """Converts with the kernel and without any; both must give the same."""
    with counted_kernel(whole_units) as seen:
        compiled = convert(binary, sink_kind, damage, 7, valid)
    with pure_python():
        reference = convert(binary, sink_kind, damage, 7, valid)
    assert compiled == reference
    return seen


@pytest.mark.parametrize("sink_kind", sorted(SINKS))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_programs_give_the_same_inline_trees(name: str, sink_kind: str) -> None:
    seen = compare(program(name), sink_kind)
    # The kernels converted every function, line table and tree themselves: none
    # handed back, no call to a reference.
    assert seen.answers and all(answer is True for answer in seen.answers)
    assert seen.handed == seen.functions_handed == 0
    assert (seen.lines_handed > 0) == (name == RELOCATABLE)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inline_trees_built_function_by_function_are_the_same(name: str) -> None:
    """`inline_tree` alone, as the Python loop over functions calls it."""
    seen = compare(program(name), "recorder", whole_units=False)
    trees = [answer for answer in seen.answers if answer is not None]
    assert trees and all(answer is True for answer in trees)
    assert seen.handed == 0


# -- damaged trees -----------------------------------------------------------------


def _calls(functions: list[DieFunction]) -> list[tuple[DieFunction, DieFunction]]:
    """(parent, call) for every inlined call, depth first."""
    out = []
    stack = [(f, c) for f in functions for c in f.children]
    while stack:
        parent, call = stack.pop()
        out.append((parent, call))
        stack.extend((call, child) for child in call.children)
    return out


class _OtherCall(DieFunction):
    """A node of another class than the walk makes: left to the reference."""

    __slots__ = ()


def _set(call: DieFunction, attr: int, value: object) -> None:
    values = dict(call.values)
    if value is _ABSENT:
        values.pop(attr, None)
    else:
        values[attr] = value
    call.values = values  # the call fields follow


_ABSENT = object()
_ODD_NUMBERS = (_ABSENT, -5, 1 << 40 | 7, (1 << 70) + 3, True, SimpleNamespace(value=9), "x")


def _damage_one(parent: DieFunction, call: DieFunction, kind: int, rng: random.Random) -> None:
    if kind == 0:  # no DW_AT_call_file: looked for through the origin, else invalid
        _set(call, C.DW_AT_call_file, _ABSENT)
    elif kind == 1:  # past the file table
        _set(call, C.DW_AT_call_file, rng.choice((10**6, 1 << 40)))
    elif kind == 2:  # not an int in the DIE: found recursively
        _set(call, C.DW_AT_call_file, SimpleNamespace(value=1))
    elif kind == 3:
        _set(call, C.DW_AT_call_line, rng.choice(_ODD_NUMBERS))
    elif kind == 4:
        _set(call, C.DW_AT_call_column, rng.choice(_ODD_NUMBERS))
    elif kind == 5:  # outside the parent (uncontained), partly or wholly
        shift = rng.choice((0x100000, -0x40, 1))
        call.ranges = [(low + shift, high + shift) for low, high in call.ranges] + (
            [(0x10, 0x20)] if rng.random() < 0.5 else []
        )
    elif kind == 6:  # ranges no address can take: this call goes to the reference
        call.ranges = [*call.ranges, (1 << 64, (1 << 64) + 4)]
    elif kind == 7:  # empty, reversed or no ranges
        call.ranges = rng.choice(([], [(8, 8)], [(call.ranges[0][1], call.ranges[0][0])]))
    elif kind == 8:  # named through names_of, not the origin cache
        call.origin = rng.choice((None, 0x7FFF_FFFF))
    elif kind == 9:  # a node of another class
        other = _OtherCall.__new__(_OtherCall)
        for slot in DieFunction.__slots__:
            setattr(other, slot, getattr(call, slot))
        index = parent.children.index(call)
        parent.children = [*parent.children]
        parent.children[index] = other
    else:  # a chain deeper than the kernel goes
        links = [copy.copy(call) for _ in range(230)]
        for outer, inner in pairwise(links):
            outer.children = [inner]
        links[-1].children = list(call.children)
        call.children = [links[0]]


def damage_trees(functions: list[DieFunction], rng: random.Random, names: NameBuilder) -> None:
    """Damages up to 33 calls of the unit, each kind of damage in turn (those the
    kernel hands to the reference first, so that small programs get them too)."""
    calls = [(parent, call) for parent, call in _calls(functions) if call.ranges]
    kinds = [6, 9, 10, 0, 1, 2, 3, 4, 5, 7, 8]
    for i, (parent, call) in enumerate(rng.sample(calls, min(len(calls), 33))):
        _damage_one(parent, call, kinds[i % len(kinds)], rng)


def odd_call_numbers(functions: list[DieFunction], rng: random.Random, names: NameBuilder) -> None:
    """Every call's line and column set to odd values in turn (absent, negative,
    past 32 or 64 bits, a bool, a form value with `.value`, not a number)."""
    for i, (_, call) in enumerate(_calls(functions)):
        _set(call, C.DW_AT_call_line, _ODD_NUMBERS[i % len(_ODD_NUMBERS)])
        _set(call, C.DW_AT_call_column, _ODD_NUMBERS[(i + 3) % len(_ODD_NUMBERS)])


@pytest.mark.parametrize("sink_kind", ["creator", "plain"])
@pytest.mark.parametrize("name", ["g++ deep -O3", "clang++ deep -O2", "gcc two units -O2"])
def test_damaged_trees_give_the_same_inline_trees(name: str, sink_kind: str) -> None:
    seen = compare(program(name), sink_kind, damage_trees)
    assert seen.handed > 0  # some calls went to the reference, in place


@pytest.mark.parametrize("name", ["g++ deep -O2 DWARF 4", "clang++ deep -O2"])
def test_odd_call_lines_and_columns_give_the_same_inline_trees(name: str) -> None:
    seen = compare(program(name), "recorder", odd_call_numbers)
    assert seen.handed == 0


def test_a_root_of_another_class_is_left_to_the_reference_before_any_effect() -> None:
    kernels = from_dwarf._native
    assert kernels is not None
    warned: list[str] = []
    tools = (
        DieFunction,
        from_dwarf.InlineInfo,
        from_dwarf.NodeExtra,
        {},
        None,
        None,
        None,
        {},
        None,
        warned.append,
        None,
        None,
    )
    root = SimpleNamespace(ranges=[(0, 8)], children=[])
    assert kernels.inline_tree([], root, [(0, 8)], tools) is None
    wide = from_dwarf.InlineInfo(1, [(0, 1 << 64)])
    assert kernels.inline_tree([], wide, [(0, 8)], tools) is None
    assert warned == []


# -- damaged functions -------------------------------------------------------------

_NAMELESS = 0x7EEE_EEEE  # an origin whose cached names are all None


def _damage_function(functions: list[DieFunction], i: int, kind: int, names: NameBuilder) -> None:
    function = functions[i]
    low, high = function.ranges[0]
    if kind == 0:  # starts at 0, outside the text: ends the list without a warning
        function.ranges = [(0, 0x10), *function.ranges]
    elif kind == 1:  # an empty range first ends the list
        function.ranges = [(low, low), *function.ranges]
    elif kind == 2:  # more ranges: one FunctionInfo each, until one is not valid
        function.ranges = [*function.ranges, (high + 0x40, high + 0x80), (low - 0x10, low)]
    elif kind == 3:  # values no address can take: this function goes to the reference
        function.ranges = [*function.ranges, (1 << 64, (1 << 64) + 8)]
    elif kind == 4:  # a node of another class
        other = _OtherCall.__new__(_OtherCall)
        for slot in DieFunction.__slots__:
            setattr(other, slot, getattr(function, slot))
        functions[i] = other
    elif kind == 5:  # no name
        names.origin_names[_NAMELESS] = (None, None, None)
        function.origin = _NAMELESS
    else:  # no ranges
        function.ranges = []


def damage_functions(functions: list[DieFunction], rng: random.Random, names: NameBuilder) -> None:
    """Damages up to 21 functions of the unit, each kind in turn."""
    chosen = rng.sample(range(len(functions)), min(len(functions), 21))
    for n, i in enumerate(chosen):
        if functions[i].ranges:
            _damage_function(functions, i, n % 7, names)


def _some_valid(addr: int) -> bool:
    """Text that leaves out every third 16-byte block (and address 0)."""
    return (addr >> 4) % 3 != 0


@pytest.mark.parametrize("name", ["gcc two units -O2", "g++ templates -O2"])
def test_damaged_functions_give_the_same_function_infos(name: str) -> None:
    seen = compare(program(name), "recorder", damage_functions, _some_valid)
    assert seen.functions_handed > 0  # some functions went to the reference, in place


def test_functions_outside_the_text_give_the_same_function_infos() -> None:
    seen = compare(program("g++ templates -O2"), "creator", None, _some_valid)
    assert seen.functions_handed == seen.lines_handed == seen.handed == 0


def _creator_check(text_ranges: list[tuple[int, int]] | None) -> Callable[[int], bool]:
    creator = GsymCreator()
    if text_ranges is not None:
        creator.set_text_ranges(text_ranges)
    return creator.is_valid_text_address


@pytest.mark.parametrize("holes", [False, True])
def test_the_creators_text_check_read_in_c_gives_the_same_function_infos(holes: bool) -> None:
    """GsymCreator's check is read from its text ranges in C: with none (every
    address is text), and with a hole in every 64-byte block (some functions
    start outside the text)."""
    blocks = [(a, a + 0x30) for a in range(0, 0x100000, 0x40)] if holes else None
    seen = compare(program("g++ templates -O2"), "creator", None, _creator_check(blocks))
    assert seen.answers and all(answer is True for answer in seen.answers)
