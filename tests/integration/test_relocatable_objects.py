"""Relocatable objects (.o, `ld -r` output) symbolized like llvm-symbolizer-19.

The debug sections of an ET_REL file hold their addresses as relocations
(DW_AT_low_pc against .text, offsets into .debug_str, .debug_line,
.debug_addr ...). Each object here is compiled at test time for one
architecture, given a build ID note (llvm-objcopy-19 makes a section named
.note* a SHT_NOTE), put in a `.build-id` tree, and every address of its
.text is symbolized through markup by llvm-symbolizer-19 and by stackmark
in --compat=llvm19: the outputs must be identical, inline frames included.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support.build import SOURCES
from tests.support.markup_programs import llvm, stackmark

BUILD_ID = "abcdef0123456789"

# (architecture, compiler command before the source file)
COMPILERS = {
    "x86_64": ["gcc", "-g", "-O1", "-c"],
    "aarch64": ["aarch64-linux-gnu-gcc", "-g", "-O1", "-c"],
    "s390x": ["clang-19", "--target=s390x-linux-gnu", "-g", "-O1", "-c"],
    "i386": ["gcc", "-m32", "-g", "-O1", "-c"],  # REL entries: addends in place
    "arm": ["clang-19", "--target=armv7-linux-gnueabihf", "-g", "-O1", "-c"],  # REL too
    "riscv64": ["clang-19", "--target=riscv64-linux-gnu", "-g", "-O1", "-c"],  # ADD/SUB pairs
    "ppc64le": ["clang-19", "--target=powerpc64le-linux-gnu", "-g", "-O1", "-c"],
}


def _object_with_build_id(arch: str, directory: Path) -> Path:
    compiler = COMPILERS[arch]
    require_tool(compiler[0])
    plain = directory / f"reloc_{arch}.o"
    subprocess.run([*compiler, str(SOURCES / "reloc_inline.c"), "-o", str(plain)], check=True)
    with ElfFile.open(plain) as elf:
        endian = elf.endian
    note = directory / "build-id.note"
    desc = bytes.fromhex(BUILD_ID)
    note.write_bytes(struct.pack(f"{endian}III", 4, len(desc), 3) + b"GNU\0" + desc)
    debug = directory / ".build-id" / BUILD_ID[:2] / f"{BUILD_ID[2:]}.debug"
    debug.parent.mkdir(parents=True)
    subprocess.run(
        [
            require_tool("llvm-objcopy-19"),
            f"--add-section=.note.gnu.build-id={note}",
            str(plain),
            str(debug),
        ],
        check=True,
    )
    return debug


def _text_size(path: Path) -> int:
    with ElfFile.open(path) as elf:
        text = elf.section(".text")
        assert text is not None
        return text.size


@pytest.mark.parametrize("arch", sorted(COMPILERS))
def test_every_address_of_an_object_file_symbolizes_as_llvm_does(arch: str, tmp_path: Path) -> None:
    debug = _object_with_build_id(arch, tmp_path)
    size = _text_size(debug)
    lines = [
        f"{{{{{{module:0:reloc_{arch}.o:elf:{BUILD_ID}}}}}}}",
        "{{{mmap:0:0x1000:load:0:rx:0}}}",
    ]
    lines += [f"{{{{{{bt:{i}:{address:#x}:pc}}}}}}" for i, address in enumerate(range(size))]
    log = ("\n".join(lines) + "\n").encode()
    options = (f"--debug-file-directory={tmp_path}",)
    expected = llvm(log, *options)
    got = stackmark(log, "--compat=llvm19", *options)
    # The oracle must have seen the relocations: several functions and an
    # inline frame (a line "#N.1"), none of which an unrelocated read yields.
    assert "second" in expected.text and "third" in expected.text
    assert ".1 " in expected.text
    assert got.text == expected.text
    # llvm 19 warns about the RISC-V ULEB128 pairs of .debug_loclists, which it
    # cannot apply; stackmark reads no location lists, so it has nothing to say.
    llvm_errors = [
        line
        for line in expected.stderr.decode().splitlines()
        if not line.startswith("warning: failed to compute relocation: R_RISCV_")
    ]
    assert got.stderr.decode().splitlines() == llvm_errors


def _addr2line_frames(path: Path, addresses: list[int]) -> list[list[tuple[str, str]]]:
    """binutils addr2line's (function, file:line) frames per address, innermost first."""
    proc = subprocess.run(
        [require_tool("addr2line"), "-f", "-i", "-a", "-e", str(path)]
        + [f"{a:#x}" for a in addresses],
        capture_output=True,
        text=True,
        check=True,
    )
    result: list[list[tuple[str, str]]] = []
    lines = proc.stdout.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            result.append([])
            i += 1
            continue
        location = lines[i + 1].split(" (discriminator")[0]
        result[-1].append((lines[i], location))
        i += 2
    return result


