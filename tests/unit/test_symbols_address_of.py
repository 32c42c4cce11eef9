"""`Symbolizer.address_of`: a function's module-relative address by its linkage name,
from whatever answers for the module: the ELF symbol table, a GSYM cache entry, or a
user's GSYM file (llvm-gsymutil-19's or stackmark's) with no ELF file to be found.
nm gives the expected addresses."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from stackmark.model import Module
from stackmark.symbols.cache import GsymCache
from stackmark.symbols.gsym_files import FOUND_AS
from stackmark.symbols.gsym_source import GsymSource, gsym_source_factory
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions
from tests.support.build import build_id_of, compile_program
from tests.support.gsymutil import llvm_convert

# tests/fixtures/src/symbol_names.cpp: methods in a namespace, file-local functions
# (static, and in an anonymous namespace: GCC gives them no linkage name in DWARF, so
# a GSYM file names them `helper` and `hidden`), an extern "C" one, a template
# instance, main.
UNKNOWN = "_Z7nowherev"


@pytest.fixture(scope="module")
def program() -> Path:
    return compile_program("symbol-names", ["symbol_names.cpp"], compiler="g++")


def nm_functions(binary: Path) -> dict[str, int]:
    """Every function (STT_FUNC) nm lists, local or global, alone at its address: the
    symbol table keeps one name per address, as llvm does."""
    listed = subprocess.run(
        ["nm", "--format=sysv", "--defined-only", binary],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, int] = {}
    per_address: dict[int, int] = {}
    for line in listed.splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) == 7 and fields[3] == "FUNC":
            address = int(fields[1], 16)
            found[fields[0]] = address
            per_address[address] = per_address.get(address, 0) + 1
    functions = {name: a for name, a in found.items() if per_address[a] == 1}
    for wanted in (
        "_ZNK6shapes3Box4areaEv",
        "_ZN6shapes3Box5twiceEi",
        "_ZL6helperi",
        "_ZN12_GLOBAL__N_16hiddenEi",
    ):
        assert wanted in functions, f"nm does not list {wanted}"
    assert {"plain", "main", "_Z7largestIiET_S0_S0_"} <= functions.keys()
    return functions


def answers(symbolizer: Symbolizer, module: Module, names: list[str]) -> dict[str, int | None]:
    return {name: symbolizer.address_of(module, name) for name in names}


def test_an_elf_module_answers_from_its_symbol_table(program: Path) -> None:
    expected = nm_functions(program)
    module = Module(0, program.name, build_id_of(program))
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[], objects=[str(program)]))
    assert answers(symbolizer, module, sorted(expected)) == expected
    assert symbolizer.address_of(module, UNKNOWN) is None
    # A module no file answers for has no addresses.
    assert symbolizer.address_of(Module(1, "gone", "ab" * 20), "main") is None


def test_a_gsym_cache_entry_answers_as_the_symbol_table(program: Path, tmp_path: Path) -> None:
    expected = nm_functions(program)
    module = Module(0, program.name, build_id_of(program))
    symbolizer = Symbolizer(
        SymbolizerOptions(
            debug_file_directories=[],
            objects=[str(program)],
            source_factories=[gsym_source_factory(GsymCache(tmp_path / "cache"))],
        )
    )
    assert isinstance(symbolizer.source(module), GsymSource)
    assert answers(symbolizer, module, sorted(expected)) == expected
    assert symbolizer.address_of(module, UNKNOWN) is None


@pytest.mark.parametrize("made_by", ["llvm-gsymutil-19", "stackmark's GSYM cache"])
def test_a_module_answered_by_a_gsym_file_alone(
    program: Path, tmp_path: Path, made_by: str
) -> None:
    """No ELF file of the program is anywhere the symbolizer looks: only the GSYM file,
    found by its UUID in a GSYM directory, names the functions."""
    build_id = build_id_of(program)
    gsym = tmp_path / "gsyms" / "symbol-names.gsym"
    if made_by == "llvm-gsymutil-19":
        llvm_convert(program, gsym)
    else:
        entry = GsymCache(tmp_path / "cache").get_or_build(build_id, str(program))
        gsym.parent.mkdir()
        shutil.copyfile(entry.gsym, gsym)
    expected = nm_functions(program)
    module = Module(0, "not-on-disk", build_id)
    symbolizer = Symbolizer(
        SymbolizerOptions(debug_file_directories=[], gsym_paths=[str(gsym.parent)])
    )
    resolution = symbolizer.resolve(module)
    assert resolution.binary == str(gsym)
    assert symbolizer.store.find(build_id, None, None).files is None  # no ELF file found
    source = symbolizer.source(module)
    assert source is not None and source.description == f"{FOUND_AS} {gsym}"
    assert answers(symbolizer, module, sorted(expected)) == expected
    assert symbolizer.address_of(module, UNKNOWN) is None
    assert symbolizer.address_of(module, "") is None
