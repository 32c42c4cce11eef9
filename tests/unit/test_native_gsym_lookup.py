"""The compiled warm lookup against its pure-Python reference.

`stackmark._native._gsym_lookup` answers `GsymSource.gsym_frames` (the
frames of a GSYM cache entry at an address) in C. It must give the
reference's frames, or leave the address to the reference, which then
answers or gives up on the damaged entry as always: these tests look up
every address of programs compiled here, random addresses, and addresses
in entries whose extras were damaged byte by byte, with both.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

import stackmark.formats.gsym.extras as extras_module
from stackmark._native import forced_pure
from stackmark.elf import SHF_EXECINSTR, ElfFile
from stackmark.symbols import gsym_source
from stackmark.symbols.cache import CacheEntry, GsymCache
from stackmark.symbols.gsym_source import GsymSource
from stackmark.symbols.source import ModuleFiles
from tests.support.build import build_id_of, compile_program
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

PROGRAMS = {
    "c-inline": (["gsym_inline.c", "gsym_inline_b.c"], "gcc", ("-g", "-O2")),
    "cpp-O2": (["gsym_cpp.cpp"], "g++", ("-g", "-O2")),
    "cpp-O0": (["gsym_cpp.cpp"], "g++", ("-g", "-O0")),
    "templates": (["sym_templates.cpp"], "g++", ("-g", "-O2")),
}


def program(name: str) -> Path:
    sources, compiler, flags = PROGRAMS[name]
    return compile_program(f"native-gsym-{name}", sources, compiler=compiler, flags=flags)


def cache_entry(binary: Path, root: Path) -> tuple[ModuleFiles, CacheEntry]:
    files = ModuleFiles(build_id_of(binary), str(binary))
    return files, GsymCache(root).get_or_build(files.build_id, str(binary))


def code_addresses(binary: Path) -> list[int]:
    """Every address of the executable sections, and one past each."""
    with ElfFile.open(binary) as elf:
        ranges = [(s.addr, s.addr + s.size) for s in elf.sections if s.flags & SHF_EXECINSTR]
    return [a for low, high in ranges for a in range(low, high + 1)]


def answers(source: GsymSource, addresses: list[int]) -> list[Any]:
    """What `gsym_frames` gives at each address (frames as tuples), and whether the
    source has given up on its extras by then."""
    out: list[Any] = []
    for address in addresses:
        try:
            found = source.gsym_frames(address)
        except Exception as exc:  # the comparison is the point: any error must match
            out.append(("error", type(exc), str(exc)))
            continue
        frames = (
            None
            if found is None
            else [(f.linkage_name, f.name, f.file, f.line, f.column) for f in found]
        )
        out.append((frames, source.extras_damaged))
    return out


def both(entry: CacheEntry, files: ModuleFiles, addresses: list[int]) -> tuple[Any, Any]:
    """(compiled, reference) answers, each from a source of its own (their caches
    would otherwise answer for each other)."""
    compiled_source = GsymSource(str(entry.gsym), str(entry.extras), files)
    try:
        compiled = answers(compiled_source, addresses)
    finally:
        compiled_source.close()
    reference_source = GsymSource(str(entry.gsym), str(entry.extras), files)
    try:
        with pure_python():
            reference = answers(reference_source, addresses)
    finally:
        reference_source.close()
    return compiled, reference


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_code_address_of_compiled_programs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = program(name)
    files, entry = cache_entry(binary, tmp_path)
    addresses = code_addresses(binary)
    answered: list[bool] = []  # per call: did the kernel answer (not None)?
    real = gsym_source._native
    assert real is not None

    class Counting:
        def __init__(self, *tables: Any) -> None:
            self.index = real.ExtrasIndex(*tables)

        def frames(self, *args: Any) -> Any:
            found = self.index.frames(*args)
            answered.append(found is not None)
            return found

        def release(self) -> None:
            self.index.release()

    monkeypatch.setattr(gsym_source, "_native", type("K", (), {"ExtrasIndex": Counting}))
    compiled, reference = both(entry, files, addresses)
    assert compiled == reference
    assert any(frames for frames, _ in compiled), "no frames at all: nothing compared"
    # Intact entries never need the reference.
    assert answered and all(answered)


def test_random_addresses(tmp_path: Path) -> None:
    binary = program("cpp-O2")
    files, entry = cache_entry(binary, tmp_path)
    rng = random.Random(18)
    addresses = [rng.getrandbits(64) for _ in range(2000)]
    addresses += [rng.randrange(0, 0x10000) for _ in range(2000)]
    addresses += [0, 2**64 - 1]
    compiled, reference = both(entry, files, addresses)
    assert compiled == reference


@pytest.mark.parametrize("seed", range(12))
def test_damaged_extras(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes of the extras' tables and strings changed (and their checksum not
    checked): the kernel answers as the reference does, or leaves it the address."""
    binary = program("c-inline" if seed % 2 else "cpp-O2")
    files, entry = cache_entry(binary, tmp_path / "cache")
    gsym = tmp_path / "damaged.gsym"
    extras = tmp_path / "damaged.extras"
    shutil.copyfile(entry.gsym, gsym)
    data = bytearray(entry.extras.read_bytes())
    rng = random.Random(seed)
    header = extras_module.HEADER_SIZE
    for _ in range(1 + seed):
        at = rng.randrange(header, len(data))
        data[at] = rng.choice((0, 0xFF, rng.getrandbits(8)))
    extras.write_bytes(bytes(data))
    monkeypatch.setattr(extras_module, "_check_body", lambda *args: None)
    damaged = CacheEntry(gsym, extras)
    addresses = code_addresses(binary)
    compiled, reference = both(damaged, files, addresses)
    assert compiled == reference


def test_released_index_leaves_lookups_to_the_reference(tmp_path: Path) -> None:
    binary = program("c-inline")
    files, entry = cache_entry(binary, tmp_path)
    source = GsymSource(str(entry.gsym), str(entry.extras), files)
    try:
        index = source._index
        assert index is not None
        index.release()
        address = next(a for a in code_addresses(binary) if source.gsym_frames(a))
        args = ({}, {}, source._path, {}, 4096, tuple)
        assert index.frames(address, *args) is None
    finally:
        source.close()


def test_a_frame_type_without_those_slots_is_called(tmp_path: Path) -> None:
    """The kernel fills SourceFrame's slots directly; any other frame type is called."""
    binary = program("c-inline")
    files, entry = cache_entry(binary, tmp_path)
    source = GsymSource(str(entry.gsym), str(entry.extras), files)
    try:
        index = source._index
        assert index is not None
        for address in code_addresses(binary)[::7]:
            frames = source.gsym_frames(address)
            made = index.frames(address, {0: None}, {}, source._path, {}, 4096, lambda *a: a)
            if frames is None:
                assert made in (None, False)
                continue
            assert made == [(f.linkage_name, f.name, f.file, f.line, f.column) for f in frames]
    finally:
        source.close()
