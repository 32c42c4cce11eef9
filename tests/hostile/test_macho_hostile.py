"""Truncated, damaged and odd Mach-O files given to `stackmark gsym convert`.

A malformed file gives a `FormatError` naming the file and the offset (the
CLI prints it, exit status 1, no traceback). What llvm-gsymutil-19 accepts
with a quirk (a symbol naming a section that does not exist, a name outside
the file, a .dSYM section longer than the file) gives its bytes and log.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.conversion.files import convert_file
from stackmark.errors import FormatError, StackmarkError
from stackmark.macho import MachOFile
from tests.hostile.tiny_macho import MH_DSYM, TEXT_ADDRESS, Nlist, TinyMachO
from tests.support.gsymutil import llvm_convert_run
from tests.support.macho_build import MachOBuild, build_macho, lipo

STRINGS = b"\0_foo\0_bar\0_\0"
FOO, BAR, UNDERSCORE = 1, 6, 11


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> MachOBuild:
    return build_macho(tmp_path_factory.mktemp("macho"), "arm64")


@pytest.fixture(scope="module")
def universal(build: MachOBuild, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A universal file: the arm64 .dSYM's DWARF file and an x86_64 executable."""
    root = tmp_path_factory.mktemp("macho-x86_64")
    x86 = build_macho(root, "x86_64")
    return lipo([build.dsym_dwarf, x86.image], root / "fat").read_bytes()


