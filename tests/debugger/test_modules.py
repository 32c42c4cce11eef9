"""The process layout from loaded images (stackmark.debugger.modules).

A compiled PIE and shared library are "mapped" at made-up addresses by a
memory reader over their file bytes; readelf is the oracle for segments and
build IDs.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from stackmark.debugger.backend import LoadedImage
from stackmark.debugger.modules import module_for_address, module_from_image
from stackmark.unwind.target import UnreadableMemory
from tests.conftest import require_tool
from tests.support.build import build_id_of, compile_program, run

BASE = 0x5555_5555_4000


def readelf_loads(path: Path) -> list[tuple[int, int, str]]:
    """(vaddr, memsz, mode) of each PT_LOAD, from readelf -lW."""
    loads = []
    for line in run([require_tool("readelf"), "-lW", path]).splitlines():
        fields = line.split()
        if fields and fields[0] == "LOAD":
            flags = re.findall(r"[RWE]", " ".join(fields[6:-1]))
            mode = "".join(c for c, f in (("r", "R"), ("w", "W"), ("x", "E")) if f in flags)
            loads.append((int(fields[2], 16), int(fields[5], 16), mode))
    return loads


def file_reader(path: Path, base: int):  # type: ignore[no-untyped-def]
    """read_memory over the file's first page mapped at `base`, the rest by vaddr."""
    data = path.read_bytes()

    def read(address: int, size: int) -> bytes:
        offset = address - base  # for these files vaddr == file offset where it matters
        if offset < 0 or offset + size > len(data):
            raise UnreadableMemory(address, size)
        return data[offset : offset + size]

    return read


@pytest.fixture(scope="module")
def pie() -> Path:
    return compile_program("modules_pie", ["dbg_lib.c"], flags=["-g", "-O1"], shared=True)


def test_layout_and_build_id_read_from_memory(pie: Path) -> None:
    module = module_from_image(file_reader(pie, BASE), LoadedImage(str(pie), BASE), 3)
    assert module.id == 3
    assert module.name == pie.name
    assert module.build_id == build_id_of(pie)
    assert module.load_bias == BASE
    segments = module.segments
    for vaddr, size, mode in readelf_loads(pie):  # each PT_LOAD lies in a segment of its mode
        holder = [s for s in segments if s.start <= BASE + vaddr and BASE + vaddr + size <= s.end]
        assert [(s.mode, s.to_module_relative(BASE + vaddr)) for s in holder] == [(mode, vaddr)]
    for segment in segments:  # whole pages, as mapped
        assert segment.start % 4096 == 0 and segment.size % 4096 == 0
    assert all(a.end <= b.start for a, b in itertools.pairwise(segments))
    code = next(s for s in module.segments if "x" in s.mode)
    assert module_for_address([module], code.start + 1) is module
    assert module_for_address([module], BASE - 1) is None


def test_unreadable_memory_falls_back_to_the_file(pie: Path) -> None:
    def unreadable(address: int, size: int) -> bytes:
        raise UnreadableMemory(address, size)

    module = module_from_image(unreadable, LoadedImage(str(pie), BASE), 0)
    assert module.build_id == build_id_of(pie)
    assert module.load_bias == BASE


def test_explicit_bias_and_reported_build_id_when_nothing_is_readable() -> None:
    def unreadable(address: int, size: int) -> bytes:
        raise UnreadableMemory(address, size)

    image = LoadedImage("/nonexistent/lib.so", None, load_bias=0x1000, build_id="abcd")
    module = module_from_image(unreadable, image, 0)
    assert (module.build_id, module.segments, module.name) == ("abcd", [], "lib.so")
