"""The lean ELF reader against binutils' readelf/objcopy on compiled programs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from stackmark.elf import PT_LOAD, SHT_NOBITS, ElfFile
from stackmark.errors import FormatError
from tests.support.build import build_id_of, compile_program, run


@pytest.fixture(scope="module")
def program() -> Path:
    return compile_program("elf_basic", ["elf_basic.c"], flags=["-g", "-O1"])


@pytest.fixture(scope="module")
def compressed() -> Path:
    return compile_program("elf_basic_gz", ["elf_basic.c"], flags=["-g", "-O1", "-gz"])


def test_build_id_matches_readelf(program: Path) -> None:
    assert ElfFile.open(program).build_id == build_id_of(program)


def test_sections_match_readelf(program: Path) -> None:
    text = run(["readelf", "-SW", program])
    expected = re.findall(
        r"\[\s*[1-9]\d*\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", text
    )
    elf = ElfFile.open(program)
    ours = [(s.name, s.addr, s.offset, s.size) for s in elf.sections[1:]]
    assert ours == [(n, int(a, 16), int(o, 16), int(s, 16)) for n, a, o, s in expected]


def test_load_segments_match_readelf(program: Path) -> None:
    text = run(["readelf", "-lW", program])
    expected = [
        tuple(int(x, 16) for x in m)
        for m in re.findall(
            r"LOAD\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x[0-9a-f]+ 0x([0-9a-f]+) 0x([0-9a-f]+)", text
        )
    ]
    ours = [
        (s.offset, s.vaddr, s.filesz, s.memsz)
        for s in ElfFile.open(program).segments
        if s.type == PT_LOAD
    ]
    assert ours == expected


def test_symbols_match_nm(program: Path) -> None:
    nm = run(["nm", "--defined-only", program])
    expected = {line.split()[2]: int(line.split()[0], 16) for line in nm.splitlines()}
    ours = {s.name: s.value for s in ElfFile.open(program).symbols() if s.is_defined and s.name}
    for name in ("main", "add", "g_counter", "t_local", "g_banner"):
        assert ours[name] == expected[name]


def test_compressed_debug_sections_inflate_like_objcopy(compressed: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    run(["objcopy", "--decompress-debug-sections", compressed, plain])
    packed, unpacked = ElfFile.open(compressed), ElfFile.open(plain)
    assert packed.section(".debug_info") is not None
    assert packed.section(".debug_info").is_compressed  # type: ignore[union-attr]
    for name in (".debug_info", ".debug_line", ".debug_abbrev"):
        assert packed.section_data(name) == unpacked.section_data(name)
        assert packed.section_data(name)


def test_debuglink_matches_objcopy(program: Path, tmp_path: Path) -> None:
    debug, stripped = tmp_path / "prog.debug", tmp_path / "prog"
    run(["objcopy", "--only-keep-debug", program, debug])
    run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", program, stripped])
    link = ElfFile.open(stripped).debuglink
    assert link is not None and link[0] == "prog.debug"
    import zlib

    assert link[1] == zlib.crc32(debug.read_bytes())
    # the debug file keeps the build ID, and its code sections are NOBITS
    kept = ElfFile.open(debug)
    assert kept.build_id == build_id_of(program)
    assert kept.section(".text").type == SHT_NOBITS  # type: ignore[union-attr]


def test_read_vaddr_reads_rodata(program: Path) -> None:
    elf = ElfFile.open(program)
    banner = next(s for s in elf.symbols() if s.name == "g_banner")
    assert elf.read_vaddr(banner.value, banner.size) == b"elf basic\0"


@pytest.mark.parametrize("cut", [0, 3, 17, 63, 200, 1000])
def test_truncated_file_is_a_format_error(program: Path, tmp_path: Path, cut: int) -> None:
    bad = tmp_path / "truncated"
    bad.write_bytes(program.read_bytes()[:cut])
    try:
        elf = ElfFile.open(bad)
        _ = (elf.sections, elf.segments, elf.build_id, elf.symbols())
    except FormatError as exc:
        assert str(bad) in str(exc)
    else:  # pragma: no cover - a truncated file must not parse cleanly
        pytest.fail("truncated file parsed without error")


def test_unreadable_path_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read"):
        ElfFile.open(tmp_path / "missing")


def test_not_elf(tmp_path: Path) -> None:
    path = tmp_path / "text"
    path.write_text("hello")
    with pytest.raises(FormatError, match="not an ELF file"):
        ElfFile.open(path)


def test_python_sees_the_same_build_id_as_file(program: Path) -> None:
    out = subprocess.run(["file", "-L", str(program)], capture_output=True, text=True).stdout
    if "BuildID" in out:
        assert ElfFile.open(program).build_id in out
