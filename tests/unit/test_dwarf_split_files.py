"""The DWARF reader asks its caller for split DWARF files (`SplitDwarfLoad`).

Given no loader, it reads no .dwo or .dwp file, even one where llvm looks.
Given one, it asks it with what the skeleton says. The .dwo files are moved
where none of llvm's places (the skeleton's DW_AT_comp_dir, beside the
binary) has them: `SplitDwarfFinder` then finds nothing, and a caller that
knows where they are gives them, and the reader reads from them what it
read where they were built.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.split_files import SplitDwarfFinder
from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support import sym_builds


def function_names(reader: DwarfReader) -> list[str | None]:
    return [function.name for unit in reader.units() for function in unit.functions()]


class MovedDwoFiles:
    """A `SplitDwarfLoad` that knows the .dwo files are in `directory`; records what
    it was asked."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.packages: list[str] = []
        self.names: list[str] = []
        self.asked: list[tuple[str, str | None, str]] = []

    def package(self, referrer: str) -> ElfFile | None:
        self.packages.append(referrer)
        return None

    def dwo_files(self, name: str, comp_dir: str | None, referrer: str) -> Iterator[ElfFile]:
        self.names.append(name)
        self.asked.append((name, comp_dir, referrer))
        path = self.directory / Path(name).name
        if path.is_file():
            yield ElfFile.open(path)


def test_a_dwo_file_is_read_from_where_the_caller_says(tmp_path: Path) -> None:
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, "-g", "-O2", directory=tmp_path / "b")
    where_built = function_names(DwarfReader.open(binary, load_split=SplitDwarfFinder()))
    assert len(where_built) > 3
    moved = tmp_path / "moved"
    moved.mkdir()
    for dwo in (tmp_path / "b").glob("*.dwo"):
        shutil.move(dwo, moved / dwo.name)

    llvms_places = DwarfReader.open(binary, load_split=SplitDwarfFinder())
    assert function_names(llvms_places) != where_built  # llvm's places: none

    load = MovedDwoFiles(moved)
    reader = DwarfReader(ElfFile.open(binary), load_split=load)
    assert function_names(reader) == where_built
    assert load.packages == [str(binary)]  # a package is asked for first, once
    assert load.names and all(name.endswith(".dwo") for name in load.names)


def test_without_a_loader_no_split_file_is_read_even_where_llvm_looks(tmp_path: Path) -> None:
    """The .dwo file is where the skeleton names it, and a package FILE.dwp beside
    the binary: a reader given no `load_split` reads neither, and answers from the
    skeleton alone (its line table), as when no file is found."""
    flags = ("-g", "-gdwarf-4", "-O2")  # binutils' dwp packs DWARF 4 (llvm-dwp-19 hangs here)
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, *flags, directory=tmp_path)
    package = f"{binary.name}.dwp"
    subprocess.run(
        [require_tool("dwp"), "-e", binary.name, "-o", package], cwd=tmp_path, check=True
    )
    skeletons = list(DwarfReader.open(binary).units())
    assert skeletons and all(unit.is_skeleton for unit in skeletons)
    for unit in skeletons:
        assert unit.dwo_name and (tmp_path / unit.dwo_name).is_file()
        assert unit.split_unit is None
        assert unit.code_unit is unit
        assert not unit.functions()
        table = unit.line_table()
        assert table is not None and table.rows

    found = DwarfReader.open(binary, load_split=SplitDwarfFinder())
    splits = [unit.split_unit for unit in found.units()]
    assert splits and all(
        split is not None and split.reader.name == str(tmp_path / package) for split in splits
    )
    assert len(function_names(found)) > 3


def test_the_loader_is_asked_with_the_skeletons_dwo_name_and_comp_dir(tmp_path: Path) -> None:
    build = tmp_path / "build"
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, "-g", "-O2", directory=build)
    (dwo,) = build.glob("*.dwo")  # gcc names it after the output and the source
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(dwo, moved / dwo.name)
    load = MovedDwoFiles(moved)

    assert function_names(DwarfReader.open(binary, load_split=load))
    assert load.packages == [str(binary)]
    assert load.asked == [(dwo.name, str(build), str(binary))]


def test_a_finder_pickles_as_a_fresh_one_that_looks_in_the_same_places(tmp_path: Path) -> None:
    """The GSYM converter's worker processes get the caller's finder pickled: the
    files it opened stay behind, and the copy finds them again."""
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, "-g", "-O2", directory=tmp_path)
    finder = SplitDwarfFinder()
    reader = DwarfReader(ElfFile.open(binary), load_split=finder)
    names = function_names(reader)
    assert finder._opened  # it keeps the .dwo files it opened, which do not pickle

    copy = pickle.loads(pickle.dumps(finder))
    assert isinstance(copy, SplitDwarfFinder) and not copy._opened
    assert function_names(DwarfReader(ElfFile.open(binary), load_split=copy)) == names
