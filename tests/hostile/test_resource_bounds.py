"""Resource bounds: inputs built to exhaust time or memory get bounded work and,
where something is refused, a clear message naming the input and the place.

Front-end cases run `stackmark` in a child process that reports its own peak
RSS; the limits leave room for a loaded machine but fail on the blow-ups they
guard against (each test says what it used to cost). Time is bounded by the
child's timeout, not asserted.
"""

from __future__ import annotations

import struct
import tracemalloc
from itertools import pairwise
from pathlib import Path

import pytest

from stackmark.elf import MAX_DECOMPRESSED_SIZE, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.gsym.reader import GsymReader
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.reader import parse_sframe
from stackmark.formats.sframe.spec import FDE_V2_LAYOUT, HEADER_LAYOUT
from stackmark.markup.parser import (
    MAX_ELEMENTS_PER_LINE,
    MAX_MULTILINE_CHARS,
    MarkupParser,
)
from stackmark.markup.syntax import MULTILINE_TAGS
from stackmark.symbols.elf_source import ElfSymbolSource
from stackmark.symbols.source import ModuleFiles
from tests.hostile.measure import file_digest, run_stackmark, write_repeated
from tests.hostile.tiny_elf import (
    SHF_COMPRESSED,
    SHT_PROGBITS,
    RawSection,
    build_id_note,
    compressed_header,
    elf_file,
    zlib_of_zeros,
)
from tests.support.build import compile_program

SYMBOLIZE = ["symbolize", "--gsym-cache=off", "--debug-file-directory=/nonexistent"]
MB = 1 << 20


# -- markup and `stackmark symbolize` ------------------------------------------------------


def test_a_100_mb_line_passes_through_unchanged(tmp_path: Path) -> None:
    """Memory is a few times the line (read, decoded, written), no more."""
    log = write_repeated(tmp_path / "log", b"before\n", b"x" * 1024, 100 * 1024, b"\nafter\n")
    run = run_stackmark(SYMBOLIZE, log, tmp_path / "run")
    assert run.status == 0, run.stderr_text()
    assert file_digest(run.stdout) == file_digest(log)
    assert run.peak_mb < 800, f"{run.peak_mb:.0f} MB for a 100 MB line"


def test_a_million_elements_on_one_line(tmp_path: Path) -> None:
    """The first MAX_ELEMENTS_PER_LINE elements are handled, the rest kept as
    text, with one warning. Before: 80 s, 600 MB and a gigabyte of stderr (each
    error echoed the whole 15 MB line)."""
    log = write_repeated(tmp_path / "log", b"", b"{{{pc:0x1000}}}", 1_000_000, b"\nlast line\n")
    run = run_stackmark(SYMBOLIZE, log, tmp_path / "run", timeout=120)
    assert run.status == 1  # the addresses handled have no mmap: element errors
    # handled ones are shown as llvm shows an unplaced pc; the rest is kept as it came
    expected = write_repeated(
        tmp_path / "expected", b"[[[pc:0x1000]]]" * MAX_ELEMENTS_PER_LINE, b"{{{pc:0x1000}}}",
        1_000_000 - MAX_ELEMENTS_PER_LINE, b"\nlast line\n",
    )  # fmt: skip
    assert file_digest(run.stdout) == file_digest(expected)
    stderr = run.stderr_text(64 * MB)
    assert f"<stdin>:1:{MAX_ELEMENTS_PER_LINE * 15 + 1}: warning: more than" in stderr
    assert stderr.count("no mmap covers address") == MAX_ELEMENTS_PER_LINE
    assert run.stderr.stat().st_size < 10 * MB
    assert run.peak_mb < 300, f"{run.peak_mb:.0f} MB"


