"""`stackmark symbolize --gsym-path DIR`: logs symbolized from GSYM files alone.

A device may keep only the compact GSYM files of its binaries. Programs
compiled at test time are converted by llvm-gsymutil-19 into a directory
(under names unrelated to their build IDs); their markup logs are then
symbolized with no ELF file to be found. The oracle is llvm-gsymutil-19's
own lookup of every address (names demangled by llvm-cxxfilt-19, as
stackmark demangles linkage names): each frame's function, file and line
must be llvm's. Then: an ELF file with debug info still wins over the
GSYM file, a stripped one does not, and the directory index finds files by
their header's UUID only.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stackmark.elf import SHF_EXECINSTR, ElfFile
from stackmark.symbols.gsym_files import GsymDirectories, gsym_uuid
from tests.support.build import build_id_of, compile_program
from tests.support.demangling import cxxfilt
from tests.support.gsymutil import llvm_convert, llvm_lookup_blocks

PROGRAMS = {
    "c-O2": ("gcc", ["gsym_inline.c", "gsym_inline_b.c"], ("-g", "-O2")),
    "cpp-O2": ("g++", ["gsym_cpp.cpp"], ("-g", "-O2")),
}
BASE = 0x7F0000000000
SYMBOLIZE = [sys.executable, "-m", "stackmark", "symbolize", "--no-debuginfod", "--gsym-cache=off"]
FRAME = re.compile(
    r"#(\d+)(?:\.\d+)?\s+0x[0-9a-f]+ (?:(.*?)(?: (\S+):(\d+):(\d+))? )?\(m\+0x[0-9a-f]+\)$"
)


def program(name: str) -> Path:
    compiler, sources, flags = PROGRAMS[name]
    return compile_program(f"gsym-files-{name}", sources, compiler=compiler, flags=flags)


def convert(binary: Path, directory: Path, name: str) -> Path:
    return llvm_convert(binary, directory / name)


def code_addresses(binary: Path, count: int = 150) -> list[int]:
    rng = random.Random(binary.name)
    with ElfFile.open(binary) as elf:
        text = [(s.addr, s.addr + s.size) for s in elf.sections if s.flags & SHF_EXECINSTR]
    spans = [a for low, high in text for a in range(low, high)]
    return sorted(rng.sample(spans, min(count, len(spans))))


def markup_log(binary: Path, addresses: list[int]) -> str:
    """A log of the program's module mapped at BASE, one `pc` frame per address."""
    with ElfFile.open(binary) as elf:
        loads = [s for s in elf.segments if s.type == 1]
        build_id = elf.build_id
    lines = ["{{{reset}}}", f"{{{{{{module:0:m:elf:{build_id}}}}}}}"]
    for seg in loads:
        start = seg.vaddr & ~0xFFF
        size = (seg.vaddr + seg.memsz - start + 0xFFF) & ~0xFFF
        lines.append(f"{{{{{{mmap:{BASE + start:#x}:{size:#x}:load:0:rx:{start:#x}}}}}}}")
    lines += [f"{{{{{{bt:{i}:{BASE + a:#x}:pc}}}}}}" for i, a in enumerate(addresses)]
    return "\n".join(lines) + "\n"


