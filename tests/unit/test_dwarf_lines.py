"""Line tables: stackmark.dwarf against llvm-dwarfdump-19 --debug-line on compiled fixtures."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from stackmark.dwarf.reader import DwarfReader
from tests.conftest import require_tool
from tests.support import sym_builds

_TABLE = re.compile(r"^debug_line\[0x([0-9a-f]+)\]")
_ROW = re.compile(r"^0x([0-9a-f]{16})\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*(.*)$")
_INCLUDE = re.compile(r'^include_directories\[\s*(\d+)\] = "(.*)"$')
_FILE = re.compile(r"^file_names\[\s*(\d+)\]:")
_NAME = re.compile(r'^\s+name: "(.*)"$')
_DIR = re.compile(r"^\s+dir_index: (\d+)$")

Row = tuple[int, int, int, int, int, bool, bool]


def dwarfdump_lines(binary: Path) -> dict[int, dict[str, list]]:  # type: ignore[type-arg]
    """{table offset: {"rows": [...], "dirs": [...], "files": [(name, dir)]}}."""
    out = subprocess.run(
        [require_tool("llvm-dwarfdump-19"), "--debug-line", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tables: dict[int, dict[str, list]] = {}  # type: ignore[type-arg]
    current: dict[str, list] | None = None  # type: ignore[type-arg]
    for line in out.splitlines():
        if m := _TABLE.match(line):
            current = tables.setdefault(int(m.group(1), 16), {"rows": [], "dirs": [], "files": []})
        elif current is None:
            continue
        elif m := _ROW.match(line):
            flags = m.group(8).split()
            current["rows"].append(
                (
                    int(m.group(1), 16),
                    int(m.group(2)),
                    int(m.group(3)),
                    int(m.group(4)),
                    int(m.group(6)),
                    "is_stmt" in flags,
                    "end_sequence" in flags,
                )
            )
        elif m := _INCLUDE.match(line):
            current["dirs"].append(m.group(2))
        elif _FILE.match(line):
            current["files"].append(["", 0])
        elif (m := _NAME.match(line)) and current["files"]:
            current["files"][-1][0] = m.group(1)
        elif (m := _DIR.match(line)) and current["files"]:
            current["files"][-1][1] = int(m.group(1))
    return tables


def our_lines(binary: Path) -> dict[int, dict[str, list]]:  # type: ignore[type-arg]
    reader = DwarfReader.open(binary)
    tables: dict[int, dict[str, list]] = {}  # type: ignore[type-arg]
    for unit in reader.units():
        table = unit.line_table()
        assert table is not None
        rows = [(r[0], r[2], r[3], r[1], r[6], bool(r[4]), bool(r[5])) for r in table.rows]
        tables[table.header.offset] = {
            "rows": rows,
            "dirs": list(table.header.directories),
            "files": [[f.name, f.dir_index] for f in table.header.files],
        }
    return tables


BUILDS = {
    "c-O0": lambda: sym_builds.c_program("-g", "-O0", name="sym_inline_O0"),
    "c-O2": lambda: sym_builds.c_program(),
    "c-O2-dwarf4": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-4", name="sym_inline_d4"),
    "c-O2-gz": lambda: sym_builds.c_program("-g", "-O2", "-gz", name="sym_inline_gz"),
    "c-O2-dwarf2": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-2", name="sym_inline_d2"),
    "c-O2-dwarf3": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-3", name="sym_inline_d3"),
    "c-O2-aarch64": sym_builds.aarch64_program,
    "c-m32": sym_builds.freestanding_32bit,
    "c-m32-dwarf4": lambda: sym_builds.freestanding_32bit("-gdwarf-4"),
    "cpp-O2": lambda: sym_builds.cpp_program(),
    "cpp-O2-dwarf4": lambda: sym_builds.cpp_program(
        "-g", "-O2", "-gdwarf-4", name="sym_templates_d4"
    ),
    "lib": sym_builds.shared_library,
}


@pytest.mark.parametrize("variant", sorted(BUILDS))
def test_rows_and_file_tables_match_llvm_dwarfdump(variant: str) -> None:
    binary = BUILDS[variant]()
    expected = dwarfdump_lines(binary)
    actual = our_lines(binary)
    assert sorted(actual) == sorted(expected)
    for offset, table in expected.items():
        assert actual[offset]["dirs"] == table["dirs"], f"table 0x{offset:x}"
        assert actual[offset]["files"] == table["files"], f"table 0x{offset:x}"
        assert len(actual[offset]["rows"]) == len(table["rows"]), f"table 0x{offset:x}"
        for ours, theirs in zip(actual[offset]["rows"], table["rows"], strict=True):
            assert ours == theirs, f"table 0x{offset:x}"


def test_lookup_takes_the_last_row_at_an_address_and_respects_sequence_ends() -> None:
    binary = sym_builds.cpp_program()
    reader = DwarfReader.open(binary)
    checked = 0
    for unit in reader.units():
        table = unit.line_table()
        assert table is not None
        for seq in table.sequences:
            rows = table.rows[seq.first : seq.end]
            for row in rows[:-1]:
                if row[0] >= seq.high:  # a row at the end address describes nothing
                    continue
                # the row llvm reports for this row's address is the last one there
                last = max(j for j, r in enumerate(rows[:-1]) if r[0] == row[0])
                found = table.lookup(row[0])
                assert found is not None
                assert tuple(found) == rows[last]
                checked += 1
            assert table.lookup(seq.high) is None or any(
                s.low <= seq.high < s.high for s in table.sequences
            )
    assert checked > 100


@pytest.mark.parametrize("variant", ["cpp-O2", "c-O2-dwarf4"])
def test_rows_and_lookups_stay_the_same_once_the_wide_store_replaces_the_columns(
    variant: str,
) -> None:
    """The GSYM converter reads a table's rows as one flat store of seven uint64 a row
    (`_flat`), made from the columns lookups use, which it then replaces."""
    reader = DwarfReader.open(BUILDS[variant]())
    checked = 0
    for unit in reader.units():
        table = unit.line_table()
        assert table is not None
        rows = list(table.rows)
        addresses = sorted({row[0] for row in rows} | {row[0] + 1 for row in rows})
        found = [table.lookup(address) for address in addresses]
        spans = [list(table.rows_in(seq.low, seq.high)) for seq in table.sequences]
        flat = table._flat
        assert list(flat) == [int(value) for row in rows for value in row]
        assert list(table.rows) == rows
        assert [table.lookup(address) for address in addresses] == found
        assert [list(table.rows_in(seq.low, seq.high)) for seq in table.sequences] == spans
        checked += len(rows)
    assert checked > 100


def test_file_names_are_absolute_as_llvm_resolves_them() -> None:
    binary = sym_builds.c_program("-g", "-O2", "-gdwarf-4", name="sym_inline_d4")
    table = next(DwarfReader.open(binary).units()).line_table()
    assert table is not None
    assert table.file_name(1) == str(sym_builds.SOURCES / "sym_inline.c")
    assert table.file_name(0) is None  # DWARF 4 numbers files from 1
    stdio = [i for i, f in enumerate(table.header.files, 1) if f.name == "stdio.h"]
    assert stdio and table.file_name(stdio[0]) == "/usr/include/stdio.h"
