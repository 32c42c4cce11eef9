"""Damaged core files: every problem is a `StackmarkError` naming the file,
never another exception, and unwinding what can still be read never raises."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from stackmark.errors import StackmarkError
from stackmark.unwind.core import CoreFile, CoreTarget
from stackmark.unwind.unwinder import Unwinder
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.unwind_cores import SFRAME_FLAGS, capture_with_gdb


@pytest.fixture(scope="module")
def core_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    require_tool("gdb")
    program = compile_program("unwind_recurse", ["unwind_recurse.c"], flags=SFRAME_FLAGS)
    capture = capture_with_gdb(program, "leaf", tmp_path_factory.mktemp("damage"), args=["3"])
    return capture.core.read_bytes()


def note_and_header_ranges(data: bytes, path: Path) -> list[tuple[int, int]]:
    """Where a mutation hurts most: ELF and program headers, and the notes."""
    path.write_bytes(data)
    with ElfFile.open(path) as elf:
        ranges = [(0, 64 + 56 * len(elf.segments))]
        ranges += [(s.offset, s.offset + s.filesz) for s in elf.segments if s.type == 4]
    return ranges


def test_damaged_cores_fail_cleanly(core_bytes: bytes, tmp_path: Path) -> None:
    rng = random.Random(1234)
    target = tmp_path / "damaged.core"
    ranges = note_and_header_ranges(core_bytes, target)
    outcomes = {"opened": 0, "rejected": 0}
    for _ in range(150):
        data = bytearray(core_bytes)
        start, end = rng.choice(ranges)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(start, end)
            data[position] = rng.choice((0, 0xFF, rng.randrange(256)))
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        target.write_bytes(data)
        try:
            with CoreFile(target) as core:
                for index in range(len(core.threads)):
                    Unwinder(CoreTarget(core, index), max_frames=64).unwind()
            outcomes["opened"] += 1
        except StackmarkError as exc:
            assert str(target) in str(exc) or "at 0x" in str(exc), exc
            outcomes["rejected"] += 1
    assert outcomes["opened"] and outcomes["rejected"], outcomes
