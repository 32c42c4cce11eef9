"""Breakpad .sym to GSYM, checked with llvm-gsymutil-19 on both sides.

There is no dump_syms here, so the test writes the .sym itself from what
llvm-gsymutil-19 prints for its own GSYM of a compiled program (functions,
line tables, inline trees): FUNC/line/INLINE/INLINE_ORIGIN/PUBLIC records.
Our Breakpad -> GSYM conversion of that file must then look up every
address exactly as llvm's GSYM does, according to llvm-gsymutil itself.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from stackmark.conversion.files import convert_file
from stackmark.formats.gsym import GsymReader
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.gsymutil import llvm_lookups

GSYMUTIL = "llvm-gsymutil-19"
_RANGE = re.compile(r"\[0x([0-9a-f]+) - 0x([0-9a-f]+)\)")


def sym_from_llvm_dump(dump: str, build_id: str) -> str:
    """A Breakpad .sym with the functions, rows and inline trees of an llvm dump."""
    files: dict[str, int] = {}
    origins: dict[str, int] = {}
    body: list[str] = []

    def file_id(path: str) -> int:
        return files.setdefault(path, len(files))

    lines = dump.split("\n")
    i = 0
    while i < len(lines) and not lines[i].startswith("FunctionInfo @"):
        i += 1
    while i < len(lines) and lines[i].startswith("FunctionInfo @"):
        head = lines[i]
        start, end = (int(x, 16) for x in _RANGE.search(head).groups())  # type: ignore[union-attr]
        name = head[head.index('"') + 1 : head.rindex('"')]
        i += 1
        rows: list[tuple[int, int, int]] = []
        inlines: list[str] = []
        if i < len(lines) and lines[i] == "LineTable:":
            i += 1
            while i < len(lines) and lines[i].startswith("  0x"):
                addr_text, location = lines[i].strip().split(" ", 1)
                path, line = location.rsplit(":", 1)
                rows.append((int(addr_text, 16), file_id(path), int(line)))
                i += 1
        if i < len(lines) and lines[i] == "InlineInfo:":
            i += 1
            i += 1  # the root: the function itself
            while i < len(lines) and lines[i].startswith("  "):
                text = lines[i]
                depth = (len(text) - len(text.lstrip(" "))) // 2 - 1
                ranges = _RANGE.findall(text)
                last = list(_RANGE.finditer(text))[-1]
                rest = text[last.end() + 1 :]
                callee, _, called_from = rest.partition(" called from ")
                path, call_line = called_from.rsplit(":", 1)
                origin = origins.setdefault(callee, len(origins))
                spans = " ".join(f"{int(a, 16):x} {int(b, 16) - int(a, 16):x}" for a, b in ranges)
                inlines.append(f"INLINE {depth} {call_line} {file_id(path)} {origin} {spans}")
                i += 1
        if end == start:
            body.append(f"PUBLIC {start:x} 0 {name}")
            continue
        body.append(f"FUNC {start:x} {end - start:x} 0 {name}")
        body.extend(inlines)
        for n, (addr, file, line) in enumerate(rows):
            nxt = rows[n + 1][0] if n + 1 < len(rows) else end
            body.append(f"{addr:x} {nxt - addr:x} {line} {file}")
    head = [f"MODULE Linux x86_64 {'0' * 33} prog", f"INFO CODE_ID {build_id.upper()}"]
    head += [f"FILE {n} {path}" for path, n in files.items()]
    head += [f"INLINE_ORIGIN {n} {name}" for name, n in origins.items()]
    return "\n".join(head + body) + "\n"


@pytest.mark.parametrize(
    ("name", "compiler", "sources", "flags"),
    [
        ("c-O2", "gcc", ["gsym_inline.c", "gsym_inline_b.c"], ("-g", "-O2")),
        ("cpp-O2", "g++", ["gsym_cpp.cpp"], ("-g", "-O2")),
    ],
)
def test_breakpad_conversion_looks_up_like_llvm(
    name: str, compiler: str, sources: list[str], flags: tuple[str, ...], tmp_path: Path
) -> None:
    binary = compile_program(f"gsym-bp-{name}", sources, compiler=compiler, flags=flags)
    llvm_gsym = tmp_path / "llvm.gsym"
    subprocess.run(
        [require_tool(GSYMUTIL), "--convert", str(binary), "--num-threads=1", "-o", str(llvm_gsym)],
        capture_output=True,
        check=True,
    )
    dump = subprocess.run(
        [require_tool(GSYMUTIL), str(llvm_gsym)], capture_output=True, text=True, check=True
    ).stdout
    with GsymReader.open(llvm_gsym) as reader:
        build_id = reader.uuid.hex()
        spans = [
            (reader.address(i), reader.function_info(i).size) for i in range(reader.num_addresses)
        ]
    sym = tmp_path / "prog.sym"
    sym.write_text(sym_from_llvm_dump(dump, build_id))
    ours = tmp_path / "ours.gsym"
    result = convert_file(str(sym), str(ours))
    assert result.dwarf_functions > 3
    addresses = sorted({a for start, size in spans for a in range(start, start + max(size, 4))})
    assert llvm_lookups(ours, addresses) == llvm_lookups(llvm_gsym, addresses)
    with GsymReader.open(ours) as reader:
        assert reader.uuid.hex() == build_id