def test_long_line_errors_echo_only_a_window(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_bytes(b"a" * 100_000 + b" {{{pc:zz}}} " + b"b" * 100_000 + b"\n")
    run = run_stackmark(SYMBOLIZE, log, tmp_path / "run")
    stderr = run.stderr_text()
    assert "<stdin>:1:100008: error:" in stderr
    echoed, caret = stderr.splitlines()[1:3]
    assert echoed.startswith("...a") and echoed.endswith("b...") and len(echoed) < 220
    assert echoed[caret.index("^") :].startswith("zz")


@pytest.mark.parametrize(
    ("name", "unit", "count"),
    [
        ("nested", b"{{{", 2_000_000),
        ("unterminated", b"{{{pc:0x1000:" + b":a" * 500, 5_000),
        ("closers", b"}}}", 2_000_000),
        ("half-open", b"{{{pc:{{{bt:}}}", 300_000),
    ],
)
def test_deep_or_unterminated_braces(tmp_path: Path, name: str, unit: bytes, count: int) -> None:
    log = write_repeated(tmp_path / "log", b"", unit, count, b"\n")
    run = run_stackmark(SYMBOLIZE, log, tmp_path / "run", timeout=120)
    assert run.status in (0, 1)
    if name != "half-open":  # there the elements are reported and kept
        assert file_digest(run.stdout) == file_digest(log)
    assert run.peak_mb < 300, f"{run.peak_mb:.0f} MB"


def test_a_hexdict_that_never_closes(tmp_path: Path) -> None:
    """3,000 lines of 40 KB after a stray `{{{hexdict:`: before, all of them
    were held (twice) until the 4,096-line limit; now at most a megabyte is."""
    line = b"  rax: 0x1000 " * 3000 + b"\n"
    log = write_repeated(tmp_path / "log", b"{{{hexdict:\n", line, 3000, b"done\n")
    run = run_stackmark(SYMBOLIZE, log, tmp_path / "run")
    assert run.status == 0, run.stderr_text()
    assert file_digest(run.stdout) == file_digest(log)
    assert run.peak_mb < 150, f"{run.peak_mb:.0f} MB"


def test_a_multiline_element_is_abandoned_past_its_character_budget() -> None:
    parser = MarkupParser(MULTILINE_TAGS)
    parsed = parser.parse("{{{hexdict:", 0)
    line = "  r: 0x1 " * 1000
    number = 1
    while parsed.pending is not None:
        parsed = parser.parse(line, number, parsed.pending)
        number += 1
    assert parsed.abandoned is not None
    assert (number - 2) * len(line) <= MAX_MULTILINE_CHARS < (number - 1) * len(line)


# -- SFrame ---------------------------------------------------------------------------------


def _sframe_header(num_fdes: int, num_fres: int, fre_len: int, version: int = 2) -> bytes:
    """A sorted AMD64 header without an auxiliary header; FDEs right after it."""
    return HEADER_LAYOUT.pack(
        "<",
        {
            "sfp_magic": 0xDEE2,
            "sfp_version": version,
            "sfp_flags": 1,
            "sfh_abi_arch": 3,
            "sfh_cfa_fixed_fp_offset": 0,
            "sfh_cfa_fixed_ra_offset": -8,
            "sfh_auxhdr_len": 0,
            "sfh_num_fdes": num_fdes,
            "sfh_num_fres": num_fres,
            "sfh_fre_len": fre_len,
            "sfh_fdeoff": 0,
            "sfh_freoff": 0,
        },
    )


@pytest.mark.parametrize(
    ("num_fdes", "fre_len", "offset", "message"),
    [(0xFFFF_FFFF, 0, 8, "FDEs of 20 bytes"), (0, 0xFFFF_FFF0, 16, "FRE sub-section")],
)
def test_sframe_counts_past_the_section(
    num_fdes: int, fre_len: int, offset: int, message: str
) -> None:
    data = _sframe_header(num_fdes, 0xFFFF_FFFF, fre_len) + bytes(40)
    tracemalloc.start()
    try:
        for read in (
            lambda: parse_sframe(data, source="bad.sframe"),
            lambda: SFrameTable.from_bytes(data, source="bad.sframe"),
        ):
            with pytest.raises(FormatError, match=message) as caught:
                read()
            assert (caught.value.offset, caught.value.source) == (offset, "bad.sframe")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MB


def test_sframe_fde_with_four_billion_fres() -> None:
    """One v2 FDE claiming 0xffffffff FREs over a 3-byte FRE sub-section."""
    fde = FDE_V2_LAYOUT.pack(
        "<",
        {
            "sfde_func_start_address": 0,
            "sfde_func_size": 0x100,
            "sfde_func_start_fre_off": 0,
            "sfde_func_num_fres": 0xFFFF_FFFF,
            "sfde_func_info": 0,
            "sfde_func_rep_size": 0,
            "sfde_func_padding2": 0,
        },
    )
    data = _sframe_header(1, 1, 3) + fde + bytes([0, 3, 8])
    table = SFrameTable.from_bytes(data, source="bad.sframe")
    with pytest.raises(FormatError) as caught:
        table.find(0x10)
    assert caught.value.source == "bad.sframe" and caught.value.offset is not None
    with pytest.raises(FormatError):
        parse_sframe(data, source="bad.sframe")


# -- GSYM -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_gsym() -> bytes:
    program = compile_program("hostile_gsym", ["gsym_inline.c", "gsym_inline_b.c"])
    return convert_elf(str(program)).data


@pytest.mark.parametrize(
    ("field", "offset", "message"),
    [("NumAddresses", 16, "address table"), ("StrtabSize", 24, "string table")],
)
def test_gsym_huge_header_counts(small_gsym: bytes, field: str, offset: int, message: str) -> None:
    data = bytearray(small_gsym)
    struct.pack_into("<I", data, offset, 0xFFFF_FFFF)
    with pytest.raises(FormatError, match=message) as caught:
        GsymReader.from_bytes(bytes(data), "huge.gsym")
    assert caught.value.source == "huge.gsym"


def test_gsym_huge_file_table_count(small_gsym: bytes) -> None:
    reader = GsymReader.from_bytes(small_gsym)
    data = bytearray(small_gsym)
    struct.pack_into("<I", data, reader.file_table_offset, 0xFFFF_FFFF)
    with pytest.raises(FormatError, match="file table of 4294967295 entries"):
        GsymReader.from_bytes(bytes(data), "huge.gsym")


def test_gsym_inline_tree_nested_deeper_than_python_recurses() -> None:
    """A 2,000-level inline tree: RecursionError escaped before, now a RecordError."""
    from stackmark.formats.gsym import GsymCreator
    from stackmark.formats.gsym.function_info import INLINE_INFO, FunctionInfo
    from stackmark.formats.gsym.line_table import LineEntry

    tree = bytearray()
    depth = 2000
    for level in range(depth):
        has_children = 0 if level == depth - 1 else 1
        tree += bytes([1, 0, 0x10, has_children]) + bytes(4) + bytes([1, 1])
    tree += bytes(depth - 1)
    creator = GsymCreator()
    name = creator.insert_string("deep")
    file = creator.insert_file("/src/deep.c")
    record = (INLINE_INFO, bytes(tree))
    # A line table, so that a lookup walks the inline tree (it skips it without one).
    rows = [LineEntry(0x1000, file, 1)]
    creator.add_function(FunctionInfo(0x1000, 0x10, name, line_table=rows, other_records=[record]))
    creator.finalize()
    reader = GsymReader.from_bytes(creator.encode(), "deep.gsym")
    with pytest.raises(FormatError, match="levels deep"):
        list(reader.functions())
    with pytest.raises(FormatError, match="levels deep"):
        reader.lookup(0x1008)


# -- compressed debug sections ----------------------------------------------------------------


def _elf_with_compressed_info(claimed: int, payload: bytes) -> bytes:
    info = RawSection(".debug_info", SHT_PROGBITS, SHF_COMPRESSED, compressed_header(claimed))
    info.data += payload
    return elf_file([build_id_note(bytes(range(20))), info])


def test_compressed_section_claiming_too_much_is_refused_at_once() -> None:
    data = _elf_with_compressed_info(MAX_DECOMPRESSED_SIZE + 1, zlib_of_zeros(1024))
    with ElfFile.from_bytes(data, "bomb.debug") as elf, pytest.raises(FormatError) as caught:
        elf.section_data(".debug_info")
    assert "over the" in caught.value.reason and caught.value.source == "bomb.debug"


def test_compressed_section_expanding_past_its_claim_stops_there(tmp_path: Path) -> None:
    """256 MB of zeros in 250 KB, claiming 8 MB: inflating stops at 8 MB."""
    bomb = tmp_path / "bomb.debug"
    bomb.write_bytes(_elf_with_compressed_info(8 * MB, zlib_of_zeros(256 * MB)))
    tracemalloc.start()
    try:
        with ElfFile.open(bomb) as elf:
            assert len(elf.section_data(".debug_info")) == 8 * MB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * MB


def test_compressed_section_shorter_than_its_claim_is_an_error() -> None:
    data = _elf_with_compressed_info(64 * MB, zlib_of_zeros(MB))
    with ElfFile.from_bytes(data, "short.debug") as elf, pytest.raises(FormatError) as caught:
        elf.section_data(".debug_info")
    assert "decompressed to 1048576 bytes, header says 67108864" in caught.value.reason


def _elf_with_gnu_zdebug_info(claimed: int, payload: bytes) -> bytes:
    """The older GNU style (`-gz=zlib-gnu`): `.zdebug_info` = "ZLIB", size (big-endian), zlib."""
    data = b"ZLIB" + struct.pack(">Q", claimed) + payload
    info = RawSection(".zdebug_info", SHT_PROGBITS, 0, data)
    return elf_file([build_id_note(bytes(range(20))), info])


def test_gnu_zdebug_section_claiming_too_much_is_refused_at_once() -> None:
    data = _elf_with_gnu_zdebug_info(1 << 62, zlib_of_zeros(1024))
    with ElfFile.from_bytes(data, "bomb.debug") as elf, pytest.raises(FormatError) as caught:
        elf.section_data(".debug_info")
    assert "over the" in caught.value.reason and caught.value.source == "bomb.debug"


def test_gnu_zdebug_section_expanding_past_its_claim_stops_there(tmp_path: Path) -> None:
    """256 MB of zeros in 250 KB behind a `.zdebug_info` claiming 8 MB."""
    bomb = tmp_path / "bomb.debug"
    bomb.write_bytes(_elf_with_gnu_zdebug_info(8 * MB, zlib_of_zeros(256 * MB)))
    tracemalloc.start()
    try:
        with ElfFile.open(bomb) as elf:
            assert len(elf.section_data(".debug_info")) == 8 * MB
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * MB


ZSTD_FRAME_OF_ZEROS = bytes.fromhex(
    "28b52ffd00684c000008000100fcff39100202001000020010000200100002001000020010000200100003001000"
)
"""A zstd frame without a content size that inflates to 1 MiB of zeros (made
with `zstd -19 --no-content-size`; `zstd -d` gives back 1,048,576 bytes)."""


def test_zstd_section_is_bounded_by_its_claim_or_refused() -> None:
    """A zstd-compressed section (`-gz=zstd`) claiming less than it holds: with the
    optional `zstandard` package inflating stops at the claim (a mismatch, an
    error); without it, the message says what to install. Never more memory."""
    header = struct.pack("<IIQQ", 2, 0, 4096, 1)  # ELFCOMPRESS_ZSTD, 4 KB claimed
    info = RawSection(".debug_info", SHT_PROGBITS, SHF_COMPRESSED, header + ZSTD_FRAME_OF_ZEROS)
    data = elf_file([build_id_note(bytes(range(20))), info])
    tracemalloc.start()
    try:
        with ElfFile.from_bytes(data, "zstd.debug") as elf:
            try:
                assert len(elf.section_data(".debug_info")) == 4096
            except FormatError as exc:
                assert exc.source == "zstd.debug" and ".debug_info" in exc.reason
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 * 1024  # the 1 MiB it holds was never inflated


def test_symbolize_with_a_bomb_for_a_module(tmp_path: Path) -> None:
    """The front end: one clear warning for the module, the line kept, bounded memory."""
    bomb = tmp_path / "bomb.debug"
    bomb.write_bytes(_elf_with_compressed_info(MAX_DECOMPRESSED_SIZE - 1, zlib_of_zeros(MB)))
    build_id = bytes(range(20)).hex()
    log = tmp_path / "log"
    log.write_text(
        f"{{{{{{module:0:bomb:elf:{build_id}}}}}}}\n"
        "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}\n"
        "crash at {{{pc:0x1010}}} here\n"
    )
    run = run_stackmark([*SYMBOLIZE, f"--obj={bomb}"], log, tmp_path / "run")
    stderr = run.stderr_text()
    assert "Traceback" not in stderr
    assert "bomb.debug" in stderr and "decompressed to" in stderr
    assert b"crash at " in run.stdout.read_bytes() and b" here" in run.stdout.read_bytes()
    assert run.peak_mb < 200, f"{run.peak_mb:.0f} MB"


def test_elf_source_over_a_bomb_raises_a_stackmark_error(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.debug"
    bomb.write_bytes(_elf_with_compressed_info(32 * MB, zlib_of_zeros(MB)))
    with pytest.raises(StackmarkError):
        source = ElfSymbolSource(ModuleFiles(bytes(range(20)).hex(), str(bomb)))
        try:
            source.frames_at(0x1010)
        finally:
            source.close()


def test_dies_nested_deeply_with_backward_siblings_are_a_format_error() -> None:
    # 200,000 nested structure DIEs, each with DW_AT_sibling pointing back at the
    # unit's start: the walk skips each one's children one by one, one level of
    # recursion per DIE. It used to escape as RecursionError; the compiled walk
    # (which would overflow the C stack) hands such input to the reference.
    from stackmark.dwarf.reader import DwarfReader

    depth = 200_000
    abbrev = bytes(
        [
            *(1, 0x11, 1, 0, 0),  # 1: DW_TAG_compile_unit, children, no attributes
            *(2, 0x13, 1, 0x01, 0x13, 0, 0),  # 2: DW_TAG_structure_type, children, sibling ref4
            0,
        ]
    )
    dies = bytes([1]) + bytes([2, 0, 0, 0, 0]) * depth + bytes(depth + 1)
    body = struct.pack("<HIB", 4, 0, 8) + dies  # DWARF 4 header: version, abbrev, addr size
    info = struct.pack("<I", len(body)) + body
    data = elf_file(
        [
            RawSection(".debug_info", SHT_PROGBITS, 0, info),
            RawSection(".debug_abbrev", SHT_PROGBITS, 0, abbrev),
        ]
    )
    reader = DwarfReader(ElfFile.from_bytes(data, "nested.elf"))
    with pytest.raises(FormatError, match="malformed DIE data") as caught:
        for unit in reader.units():
            unit.functions()
    assert "nested.elf" in str(caught.value)


def test_inlined_calls_nested_thousands_deep_give_their_whole_chain() -> None:
    # A subprogram with 3,000 inlined calls, each nested in the previous one and
    # covering one byte less at each end: the chain at the innermost address holds
    # all of them. A lookup makes the Functions of its chain from the compiled
    # walk's arrays; it used to do that one level of recursion per call.
    from stackmark.dwarf.reader import DwarfReader

    depth = 3_000
    abbrev = bytes(
        [
            *(1, 0x11, 1, 0, 0),  # 1: DW_TAG_compile_unit, children, no attributes
            *(2, 0x2E, 1, 0x11, 0x01, 0x12, 0x06, 0, 0),  # 2: subprogram: low_pc, high_pc (data4)
            *(3, 0x1D, 1, 0x11, 0x01, 0x12, 0x06, 0, 0),  # 3: inlined_subroutine, the same
            0,
        ]
    )
    low, size = 0x10000, 0x10000
    dies = bytes([1]) + bytes([2]) + struct.pack("<QI", low, size)
    for level in range(1, depth + 1):
        dies += bytes([3]) + struct.pack("<QI", low + level, size - 2 * level)
    dies += bytes(depth + 2)  # the null entries closing every call, the subprogram, the unit
    body = struct.pack("<HIB", 4, 0, 8) + dies  # DWARF 4 header: version, abbrev, addr size
    info = struct.pack("<I", len(body)) + body
    data = elf_file(
        [
            RawSection(".debug_info", SHT_PROGBITS, 0, info),
            RawSection(".debug_abbrev", SHT_PROGBITS, 0, abbrev),
        ]
    )
    unit = next(DwarfReader(ElfFile.from_bytes(data, "inlined.elf")).units())
    chain = unit.inline_chain(low + depth)
    assert len(chain) == depth + 1
    assert [function.is_inlined for function in chain] == [True] * depth + [False]
    assert [function.ranges[0][0] for function in chain] == [low + i for i in range(depth, -1, -1)]
    assert all(inner.parent is outer for inner, outer in pairwise(chain))