def test_ld_r_output_is_read_with_its_relocations(tmp_path: Path) -> None:
    """`ld -r` merges objects and keeps (rewritten) relocations: other.o's and
    reloc_inline.o's functions land at different offsets of one .text.

    llvm-symbolizer-19 loses the lines of the second unit of such a file
    (it prints `first[<invalid>:0]`), so binutils' addr2line, which applies
    the relocations as bfd does, is the oracle here."""
    debug = _object_with_build_id("x86_64", tmp_path)
    other = tmp_path / "other.o"
    (tmp_path / "other.c").write_text("int other(int v) { return v * 7; }\n")
    subprocess.run(
        ["gcc", "-g", "-O1", "-c", str(tmp_path / "other.c"), "-o", str(other)], check=True
    )
    merged = tmp_path / "merged.o"
    subprocess.run(["ld", "-r", str(other), str(debug), "-o", str(merged)], check=True)
    merged.replace(debug)
    addresses = list(range(_text_size(debug)))
    lines = [
        f"{{{{{{module:0:merged.o:elf:{BUILD_ID}}}}}}}",
        "{{{mmap:0:0x1000:load:0:rx:0}}}",
    ]
    lines += [f"{{{{{{bt:{i}:{address:#x}:pc}}}}}}" for i, address in enumerate(addresses)]
    log = ("\n".join(lines) + "\n").encode()
    got = stackmark(log, f"--debug-file-directory={tmp_path}")
    frames: list[list[tuple[str, str]]] = [[] for _ in addresses]
    for line in got.lines[1:]:
        # "    #3.1  0x000000000000000a scale /path/reloc_inline.c:9:74 (merged.o+0xa)"
        number, _, function, location, _ = line.split()
        file, line_number, _column = location.rsplit(":", 2)
        frames[int(number.lstrip("#").split(".")[0])].append((function, f"{file}:{line_number}"))
    expected = _addr2line_frames(debug, addresses)
    assert any(f[0][0] == "other" for f in expected) and any(len(f) == 2 for f in expected)
    assert frames == expected


def _kernel_build_directory() -> Path:
    """Debian's kbuild tree for its kernel (package linux-headers-amd64)."""
    found = sorted(Path("/usr/src").glob("linux-headers-*-amd64"))
    if not found:
        pytest.fail("linux-headers-amd64 is not installed; `make test` should have installed it")
    return found[-1]


def test_a_kernel_module_symbolizes_as_llvm_does(tmp_path: Path) -> None:
    """A .ko: relocatable, with .text, .init.text and .exit.text all at 0. llvm
    reads line rows of the first code section holding an address (.text)."""
    kbuild = _kernel_build_directory()
    build = tmp_path / "kmod"
    build.mkdir()
    shutil.copyfile(SOURCES / "reloc_kmod.c", build / "reloc_kmod.c")
    (build / "Kbuild").write_text("obj-m := reloc_kmod.o\n")
    subprocess.run(
        ["make", "-s", "-C", str(kbuild), f"M={build}", "modules"],
        check=True,
        capture_output=True,
    )
    module = build / "reloc_kmod.ko"
    with ElfFile.open(module) as elf:
        ident = elf.build_id
        assert ident is not None and elf.has_dwarf
        text = elf.section(".text")
        init = elf.section(".init.text")
        assert text is not None and init is not None and text.addr == init.addr == 0
    debug = tmp_path / "debug" / ".build-id" / ident[:2] / f"{ident[2:]}.debug"
    debug.parent.mkdir(parents=True)
    shutil.copyfile(module, debug)
    base = 0xFFFFFFFFC0000000
    lines = [
        f"{{{{{{module:0:reloc_kmod.ko:elf:{ident}}}}}}}",
        f"{{{{{{mmap:{base:#x}:0x10000:load:0:rx:0}}}}}}",
    ]
    lines += [f"{{{{{{bt:{a}:{base + a:#x}:pc}}}}}}" for a in range(text.size)]
    log = ("\n".join(lines) + "\n").encode()
    options = (f"--debug-file-directory={tmp_path / 'debug'}",)
    expected = llvm(log, *options)
    assert "sm_scale" in expected.text  # the inlined frames are there
    got = stackmark(log, "--compat=llvm19", *options)
    assert got.text == expected.text
