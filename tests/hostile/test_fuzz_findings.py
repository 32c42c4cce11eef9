"""Regression tests for what fuzzing found (docs/reliability.md lists them).

Each test feeds the input that failed (saved under tests/fuzz/crashes/ when
it is a file) and checks the behaviour the fix gives: a clear error naming
the input and the offset, or bounded output.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from stackmark.errors import FormatError
from stackmark.formats import cbf
from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.imagemap import decode_image_map
from stackmark.formats.sframe.from_cfi import generate_from_elf_bytes
from stackmark.formats.sframe.reader import parse_sframe
from stackmark.formats.sframe.spec import AbiArch
from stackmark.formats.sframe.writer import encode_sframe
from stackmark.symbols.elf_source import ElfSymbolSource
from stackmark.symbols.source import ModuleFiles

CRASHES = Path(__file__).resolve().parents[1] / "fuzz" / "crashes"


def test_imagemap_end_of_text_past_the_address_space_is_rejected() -> None:
    """16-bit map, base 0, end of text 0x2c0000 bytes on: it wrapped to the
    base once masked, and re-encoding it gave a map the decoder refused."""
    data = (CRASHES / "imagemap" / "end-of-text-wraps").read_bytes()
    with pytest.raises(FormatError, match="past the end of the 16-bit address space") as caught:
        decode_image_map(data, source="map.cif")
    assert caught.value.source == "map.cif" and caught.value.offset == 3


def test_cbf_rep_cannot_amplify_a_small_blob_into_gigabytes() -> None:
    """64 reps of 2^20 frames in 260 bytes: 67 million frames before the fix."""
    data = (CRASHES / "cbf" / "rep-amplification").read_bytes()
    assert len(data) < 300
    tracemalloc.start()
    try:
        decoded = cbf.decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoded.error == f"more than {cbf.MAX_DECODED_FRAMES} frames"
    assert decoded.truncated
    assert len(decoded.kinds) <= cbf.MAX_DECODED_FRAMES
    assert decoded.error_offset is not None and 3 < decoded.error_offset < len(data)
    assert peak < 200 * 1024 * 1024


def test_cbf_longest_swift_backtrace_still_decodes() -> None:
    """Swift's own test vector: 1 + 1,048,577 frames, no truncation."""
    decoded = cbf.decode(bytes.fromhex("02187f8a10000100"))
    assert decoded.error is None and len(decoded.kinds) == 1 + 1_048_577


def test_cfi_of_a_damaged_elf_is_a_format_error() -> None:
    """A section header whose offset overflowed pyelftools' seek (OverflowError)."""
    data = (CRASHES / "cfi" / "section-header-offset-overflow").read_bytes()
    with pytest.raises(FormatError, match="runs past the end of the file") as caught:
        generate_from_elf_bytes(data, AbiArch.AMD64_LITTLE, source="damaged.so")
    assert caught.value.source == "damaged.so"


def test_cfi_function_longer_than_sframe_can_say_is_left_out() -> None:
    """An FDE whose address range passes 4 GiB reached the SFrame writer's u32
    func_size field (struct.error): the function is left out and reported."""
    data = (CRASHES / "cfi" / "fde-range-past-4-gib").read_bytes()
    result = generate_from_elf_bytes(data, AbiArch.AMD64_LITTLE, source="damaged.so")
    assert any("sizes are 32-bit" in skipped.reason for skipped in result.skipped)
    written = parse_sframe(encode_sframe(result.section)).fdes
    assert [(f.start, f.size) for f in written] == [(f.start, f.size) for f in result.section.fdes]


def test_cfi_expression_cut_inside_its_offset_is_reported() -> None:
    """DW_OP_bregN whose SLEB128 offset runs off the expression: ValueError
    escaped; the function is left out and reported."""
    data = (CRASHES / "cfi" / "breg-offset-truncated").read_bytes()
    result = generate_from_elf_bytes(data, AbiArch.AMD64_LITTLE, source="damaged.so")
    assert any("ends inside its offset" in skipped.reason for skipped in result.skipped)


def test_dwarf_abbreviation_code_of_two_quadrillion() -> None:
    """A mutated abbreviation code (2.2e15) sized per-code lists: MemoryError in
    both DWARF walks (symbol lookups and GSYM conversion)."""
    path = CRASHES / "elf" / "sparse-abbreviation-code"
    source = ElfSymbolSource(ModuleFiles("", str(path)))
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="abbreviation code 2201288022420987") as caught:
            for address in range(0x1000, 0x1400, 0x10):
                source.frames_at(address)
        with pytest.raises(FormatError, match="codes this sparse are not supported"):
            convert_elf(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        source.close()
    assert caught.value.source == str(path)
    assert peak < 50 * 1024 * 1024
