"""SFrame reader and writer on the committed fixtures (gas/ld 2.40, 2.44, 2.47
output for x86-64 and AArch64) and on malformed input."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.model import SFrameSection
from stackmark.formats.sframe.reader import parse_sframe, read_elf_sframe, read_sframe_file
from stackmark.formats.sframe.writer import (
    SFrameEncodeError,
    build_fde,
    build_fre,
    encode_sframe,
    new_header,
    with_version,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sframe"
BINARIES = sorted(p for p in FIXTURES.iterdir() if p.is_file() and "." not in p.name)


def _raw(path: Path) -> tuple[SFrameSection, bytes]:
    with ElfFile.open(path) as elf:
        section = read_elf_sframe(elf)
        assert section is not None
        return section, elf.section_data(".sframe")


def _rows(
    section: SFrameSection,
) -> list[tuple[int, int, int, list[tuple[int, int, tuple[int, ...]]]]]:
    return [
        (f.start, f.size, f.info & 0x7F, [(r.start, r.info, r.words) for r in f.fres])
        for f in section.fdes
    ]


def test_fixtures_are_present() -> None:
    names = {p.name for p in BINARIES}
    for prog, arch in (
        ("deep", "x86_64"),
        ("edge", "x86_64"),
        ("deep", "aarch64"),
        ("a64", "aarch64"),
    ):
        for version in (1, 2, 3):
            assert f"{prog}-{arch}-v{version}" in names


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_header_matches_what_the_producer_wrote(path: Path) -> None:
    section, raw = _raw(path)
    version = int(path.name[-1])
    header = section.header
    assert header.version == version
    assert header.section_size == len(raw)
    assert header.num_fdes == len(section.fdes)
    assert header.num_fres == section.num_fres
    assert header.is_sorted
    # ld 2.45+ (here 2.47) sets FUNC_START_PCREL; 2.40 and 2.44 do not.
    assert header.start_is_pcrel == (version == 3)
    assert header.abi_arch is (
        spec.AbiArch.AMD64_LITTLE if "x86_64" in path.name else spec.AbiArch.AARCH64_LITTLE
    )
    assert header.cfa_fixed_ra_offset == (-8 if "x86_64" in path.name else 0)


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_functions_agree_with_the_symbol_table(path: Path) -> None:
    """Every FDE of code from our sources starts at its function symbol with its size."""
    section, _ = _raw(path)
    with ElfFile.open(path) as elf:
        symbols = {s.name: s for s in elf.symbols() if s.type == 2 and s.size}
    by_start = {f.start: f for f in section.fdes}
    for name in ("leaf", "main"):
        if name in symbols:
            fde = by_start[symbols[name].value]
            assert fde.size == symbols[name].size


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_written_back_byte_for_byte(path: Path) -> None:
    section, raw = _raw(path)
    assert encode_sframe(section) == raw


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
@pytest.mark.parametrize("version", [1, 2, 3])
def test_converted_between_versions(path: Path, version: int) -> None:
    section, _ = _raw(path)
    if version < 3 and any(f.is_flex for f in section.fdes):
        with pytest.raises(SFrameEncodeError, match="flex"):
            encode_sframe(with_version(section, version))
        return
    data = encode_sframe(with_version(section, version))
    back = parse_sframe(data, section.address)
    assert back.version == version
    assert _rows(back) == _rows(section)
    if version >= 2:
        assert [f.rep_size for f in back.fdes] == [
            f.rep_size for f in with_version(section, version).fdes
        ]


@pytest.mark.parametrize("endian_abi", [spec.AbiArch.AARCH64_BIG, spec.AbiArch.S390X_BIG])
def test_big_endian_round_trip(endian_abi: spec.AbiArch) -> None:
    section, _ = _raw(FIXTURES / "a64-aarch64-v3")
    big = SFrameSection(
        dataclasses.replace(section.header, abi_arch=endian_abi), section.fdes, section.address
    )
    data = encode_sframe(big)
    assert data[:2] == b"\xde\xe2"
    back = parse_sframe(data, section.address)
    assert back.header.endian == ">"
    assert _rows(back) == _rows(section)


def test_pcrel_and_section_relative_starts() -> None:
    """The same functions, written with and without FUNC_START_PCREL, read the same."""
    fres = [build_fre(0, cfa_base_sp=True, words=[8])]
    fdes = [build_fde(0x401000 + 0x40 * i, 0x20, fres) for i in range(3)]
    for version, pcrel in ((2, False), (2, True), (3, True)):
        header = new_header(spec.AbiArch.AMD64_LITTLE, version=version, pcrel=pcrel)
        data = encode_sframe(SFrameSection(header, fdes, 0x402000))
        raw_first = struct.unpack_from("<i", data, 28)[0]
        assert raw_first == (0x401000 - 0x402000 - (28 if pcrel else 0))
        back = parse_sframe(data, 0x402000)
        assert [f.start for f in back.fdes] == [0x401000, 0x401040, 0x401080]


def test_fre_encodings_grow_with_the_values() -> None:
    """ADDR1/2/4 starts and 1/2/4-byte words are chosen by size and read back."""
    fres = [
        build_fre(0, cfa_base_sp=True, words=[8]),
        build_fre(0x80, cfa_base_sp=True, words=[200, -16]),
        build_fre(0x1_0000, cfa_base_sp=False, words=[70000, -70000]),
    ]
    assert [f.word_size for f in fres] == [1, 2, 4]
    fde = build_fde(0x1000, 0x2_0000, fres)
    assert fde.fre_type == spec.FRE_TYPE_ADDR4
    assert build_fde(0x1000, 0x300, fres[:2]).fre_type == spec.FRE_TYPE_ADDR2
    assert build_fde(0x1000, 0x30, fres[:1]).fre_type == spec.FRE_TYPE_ADDR1
    header = new_header(spec.AbiArch.AMD64_LITTLE)
    back = parse_sframe(encode_sframe(SFrameSection(header, [fde], 0)), 0)
    assert [(r.start, r.words, r.cfa_base_is_sp) for r in back.fdes[0].fres] == [
        (0, (8,), True),
        (0x80, (200, -16), True),
        (0x1_0000, (70000, -70000), False),
    ]


def test_auxiliary_header_is_skipped() -> None:
    section, _ = _raw(FIXTURES / "deep-x86_64-v2")
    data = bytearray(encode_sframe(section))
    aux = b"\xaa" * 6
    data[7] = len(aux)
    data[28:28] = aux
    back = parse_sframe(bytes(data), section.address + 0)
    assert back.header.auxhdr_len == 6
    assert _rows(back) == _rows(section)


def test_no_sframe_section_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"no \.sframe section"):
        read_sframe_file(Path("/bin/true"))


@pytest.mark.parametrize(
    ("data", "message", "offset"),
    [
        (b"", "too short", 0),
        (b"\x12\x34" + bytes(26), "not SFrame data", 0),
        (b"\xe2\xde\x09\x00" + bytes(24), "unsupported SFrame version 9", 2),
        (b"\xe2\xde\x02\x00\x07" + bytes(23), "unknown abi_arch 7", 4),
        (b"\xe2\xde\x02\x00\x03", "too short for the 28-byte", 0),
    ],
)
def test_malformed_headers(data: bytes, message: str, offset: int) -> None:
    with pytest.raises(FormatError, match=message) as info:
        parse_sframe(data)
    assert info.value.offset == offset


def test_counts_that_run_past_the_end_name_the_offset() -> None:
    section, _ = _raw(FIXTURES / "deep-x86_64-v3")
    data = bytearray(encode_sframe(section))
    struct.pack_into("<I", data, 8, 10_000)  # num_fdes
    with pytest.raises(FormatError, match="10000 FDEs") as info:
        parse_sframe(bytes(data))
    assert info.value.offset == 8


def test_elf_errors_carry_the_file_offset(tmp_path: Path) -> None:
    source = FIXTURES / "deep-x86_64-v1"
    image = bytearray(source.read_bytes())
    with ElfFile.open(source) as elf:
        sframe = elf.section(".sframe")
        assert sframe is not None
    image[sframe.offset + 2] = 7  # version
    broken = tmp_path / "broken"
    broken.write_bytes(bytes(image))
    with pytest.raises(FormatError) as info:
        read_sframe_file(broken)
    assert info.value.offset == sframe.offset + 2
    assert str(broken) in str(info.value)
    assert "unsupported SFrame version 7" in str(info.value)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_sections_raise_only_format_errors(data: st.DataObject) -> None:
    """Truncations and byte flips of real sections never escape as other exceptions."""
    path = data.draw(st.sampled_from(BINARIES))
    _, raw = _raw(path)
    blob = bytearray(raw)
    cut = data.draw(st.integers(0, len(blob)))
    flips = data.draw(
        st.lists(st.tuples(st.integers(0, len(blob) - 1), st.integers(0, 255)), max_size=4)
    )
    for at, value in flips:
        blob[at] = value
    try:
        parse_sframe(bytes(blob[:cut]))
    except FormatError as exc:
        assert exc.offset is None or 0 <= exc.offset <= len(blob)


def test_without_section_headers_the_segment_is_used(tmp_path: Path) -> None:
    """llvm-objcopy --strip-sections leaves only PT_GNU_SFRAME, whose p_memsz ld
    makes larger than the section: the header gives the size."""
    import subprocess

    from tests.conftest import require_tool

    tool = require_tool("llvm-objcopy-19")
    source = FIXTURES / "deep-x86_64-v1"
    stripped = tmp_path / "stripped"
    subprocess.run([tool, "--strip-sections", str(source), str(stripped)], check=True)
    with ElfFile.open(stripped) as elf:
        assert elf.sections == []
        from_segment = read_elf_sframe(elf)
    assert from_segment is not None
    assert _rows(from_segment) == _rows(read_sframe_file(source))


def test_separate_debug_file_has_no_sframe_data(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import require_tool

    objcopy = require_tool("objcopy")
    debug = tmp_path / "deep.debug"
    subprocess.run(
        [objcopy, "--only-keep-debug", str(FIXTURES / "deep-x86_64-v1"), str(debug)], check=True
    )
    with ElfFile.open(debug) as elf:
        assert read_elf_sframe(elf) is None


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_lazy_reading_gives_the_same_section(path: Path) -> None:
    with ElfFile.open(path) as elf:
        eager = read_elf_sframe(elf)
        lazy = read_elf_sframe(elf, lazy=True)
    assert eager is not None and lazy is not None
    assert _rows(lazy) == _rows(eager)
    assert encode_sframe(lazy) == encode_sframe(eager)


def test_lazy_reading_reports_damage_when_the_function_is_used(tmp_path: Path) -> None:
    section, raw = _raw(FIXTURES / "deep-x86_64-v2")
    blob = bytearray(raw)
    last = max(section.fdes, key=lambda f: f.fre_offset)
    struct.pack_into("<I", blob, 28 + 20 * last.index + 12, 10_000)  # its num_fres
    lazy = parse_sframe(bytes(blob), section.address, lazy=True)  # header and FDEs are fine
    with pytest.raises(FormatError, match="runs past the end of the FRE sub-section"):
        list(lazy.fdes[last.index].fres)
    with pytest.raises(FormatError):
        parse_sframe(bytes(blob), section.address)
