"""Malformed DWARF: the reader raises FormatError naming the offset, never anything else.

Real debug sections of a compiled fixture are damaged (bytes overwritten,
sections cut short) and every reading path is run over the result.
"""

from __future__ import annotations

import random

import pytest

from stackmark.dwarf.reader import DwarfReader
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from tests.support import sym_builds


def exercise(reader: DwarfReader, addresses: list[int]) -> None:
    """Every public reading path: units, DIEs, function trees, names, line tables, lookups."""
    for unit in reader.units():
        for die in unit.dies():
            die.string(3)
        table = unit.line_table()
        if table is not None:
            for row in table.rows[:50]:
                table.file_name(row[1])
        for function in unit.functions():
            for node in function.walk():
                _ = (node.name, node.linkage_name, node.decl_file, node.decl_line)
    for address in addresses:
        unit = reader.unit_for_address(address)
        if unit is not None:
            for node in unit.inline_chain(address):
                _ = node.name
            table = unit.line_table()
            if table is not None:
                table.lookup(address)


@pytest.fixture(scope="module")
def pristine() -> tuple[bytes, list[int]]:
    binary = sym_builds.c_program()
    elf = ElfFile.open(binary)
    addresses = [s.value for s in elf.symbols() if s.type == 2 and s.value]
    return binary.read_bytes(), addresses


@pytest.mark.parametrize(
    "section",
    [
        ".debug_info",
        ".debug_abbrev",
        ".debug_line",
        ".debug_rnglists",
        ".debug_str",
        ".debug_line_str",
        ".debug_aranges",
    ],
)
def test_damaged_sections_raise_format_errors_only(
    pristine: tuple[bytes, list[int]], section: str
) -> None:
    data, addresses = pristine
    elf = ElfFile.from_bytes(data)
    target = elf.section(section)
    assert target is not None
    rng = random.Random(section)
    errors = 0
    for trial in range(120):
        damaged = bytearray(data)
        start, size = target.offset, target.size
        if trial % 3 == 0:  # a run of garbage
            at = start + rng.randrange(size)
            for i in range(at, min(at + rng.randrange(1, 16), start + size)):
                damaged[i] = rng.randrange(256)
        elif trial % 3 == 1:  # a single byte
            damaged[start + rng.randrange(size)] = rng.choice((0x00, 0x7F, 0x80, 0xFF))
        else:  # everything after a point zeroed, as if truncated
            at = start + rng.randrange(size)
            damaged[at : start + size] = bytes(start + size - at)
        try:
            exercise(DwarfReader(ElfFile.from_bytes(bytes(damaged), "damaged")), addresses)
        except FormatError as exc:
            assert "damaged" in str(exc) and exc.offset is not None
            errors += 1
    if section not in (".debug_str", ".debug_line_str"):  # damaged text is still text
        assert errors > 0, "damage to structure should be noticed at least sometimes"


def test_unit_length_past_the_section_is_reported(pristine: tuple[bytes, list[int]]) -> None:
    data, _ = pristine
    elf = ElfFile.from_bytes(data)
    info = elf.section(".debug_info")
    assert info is not None
    damaged = bytearray(data)
    damaged[info.offset : info.offset + 4] = (0xFFFFFFF0 - 1).to_bytes(4, "little")
    reader = DwarfReader(ElfFile.from_bytes(bytes(damaged), "damaged"))
    with pytest.raises(FormatError, match="past the end of the section") as caught:
        list(reader.units())
    assert caught.value.offset == 0
