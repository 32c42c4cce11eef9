"""The Mach-O reader: record sizes from Apple's headers, names, and reads of
small files made by hand (tests/hostile/tiny_macho.py)."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from stackmark import macho
from stackmark.binary import RecordLayout
from stackmark.errors import FormatError
from stackmark.macho import MachOFile, parse_universal
from tests.conftest import require_tool
from tests.hostile.tiny_macho import MH_DSYM, TEXT_ADDRESS, Nlist, TinyMachO


@pytest.mark.parametrize(
    ("layout", "size"),
    [
        # <mach-o/fat.h>, <mach-o/loader.h>, <mach-o/nlist.h>: sizeof of each struct.
        (macho.FAT_HEADER, 8),
        (macho.FAT_ARCH, 20),
        (macho.FAT_ARCH_64, 32),
        (macho.MACH_HEADER, 28),
        (macho.MACH_HEADER_64, 32),
        (macho.SEGMENT_COMMAND, 56),
        (macho.SEGMENT_COMMAND_64, 72),
        (macho.SECTION, 68),
        (macho.SECTION_64, 80),
        (macho.SYMTAB_COMMAND, 24),
        (macho.LOAD_COMMAND, 8),
        (macho.UUID_COMMAND, 24),
        (macho.NLIST, 12),
        (macho.NLIST_64, 16),
    ],
)
def test_records_have_the_sizes_apples_headers_give(layout: RecordLayout, size: int) -> None:
    assert layout.size == size
    assert len(layout.names) == len(layout.compiled("<").unpack(bytes(size)))


def test_arch_names_are_llvms() -> None:
    # Apple's names (a universal file's slices, --arch) ...
    assert macho.triple_arch_name(macho.CPU_TYPE_ARM64, 0) == "arm64"
    assert macho.triple_arch_name(macho.CPU_TYPE_ARM64, 0x80000002) == "arm64e"  # ABI bits
    assert macho.triple_arch_name(macho.CPU_TYPE_X86_64, 8) == "x86_64h"
    assert macho.triple_arch_name(macho.CPU_TYPE_ARM, 9) == "armv7"
    assert macho.triple_arch_name(macho.CPU_TYPE_ARM, 99) == ""
    # ... and LLVM's generic names (a thin file).
    assert macho.llvm_arch_name(macho.CPU_TYPE_ARM64) == "aarch64"
    assert macho.llvm_arch_name(macho.CPU_TYPE_ARM64_32) == "aarch64_32"
    assert macho.llvm_arch_name(macho.CPU_TYPE_ARM) == "arm"
    assert macho.llvm_arch_name(0x1234) == "unknown"


def test_a_tiny_file_reads_field_by_field() -> None:
    data = TinyMachO(
        symbols=[Nlist(1, TEXT_ADDRESS), Nlist(0, TEXT_ADDRESS + 4, sect=0, type=0x24)],
        strings=b"\0_foo\0",
        uuid=bytes(range(16, 32)),
    ).build()
    image = MachOFile.from_bytes(data, "tiny")
    assert (image.endian, image.is_64, image.arch_name) == ("<", True, "x86_64")
    assert image.uuid == bytes(range(16, 32))
    (segment,) = image.segments
    assert (segment.name, segment.vmaddr) == ("__TEXT", TEXT_ADDRESS - 0xF00)
    (section,) = image.sections
    assert (section.index, section.name, section.segment, section.addr) == (
        1,
        "__text",
        "__TEXT",
        TEXT_ADDRESS,
    )
    assert section.is_text and image.file_size_of(section) == 0x40
    foo, stab = image.symbols()
    assert (foo.name, foo.kind, foo.sect, foo.value) == ("_foo", macho.N_SECT, 1, TEXT_ADDRESS)
    assert stab.is_stab and stab.name == ""
    assert image.section(".debug_info") is None and not image.has_dwarf


def test_a_dsym_section_is_clipped_to_the_bytes_the_file_holds() -> None:
    data = TinyMachO(section_size=0x1000, filetype=MH_DSYM).build()
    image = MachOFile.from_bytes(data, "tiny.dSYM")
    (section,) = image.sections
    # The section's 0x40 bytes are the last of the file, after the headers.
    assert image.file_size_of(section) == len(data) - section.offset == 0x40 + 1


def test_a_bad_n_sect_is_named() -> None:
    data = TinyMachO(symbols=[Nlist(1, TEXT_ADDRESS, sect=9)], strings=b"\0_foo\0").build()
    image = MachOFile.from_bytes(data, "tiny")
    (symbol,) = image.symbols()
    with pytest.raises(FormatError, match="bad section index: 9 for symbol at index 0"):
        image.symbol_section(symbol)


def test_a_thin_file_is_not_universal_and_short_inputs_are_errors() -> None:
    data = TinyMachO().build()
    assert parse_universal(data, "tiny") == []
    with pytest.raises(FormatError, match="shorter than its magic") as caught:
        MachOFile.from_bytes(b"\xcf\xfa", "short")
    assert caught.value.offset == 0 and caught.value.source == "short"
    with pytest.raises(FormatError, match="mach_header") as caught:
        MachOFile.from_bytes(data[:20], "cut")
    assert caught.value.offset == 0


def test_universal_slices_are_named_as_llvm_lipo_names_them(tmp_path: Path) -> None:
    """A universal file written by hand (big-endian fat_arch entries): lipo's
    `-archs` is the oracle for the names (from each slice's own header, as
    llvm-gsymutil names them)."""
    thins = [TinyMachO(cpusubtype=3).build(), TinyMachO(cpusubtype=8).build()]
    header = struct.pack(">II", macho.FAT_MAGIC, len(thins))
    offset = 0x1000
    body = b""
    for subtype, thin in zip((3, 8), thins, strict=True):
        header += struct.pack(
            ">iiIII", macho.CPU_TYPE_X86_64, subtype, offset + len(body), len(thin), 12
        )
        body += thin + bytes(-len(thin) % 0x1000)
    fat = tmp_path / "fat"
    fat.write_bytes(header + bytes(offset - len(header)) + body)
    archs = subprocess.run(
        [require_tool("llvm-lipo-19"), str(fat), "-archs"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    arches = macho.read_universal(str(fat))
    names = []
    for fat_arch in arches:
        with MachOFile.open(fat, fat_arch) as image:
            assert image.base == fat_arch.offset and image.size == len(thins[0])
            assert image.sections[0].name == "__text"
            names.append(image.triple_arch_name)
    assert names == archs == ["x86_64", "x86_64h"]
