"""The DWARF reader asks its caller for a dwz supplementary file (`SupplementaryLoad`).

`dwz -m` moves names and abstract instances two programs share into one file that
each names in its .gnu_debugaltlink. Here the link names the file at the very path
where it is, yet a reader given no way to find it reads nothing from it: it searches
no directory of its own. Given a finder, it asks with what the link says and reads
the names the program had before dwz.
"""

from __future__ import annotations

from pathlib import Path

from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.supplementary import supplementary_finder
from stackmark.elf import ElfFile
from tests.support.dwz import dwz_compressed


def call_names(reader: DwarfReader) -> list[str | None]:
    """The name of every function and inlined call, in DIE order."""
    return [
        call.name
        for unit in reader.units()
        for function in unit.functions()
        for call in function.walk()
    ]


class Recorded:
    """A `SupplementaryLoad` over `supplementary_finder(())`: records each question."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []
        self._find = supplementary_finder(())

    def __call__(self, name: str, build_id: str, referrer: str) -> ElfFile | None:
        self.asked.append((name, build_id, referrer))
        return self._find(name, build_id, referrer)


def test_a_reader_reads_the_supplementary_file_only_from_its_caller(tmp_path: Path) -> None:
    linked = tmp_path / "common.debug"
    compressed, original, made = dwz_compressed(tmp_path, str(linked))
    assert made == linked and linked.is_file()
    before = call_names(DwarfReader(ElfFile.open(original)))

    alone = DwarfReader(ElfFile.open(compressed))
    assert alone.supplementary is None
    assert call_names(alone) != before, "dwz should have moved some names out"

    finder = Recorded()
    told = DwarfReader(ElfFile.open(compressed), load_supplementary=finder)
    assert call_names(told) == before
    assert told.supplementary is not None and told.supplementary.name == str(linked)
    build_id = ElfFile.open(linked).build_id
    assert finder.asked == [(str(linked), build_id, str(compressed))]
