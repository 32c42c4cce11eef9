"""The DWARF reader asks its caller for split DWARF files (`SplitDwarfLoad`).

The .dwo files are moved where none of llvm's places (the skeleton's
DW_AT_comp_dir, beside the binary) has them: the default finder then finds
nothing, and a caller that knows where they are gives them, and the reader
reads from them what it read where they were built.
"""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path

from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.split_files import SplitDwarfFinder
from stackmark.elf import ElfFile
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

    def package(self, referrer: str) -> ElfFile | None:
        self.packages.append(referrer)
        return None

    def dwo_files(self, name: str, comp_dir: str | None, referrer: str) -> Iterator[ElfFile]:
        self.names.append(name)
        path = self.directory / Path(name).name
        if path.is_file():
            yield ElfFile.open(path)


def test_a_dwo_file_is_read_from_where_the_caller_says(tmp_path: Path) -> None:
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, "-g", "-O2", directory=tmp_path / "b")
    where_built = function_names(DwarfReader.open(binary))
    assert len(where_built) > 3
    moved = tmp_path / "moved"
    moved.mkdir()
    for dwo in (tmp_path / "b").glob("*.dwo"):
        shutil.move(dwo, moved / dwo.name)

    assert function_names(DwarfReader.open(binary)) != where_built  # llvm's places: none

    load = MovedDwoFiles(moved)
    reader = DwarfReader(ElfFile.open(binary), load_split=load)
    assert function_names(reader) == where_built
    assert load.packages == [str(binary)]  # a package is asked for first, once
    assert load.names and all(name.endswith(".dwo") for name in load.names)


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
