"""`gsym convert` on split DWARF (skeleton units, their .dwo files) and on
relocatable objects, byte for byte and line for line against llvm-gsymutil-19.

Fixtures are built at test time: a gcc -gsplit-dwarf program (two units,
inline chains), a clang-19 -gsplit-dwarf object file (ET_REL: the skeleton's
addresses are relocations), and the same program with its .dwo files gone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.build import REPO, SOURCES
from tests.support.gsymutil import GSYMUTIL

SPLIT_SOURCES = ["gsym_inline.c", "gsym_inline_b.c"]


def _build_split_program(directory: Path) -> Path:
    """gcc -gsplit-dwarf, compiled in `directory` so the .dwo files land beside the binary."""
    for name in [*SPLIT_SOURCES, "gsym_inline.h"]:
        shutil.copyfile(SOURCES / name, directory / name)
    subprocess.run(
        ["gcc", "-g", "-O2", "-gsplit-dwarf", *SPLIT_SOURCES, "-o", "split_prog"],
        cwd=directory,
        check=True,
    )
    assert list(directory.glob("*.dwo")), "gcc wrote no .dwo file"
    return directory / "split_prog"


def _llvm(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require_tool(GSYMUTIL), *args], cwd=directory, capture_output=True, text=True, check=True
    )


def _stackmark(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", "gsym", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )


def _convert_both(directory: Path, binary: str, *options: str) -> tuple[str, str]:
    """(llvm's log, stackmark's log); the two GSYM files must be identical."""
    llvm = _llvm(directory, "--convert", binary, "-o", "llvm.gsym", *options)
    ours = _stackmark(directory, "convert", binary, "-o", "ours.gsym", *options)
    llvm_bytes = (directory / "llvm.gsym").read_bytes()
    assert (directory / "ours.gsym").read_bytes() == llvm_bytes
    return llvm.stdout, ours.stdout.replace("ours.gsym", "llvm.gsym")


def test_split_dwarf_program_converts_to_llvms_bytes_with_its_inline_frames(
    tmp_path: Path,
) -> None:
    _build_split_program(tmp_path)
    llvm_log, our_log = _convert_both(tmp_path, "split_prog")
    assert our_log == llvm_log
    assert "Loaded 0 functions from DWARF" not in llvm_log
    # The DWARF (not the symbol table) answered: inline frames are there.
    dump = _llvm(tmp_path, "ours.gsym").stdout
    assert "InlineInfo:" in dump


def test_missing_dwo_files_give_llvms_warnings_and_bytes(tmp_path: Path) -> None:
    _build_split_program(tmp_path)
    dwo_names = sorted(p.name for p in tmp_path.glob("*.dwo"))
    for dwo in tmp_path.glob("*.dwo"):
        dwo.unlink()
    llvm_log, our_log = _convert_both(tmp_path, "split_prog")
    assert our_log == llvm_log
    for name in dwo_names:
        assert f"warning: Unable to retrieve DWO .debug_info section for {name}\n" in our_log
    assert "Loaded 0 functions from DWARF." in our_log


def test_quiet_prints_what_llvm_gsymutil_quiet_prints(tmp_path: Path) -> None:
    _build_split_program(tmp_path)
    for dwo in tmp_path.glob("*.dwo"):
        dwo.unlink()
    llvm_log, our_log = _convert_both(tmp_path, "split_prog", "--quiet")
    assert our_log == llvm_log
    assert "(Remove the --quiet flag for full output) occurred 2 time(s)" in our_log


@pytest.mark.parametrize("compiler", ["clang-19", "gcc"])
def test_split_dwarf_object_file_converts_to_llvms_bytes(compiler: str, tmp_path: Path) -> None:
    """A relocatable object: llvm-gsymutil finds no line rows in one (its
    sequences belong to a section) and falls back to DW_AT_decl_line."""
    require_tool(compiler)
    shutil.copyfile(SOURCES / "reloc_inline.c", tmp_path / "reloc_inline.c")
    subprocess.run(
        [compiler, "-g", "-O1", "-gsplit-dwarf", "-c", "reloc_inline.c", "-o", "reloc.o"],
        cwd=tmp_path,
        check=True,
    )
    llvm_log, our_log = _convert_both(tmp_path, "reloc.o")
    assert our_log == llvm_log
    assert "Loaded 3 functions from DWARF." in our_log
