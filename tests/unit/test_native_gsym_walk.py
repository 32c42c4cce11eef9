"""The converter's compiled DIE walk (`gsym_walk` in stackmark/_native/_dwarf.c)
against its reference, `stackmark.formats.gsym.dwarf_walk.UnitWalk`.

On programs compiled here (gcc and clang, DWARF 4 and 5, C and C++) and on
damaged copies of them, both walks must find the same subprograms and inline
trees, with the same attribute values and ranges, and record the same parents,
or raise the same FormatError at the same offset.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stackmark._native import forced_pure
from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.formats.gsym import dwarf_walk
from stackmark.formats.gsym.dwarf_names import DieParents
from stackmark.formats.gsym.dwarf_walk import DieFunction, UnitWalk
from tests.support import sym_builds
from tests.support.build import compile_program
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="compares the compiled kernel with the reference (run pure already)"
)

PROGRAMS: dict[str, Callable[[], Path]] = {
    "gcc C -O2 (DWARF 5)": lambda: sym_builds.c_program(),
    "gcc C -O2 DWARF 4 (.debug_ranges)": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-4"),
    "g++ templates -O2": lambda: sym_builds.cpp_program(),
    "g++ local classes -O2": lambda: sym_builds.local_classes_program(),
    "clang++ local classes -O2 DWARF 4": lambda: compile_program(
        "gsym_walk_clang_local",
        [sym_builds.LOCAL_CLASSES_SOURCE],
        compiler="clang++-19",
        flags=("-g", "-O2", "-gdwarf-4"),
    ),
    "clang C -O2 DWARF 5 (indexed addresses)": lambda: compile_program(
        "gsym_walk_clang_c5", [sym_builds.C_SOURCE], compiler="clang-19", flags=("-g", "-O2")
    ),
    "clang C -O2 DWARF 4": lambda: compile_program(
        "gsym_walk_clang_c4",
        [sym_builds.C_SOURCE],
        compiler="clang-19",
        flags=("-g", "-O2", "-gdwarf-4"),
    ),
    "gcc C two units -O2 (references past the first unit)": lambda: compile_program(
        "gsym_walk_two_units", ["gsym_inline.c", "gsym_inline_b.c"], flags=("-g", "-O2")
    ),
    "GNU C nested functions -O2": lambda: compile_program(
        "sym_nested", ["sym_nested.c"], flags=("-g", "-O2")
    ),
}
HANDED_BACK = {"clang C -O2 DWARF 5 (indexed addresses)"}
"""Programs whose units the kernel leaves to the reference: clang's DWARF 5 names
addresses by index (DW_FORM_addrx), which only the reference reads."""


def _tree(function: DieFunction) -> tuple[Any, ...]:
    return (
        function.offset,
        function.tag,
        function.values,
        function.ranges,
        function.origin,
        (function.call_file_here, function.call_line, function.call_column),
        [_tree(child) for child in function.children],
    )


def outcome(data: bytes) -> tuple[Any, ...]:
    """Every unit's walk (functions, inline trees, parents), or the error it raises."""
    reader = DwarfReader(ElfFile.from_bytes(data, "damaged"))
    walks = []
    parents = DieParents()
    try:
        for unit in reader.units():
            walk = UnitWalk(unit, parents)
            walks.append([_tree(function) for function in walk.functions])
    except FormatError as exc:
        return ("error", str(exc), exc.offset, walks)
    return ("ok", walks, parents.recorded())


class _Counting:
    """Wraps the compiled module, counting the walks it answered (not None)."""

    def __init__(self, module: Any):
        self.module = module
        self.answered = 0

    def __getattr__(self, name: str) -> Any:
        kernel = getattr(self.module, name)
        if name != "gsym_walk":
            return kernel

        def call(*args: Any) -> Any:
            result = kernel(*args)
            self.answered += result is not None
            return result

        return call


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_programs_walk_the_same_with_and_without_the_kernel(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = PROGRAMS[name]().read_bytes()
    spy = _Counting(dwarf_walk._native)
    monkeypatch.setattr(dwarf_walk, "_native", spy)
    compiled = outcome(data)
    monkeypatch.undo()
    with pure_python():
        reference = outcome(data)
    assert compiled[0] == "ok"
    assert compiled == reference
    assert any(compiled[1]), "the programs have functions with code"
    assert (spy.answered == 0) == (name in HANDED_BACK), spy.answered


@pytest.mark.parametrize("section", [".debug_info", ".debug_abbrev", ".debug_rnglists"])
def test_damaged_dwarf_walks_the_same_or_fails_the_same(section: str) -> None:
    data = PROGRAMS["g++ local classes -O2"]().read_bytes()
    target = ElfFile.from_bytes(data).section(section)
    assert target is not None
    start, size = target.offset, target.size
    rng = random.Random(section)
    errors = 0
    for trial in range(120):
        damaged = bytearray(data)
        if trial % 4 == 0:  # a run of garbage
            at = start + rng.randrange(size)
            for i in range(at, min(at + rng.randrange(1, 16), start + size)):
                damaged[i] = rng.randrange(256)
        elif trial % 4 == 1:  # one byte
            damaged[start + rng.randrange(size)] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFF))
        elif trial % 4 == 2:  # a few single bytes
            for _ in range(4):
                damaged[start + rng.randrange(size)] = rng.randrange(256)
        else:  # everything after a point zeroed, as if truncated
            at = start + rng.randrange(size)
            damaged[at : start + size] = bytes(start + size - at)
        compiled = outcome(bytes(damaged))
        with pure_python():
            reference = outcome(bytes(damaged))
        assert compiled == reference, f"trial {trial}"
        errors += compiled[0] == "error"
    if section != ".debug_rnglists":  # garbage in a range list is still a range list
        assert errors > 0, "damage should be noticed at least sometimes"
