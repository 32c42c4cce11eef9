"""Address -> unit: llvm's merging rules for overlapping .debug_aranges, and the
first-lookup shortcut agreeing with the merged map."""

from __future__ import annotations

import random

from stackmark.dwarf.aranges import AddressRanges
from stackmark.dwarf.reader import DwarfReader
from tests.support import sym_builds


def merged(sets: list[tuple[int, list[int], list[int]]]) -> AddressRanges:
    ranges = AddressRanges(sets)
    ranges._scans = AddressRanges._SCANS_BEFORE_MERGE  # go straight to the merged map
    return ranges


def test_overlaps_follow_llvm() -> None:
    # unit 0x100 covers [0, 50); unit 0x10 covers [20, 30) and [60, 70)
    sets = [(0x100, [0], [50]), (0x10, [20, 60], [10, 10])]
    ranges = merged(sets)
    assert ranges.find(10) == 0x100
    # llvm keeps extending the range of the unit already in effect
    assert ranges.find(25) == 0x100
    assert ranges.find(65) == 0x10
    assert ranges.find(55) is None and ranges.find(70) is None
    # where two units start together, the lower offset wins
    together = merged([(0x200, [100], [10]), (0x80, [100], [10])])
    assert together.find(105) == 0x80


def test_empty_and_inverted_ranges_describe_nothing() -> None:
    ranges = merged([(0x1, [10, 30], [0, -5])])
    assert ranges.find(10) is None and ranges.find(28) is None


def test_first_lookups_agree_with_the_merged_map() -> None:
    rng = random.Random(4)
    for _ in range(50):
        sets = []
        for unit in range(rng.randrange(1, 6)):
            starts = [rng.randrange(0, 200) for _ in range(rng.randrange(0, 4))]
            sets.append((unit * 16, starts, [rng.randrange(0, 40) for _ in starts]))
        full = merged(sets)
        for address in range(0, 260, 3):
            fresh = AddressRanges(sets)  # one scan, then its own answer
            units = fresh._scan(address)
            if len(units) <= 1:
                assert fresh.find(address) == full.find(address)


def test_real_binary_units_come_from_aranges_alone() -> None:
    binary = sym_builds.cpp_program()
    reader = DwarfReader.open(binary)
    for unit in reader.units():
        for low, high in unit.ranges:
            assert reader.unit_for_address(low) is unit
            assert reader.unit_for_address(high - 1) is unit