def stackmark_convert(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", "gsym", "convert", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )


# -- quirks llvm-gsymutil accepts: the same bytes and log -----------------------------

QUIRKS = {
    # n_sect 5 of a file with one section: llvm skips the symbol without a word.
    "symbol-in-a-missing-section": TinyMachO(
        symbols=[Nlist(FOO, TEXT_ADDRESS, sect=5), Nlist(BAR, TEXT_ADDRESS + 0x10)],
        strings=STRINGS,
    ),
    # n_strx past the end of the file: skipped with llvm's message in the log.
    "name-outside-the-file": TinyMachO(
        symbols=[Nlist(FOO, TEXT_ADDRESS), Nlist(0x10000, TEXT_ADDRESS + 0x10)],
        strings=STRINGS,
    ),
    # A .dSYM whose __text claims more bytes than the file holds: llvm counts
    # only those, so a symbol further on is not in a text section.
    "dsym-section-longer-than-the-file": TinyMachO(
        symbols=[Nlist(FOO, TEXT_ADDRESS), Nlist(BAR, TEXT_ADDRESS + 0x800)],
        strings=STRINGS,
        section_size=0x1000,
        filetype=MH_DSYM,
    ),
    # Its __text starts past the end: no text section at all, every address is
    # accepted.
    "dsym-section-past-the-end": TinyMachO(
        symbols=[Nlist(FOO, TEXT_ADDRESS)],
        strings=STRINGS,
        section_offset=0x100000,
        filetype=MH_DSYM,
    ),
}


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_quirks_llvm_accepts_give_its_bytes_and_log(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(QUIRKS[name].build())
    theirs = llvm_convert_run(path, tmp_path / "out.gsym")
    llvm_bytes = (tmp_path / "out.gsym").read_bytes()
    mine = stackmark_convert(path, tmp_path / "out.gsym")
    assert theirs.returncode == mine.returncode == 0, mine.stderr
    assert mine.stdout == theirs.stdout
    assert (tmp_path / "out.gsym").read_bytes() == llvm_bytes


def test_a_symbol_named_only_underscore_fails_as_in_llvm(tmp_path: Path) -> None:
    """ "_" loses its underscore: a function without a name cannot be written."""
    path = tmp_path / "underscore"
    symbols = [Nlist(FOO, TEXT_ADDRESS), Nlist(UNDERSCORE, TEXT_ADDRESS + 0x10)]
    path.write_bytes(TinyMachO(symbols=symbols, strings=STRINGS).build())
    theirs = llvm_convert_run(path, tmp_path / "llvm.gsym")
    mine = stackmark_convert(path, tmp_path / "llvm.gsym")
    assert theirs.returncode == mine.returncode == 1
    assert mine.stdout == theirs.stdout
    assert "Loaded 2 functions from symbol table." in mine.stdout
    assert f"{path}: attempted to encode invalid FunctionInfo object" in mine.stderr


# -- damaged files: an error naming the file and the offset ---------------------------------


def _patch(data: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _command_offset(data: bytes, cmd: int) -> int:
    """The offset of the first load command `cmd` of a 64-bit little-endian image."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at = 32
    for _ in range(ncmds):
        this, size = struct.unpack_from("<II", data, at)
        if this == cmd:
            return at
        at += size
    raise AssertionError(f"no load command 0x{cmd:x}")


LC_SEGMENT_64, LC_SYMTAB = 0x19, 0x2

DAMAGE = {
    # name: (how, what the message says, the offset it names)
    "sizeofcmds-past-the-end": (
        lambda d: _patch(d, 20, "<I", len(d)),
        "load commands",
        0x20,
    ),
    "cmdsize-zero": (lambda d: _patch(d, 36, "<I", 0), "bad cmdsize 0", 0x24),
    "nsects-too-many": (
        lambda d: _patch(d, _command_offset(d, LC_SEGMENT_64) + 64, "<I", 1000),
        "claims 1000 sections",
        None,
    ),
    "symbol-table-past-the-end": (
        lambda d: _patch(d, _command_offset(d, LC_SYMTAB) + 12, "<I", 1 << 24),
        "symbol table",
        None,
    ),
    "string-table-past-the-end": (
        lambda d: _patch(d, _command_offset(d, LC_SYMTAB) + 20, "<I", 1 << 24),
        "string table",
        None,
    ),
    "magic": (lambda d: _patch(d, 0, "<I", 0xFEEDFACF ^ 0xFF), None, 0),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_headers_are_errors_naming_the_file_and_the_offset(
    name: str, build: MachOBuild, tmp_path: Path
) -> None:
    damage, message, offset = DAMAGE[name]
    path = tmp_path / name
    original = build.dsym_dwarf.read_bytes()
    path.write_bytes(damage(original))
    if name == "magic":  # no longer a Mach-O file: the converter says what it takes
        with pytest.raises(StackmarkError, match="neither an ELF file, a Mach-O file"):
            convert_file(str(path), str(tmp_path / "out.gsym"))
        return
    with pytest.raises(FormatError) as caught:
        convert_file(str(path), str(tmp_path / "out.gsym"))
    assert caught.value.source == str(path)
    assert caught.value.offset is not None
    if offset is not None:
        assert caught.value.offset == offset
    assert message is not None and message in caught.value.reason
    mine = stackmark_convert(path, tmp_path / "out.gsym")
    assert mine.returncode == 1
    assert "Traceback" not in mine.stderr
    assert f"{path}: offset 0x{caught.value.offset:x}: " in mine.stderr
    assert not (tmp_path / "out.gsym").exists()


def test_an_executables_section_past_the_end_is_an_error_as_in_llvm(tmp_path: Path) -> None:
    path = tmp_path / "past-the-end"
    tiny = TinyMachO(symbols=[Nlist(FOO, TEXT_ADDRESS)], strings=STRINGS, section_size=0x1000)
    path.write_bytes(tiny.build())
    assert llvm_convert_run(path, tmp_path / "llvm.gsym").returncode == 1
    with pytest.raises(FormatError, match=r"section __text .* runs past the end of the file") as e:
        MachOFile.open(path)
    assert e.value.offset == 32 + 72  # the section header, after mach_header_64 and the segment


def test_a_slice_past_the_end_of_a_universal_file_is_named(
    universal: bytes, tmp_path: Path
) -> None:
    fat = universal
    path = tmp_path / "damaged-fat"
    # fat_arch[1].size (big-endian), at 8 + 20 + 12.
    path.write_bytes(_patch(fat, 8 + 20 + 12, ">I", len(fat)))
    with pytest.raises(FormatError, match=r"slice 1 .* runs past the end of the file") as caught:
        convert_file(str(path), str(tmp_path / "out.gsym"))
    assert caught.value.source == str(path) and caught.value.offset == 8 + 20


@pytest.mark.parametrize("which", ["dsym", "universal"])
def test_every_truncation_is_converted_or_refused_with_the_file_named(
    which: str, build: MachOBuild, universal: bytes, tmp_path: Path
) -> None:
    data = build.dsym_dwarf.read_bytes() if which == "dsym" else universal
    path = tmp_path / "cut"
    refused = 0
    for length in range(0, len(data), 61):
        path.write_bytes(data[:length])
        try:
            convert_file(str(path), str(tmp_path / "out.gsym"), jobs=1)
        except StackmarkError as exc:
            refused += 1
            assert str(path) in str(exc), (length, str(exc))
    assert refused > 0


def test_a_fifo_given_to_convert_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    mine = subprocess.run(
        [
            sys.executable,
            "-m",
            "stackmark",
            "gsym",
            "convert",
            str(fifo),
            "-o",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert mine.returncode == 1
    assert f"{fifo}: not a regular file" in mine.stderr