def symbolize(log: str, *options: str, cwd: Path) -> str:
    proc = subprocess.run(
        [*SYMBOLIZE, "--debug-file-directory", str(cwd), *options],
        input=log,
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def frames_by_index(output: str) -> dict[int, list[tuple[str | None, str | None, int, int]]]:
    """(function, file, line, column) of each printed frame, innermost first, by `bt` index."""
    frames: dict[int, list[tuple[str | None, str | None, int, int]]] = {}
    for line in output.splitlines():
        found = FRAME.search(line)
        if found is None:
            continue
        index, name, path, line_no, column = found.groups()
        frames.setdefault(int(index), []).append((name, path, int(line_no or 0), int(column or 0)))
    return frames


def llvm_frames(gsym: Path, addresses: list[int]) -> list[list[tuple[str, str | None, int]]]:
    """llvm-gsymutil-19's locations for each address: (demangled name, path, line)."""
    located = re.compile(
        r"^(?:0x[0-9a-f]{16}: )?\s*(.*?)(?: \+ \d+)?(?: @ (\S+):(\d+))?(?: \[inlined\])?$"
    )
    out: list[list[tuple[str, str | None, int]]] = []
    for block in llvm_lookup_blocks(gsym, addresses):
        frames = []
        for line in block.splitlines():
            if ": error: " in line:
                break
            name, path, line_no = located.match(line).groups()  # type: ignore[union-attr]
            frames.append((name, path, int(line_no or 0)))
        out.append(frames)
    names = sorted({name for frames in out for name, _, _ in frames})
    readable = dict(zip(names, cxxfilt(names), strict=True))
    return [[(readable[n], p, ln) for n, p, ln in frames] for frames in out]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_frames_are_llvm_gsymutils(name: str, tmp_path: Path) -> None:
    binary = program(name)
    gsym = convert(binary, tmp_path / "gsyms" / "nested", "anything.gsym")
    addresses = code_addresses(binary)
    out = symbolize(
        markup_log(binary, addresses), "--gsym-path", str(tmp_path / "gsyms"), cwd=tmp_path
    )
    ours = frames_by_index(out)
    expected = llvm_frames(gsym, addresses)
    answered = 0
    for i, frames in enumerate(expected):
        got = [(n, p, ln) for n, p, ln, _ in ours.get(i, [])]
        if not frames:
            assert got == [(None, None, 0)], hex(addresses[i])
            continue
        assert got == frames, hex(addresses[i])
        assert all(column == 0 for *_, column in ours[i])  # a GSYM has no columns
        answered += 1
    assert answered > len(addresses) // 2
    assert any(len(frames) > 1 for frames in expected)  # inline chains were checked


def test_an_elf_file_with_debug_info_wins(tmp_path: Path) -> None:
    binary = program("c-O2")
    convert(binary, tmp_path / "gsyms", "x.gsym")
    addresses = code_addresses(binary, 40)
    log = markup_log(binary, addresses)
    with_elf = symbolize(
        log, "--gsym-path", str(tmp_path / "gsyms"), "--obj", str(binary), cwd=tmp_path
    )
    assert with_elf == symbolize(log, "--obj", str(binary), cwd=tmp_path)
    assert any(c for frames in frames_by_index(with_elf).values() for *_, c in frames)


def test_a_stripped_binary_gives_way_to_the_gsym_file(tmp_path: Path) -> None:
    binary = program("c-O2")
    convert(binary, tmp_path / "gsyms", "x.gsym")
    stripped = tmp_path / "stripped"
    subprocess.run(["strip", "-g", "-o", str(stripped), str(binary)], check=True)
    addresses = code_addresses(binary, 40)
    log = markup_log(binary, addresses)
    out = symbolize(
        log, "--gsym-path", str(tmp_path / "gsyms"), "--obj", str(stripped), cwd=tmp_path
    )
    assert any(ln for frames in frames_by_index(out).values() for _, _, ln, _ in frames)
    bare = symbolize(log, "--obj", str(stripped), cwd=tmp_path)
    assert not any(ln for frames in frames_by_index(bare).values() for _, _, ln, _ in frames)


def test_the_directory_index_goes_by_uuid(tmp_path: Path) -> None:
    c, cpp = program("c-O2"), program("cpp-O2")
    first = convert(c, tmp_path / "a", "z.gsym")
    convert(cpp, tmp_path / "a", "a.gsym")
    convert(c, tmp_path / "b", "a.gsym")  # the same build ID again: the first in order wins
    (tmp_path / "a" / "junk.gsym").write_bytes(b"MYSG" + bytes(60))  # no UUID
    (tmp_path / "a" / "short.gsym").write_bytes(b"MYSG")
    (tmp_path / "a" / "not-a-gsym.txt").write_text("x")
    index = GsymDirectories([str(tmp_path / "a"), str(tmp_path / "b")])
    assert gsym_uuid(str(first)) == build_id_of(c)
    assert index.find(build_id_of(c)) == str(first)
    assert index.find(build_id_of(cpp)) == str(tmp_path / "a" / "a.gsym")
    assert index.find("00" * 20) is None
    assert gsym_uuid(str(tmp_path / "a" / "junk.gsym")) is None


def test_a_fifo_in_a_gsym_directory_is_skipped(tmp_path: Path) -> None:
    binary = program("c-O2")
    convert(binary, tmp_path / "g", "x.gsym")
    os.mkfifo(tmp_path / "g" / "a-fifo.gsym")  # opening it would block
    found: list[str | None] = []
    asker = threading.Thread(
        target=lambda: found.append(
            GsymDirectories([str(tmp_path / "g")]).find(build_id_of(binary))
        ),
        daemon=True,
    )
    asker.start()
    asker.join(30)
    assert found == [str(tmp_path / "g" / "x.gsym")]


def test_a_damaged_gsym_file_is_reported_not_raised(tmp_path: Path) -> None:
    binary = program("c-O2")
    gsym = convert(binary, tmp_path / "g", "x.gsym")
    gsym.write_bytes(gsym.read_bytes()[:64])  # the header survives, the tables do not
    log = markup_log(binary, code_addresses(binary, 5))
    proc = subprocess.run(
        [*SYMBOLIZE, "--debug-file-directory", str(tmp_path), "--gsym-path", str(tmp_path / "g")],
        input=log,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0  # a module without symbols is a warning, as in llvm
    assert "Traceback" not in proc.stderr
    assert "cannot read symbols" in proc.stderr
    assert f"{gsym}: offset 0x30: address table" in proc.stderr  # the file and the place
    assert "not an ELF file" not in proc.stderr  # it is read as GSYM only
    assert sorted(frames_by_index(proc.stdout)) == list(range(5))  # every frame printed


def test_compat_llvm19_reads_no_gsym_file(tmp_path: Path) -> None:
    """llvm-symbolizer 19 cannot read GSYM files: --compat=llvm19 does as it does."""
    binary = program("c-O2")
    convert(binary, tmp_path / "g", "x.gsym")
    log = markup_log(binary, code_addresses(binary, 10))
    out = symbolize(log, "--gsym-path", str(tmp_path / "g"), "--compat=llvm19", cwd=tmp_path)
    assert "gsym_inline" not in out  # no file, so no GSYM answer
    assert out.count("[[[bt:") == 10  # llvm 19 keeps an element it cannot symbolize
    assert "gsym_inline" in symbolize(log, "--gsym-path", str(tmp_path / "g"), cwd=tmp_path)
