"""`Symbolizer.declaration_of`: where a module's functions and variables are declared,
from its DWARF, and no answer for a module that only a GSYM file describes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from stackmark.model import Module
from stackmark.symbols.declarations import Declaration
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions
from tests.support.build import build_id_of, compile_program
from tests.support.gsymutil import llvm_convert

# Line numbers, counted by hand: counter is on line 1, helper on line 4, main on line 9.
SOURCE = """int counter = 3;
extern int shared;

static int helper(int x)
{
  return x + counter;
}

int main(void)
{
  return helper(1);
}
"""


def build(tmp_path: Path) -> tuple[Path, Module]:
    source = tmp_path / "decl.c"
    source.write_text(SOURCE)
    binary = compile_program("decl", [source])
    return binary, Module(0, binary.name, build_id_of(binary))


def address_of(binary: Path, name: str) -> int:
    """The symbol's address, as nm prints it."""
    for line in subprocess.run(["nm", binary], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise AssertionError(f"nm does not list {name}")


def declared(place: Declaration | None) -> tuple[str, int] | None:
    """(file name, line): the build that compile_program keeps may come from another
    test's directory, with the same source."""
    return (Path(place.file).name, place.line) if place is not None else None


def test_functions_and_variables_are_found_where_the_source_declares_them(
    tmp_path: Path,
) -> None:
    binary, module = build(tmp_path)
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[], objects=[str(binary)]))
    counter = address_of(binary, "counter")
    assert declared(symbolizer.declaration_of(module, "helper")) == ("decl.c", 4)
    assert declared(symbolizer.declaration_of(module, "main")) == ("decl.c", 9)
    assert declared(symbolizer.declaration_of(module, "counter", counter)) == ("decl.c", 1)
    # Functions and variables are asked apart: no function is named counter.
    assert symbolizer.declaration_of(module, "counter") is None
    assert symbolizer.declaration_of(module, "nowhere") is None


def test_a_module_answered_by_a_gsym_file_has_no_declarations(tmp_path: Path) -> None:
    binary, module = build(tmp_path)
    gsym = llvm_convert(binary, tmp_path / "gsyms" / "decl.gsym")
    symbolizer = Symbolizer(
        SymbolizerOptions(debug_file_directories=[], gsym_paths=[str(gsym.parent)])
    )
    assert symbolizer.resolve(module).binary == str(gsym)  # the GSYM file answers
    assert symbolizer.code(module, address_of(binary, "helper")).frames  # and has lines
    assert symbolizer.declaration_of(module, "helper") is None
