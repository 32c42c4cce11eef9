"""`gsym convert` on split DWARF (skeleton units, their .dwo files or a .dwp
package) and on relocatable objects, byte for byte and line for line against
llvm-gsymutil-19, in one process or several; the symbolizer on a .dwp package
against llvm-symbolizer-19; and a GSYM cache entry of a split program, which
reads the .dwo files the DWARF source reads.

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

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support.build import REPO, SOURCES
from tests.support.gsymutil import GSYMUTIL
from tests.support.markup_programs import build_id, llvm, stackmark

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
    # One thread: llvm's string table order then does not depend on its scheduling.
    llvm = _llvm(directory, "--convert", binary, "-o", "llvm.gsym", "--num-threads=1", *options)
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


@pytest.mark.parametrize("packed", [False, True], ids=["dwo files", "dwp package"])
def test_split_units_laid_out_alike_keep_the_names_of_their_own_files(
    packed: bool, tmp_path: Path
) -> None:
    """Two units whose split DIEs sit at the same offsets of their own files, under
    other names: each inlined call is named from its own file, as llvm names it
    (what is learnt of one file's DIEs by offset must not name the other's).
    DWARF 4, packed by binutils' dwp (llvm-dwp-19 does not finish on these)."""
    for name in ["gsym_split_twin.c", "gsym_split_twin_main.c"]:
        shutil.copyfile(SOURCES / name, tmp_path / name)
    flags = ["-g", "-gdwarf-4", "-O2", "-gsplit-dwarf"]
    objects = []
    for twin in "ab":
        objects.append(f"twin_{twin}.o")
        compile_twin = ["gcc", *flags, f"-DTWIN={twin}", "-c", "gsym_split_twin.c"]
        subprocess.run([*compile_twin, "-o", objects[-1]], cwd=tmp_path, check=True)
    subprocess.run(
        ["gcc", *flags, "gsym_split_twin_main.c", *objects, "-o", "twins"],
        cwd=tmp_path,
        check=True,
    )
    if packed:
        subprocess.run(
            [require_tool("dwp"), "-e", "twins", "-o", "twins.dwp"], cwd=tmp_path, check=True
        )
        for dwo in tmp_path.glob("*.dwo"):
            dwo.unlink()
    llvm_log, our_log = _convert_both(tmp_path, "twins")
    assert our_log == llvm_log
    dump = _llvm(tmp_path, "ours.gsym").stdout
    assert "scale_a called from" in dump and "scale_b called from" in dump


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


# (packager, DWARF version flags): llvm-dwp writes a version 5 unit index,
# binutils' dwp the GNU version 2 index of DWARF 4.
PACKAGERS = {
    "llvm-dwp-19": ("-gdwarf-5",),
    "dwp": ("-gdwarf-4",),
}


def _build_packaged_program(directory: Path, packager: str) -> Path:
    """A split-DWARF program, its .dwo files packed into PROGRAM.dwp and then removed."""
    for name in [*SPLIT_SOURCES, "gsym_inline.h"]:
        shutil.copyfile(SOURCES / name, directory / name)
    flags = PACKAGERS[packager]
    subprocess.run(
        ["gcc", "-g", *flags, "-O2", "-gsplit-dwarf", *SPLIT_SOURCES, "-o", "packed"],
        cwd=directory,
        check=True,
    )
    subprocess.run(
        [require_tool(packager), "-e", "packed", "-o", "packed.dwp"], cwd=directory, check=True
    )
    for dwo in directory.glob("*.dwo"):
        dwo.unlink()
    return directory / "packed"


@pytest.mark.parametrize("packager", sorted(PACKAGERS))
def test_dwp_package_converts_to_llvms_bytes(packager: str, tmp_path: Path) -> None:
    _build_packaged_program(tmp_path, packager)
    llvm_log, our_log = _convert_both(tmp_path, "packed")
    assert our_log == llvm_log
    assert "Loaded 0 functions from DWARF" not in our_log
    assert "InlineInfo:" in _llvm(tmp_path, "ours.gsym").stdout


@pytest.mark.parametrize("packager", sorted(PACKAGERS))
def test_symbolizer_reads_split_units_from_a_dwp(packager: str, tmp_path: Path) -> None:
    program = _build_packaged_program(tmp_path, packager)
    ident = build_id(program)
    debug = tmp_path / "debug" / ".build-id" / ident[:2] / f"{ident[2:]}.debug"
    debug.parent.mkdir(parents=True)
    shutil.copyfile(program, debug)
    shutil.copyfile(tmp_path / "packed.dwp", debug.with_name(debug.name + ".dwp"))
    with ElfFile.open(program) as elf:
        start, size = next((s.value, s.size) for s in elf.symbols() if s.name == "compute")
    lines = [
        f"{{{{{{module:0:packed:elf:{ident}}}}}}}",
        "{{{mmap:0x10000:0x10000:load:0:rx:0}}}",
    ]
    lines += [
        f"{{{{{{bt:{i}:{0x10000 + address:#x}:pc}}}}}}"
        for i, address in enumerate(range(start, start + size))
    ]
    log = ("\n".join(lines) + "\n").encode()
    options = (f"--debug-file-directory={tmp_path / 'debug'}",)
    expected = llvm(log, *options)
    assert "top_mix" in expected.text  # an inlined frame, from the package
    got = stackmark(log, "--compat=llvm19", *options)
    assert got.text == expected.text


def test_worker_processes_read_the_dwo_files_as_one_process_does(tmp_path: Path) -> None:
    """With --jobs=2 each worker process converts its units with the split DWARF
    finder it is given (the caller's, pickled): llvm's bytes still."""
    _build_split_program(tmp_path)
    _convert_both(tmp_path, "split_prog")
    _stackmark(tmp_path, "convert", "split_prog", "-o", "jobs.gsym", "--jobs=2")
    assert (tmp_path / "jobs.gsym").read_bytes() == (tmp_path / "llvm.gsym").read_bytes()


def test_a_cache_build_reads_the_dwo_files_the_dwarf_source_reads(tmp_path: Path) -> None:
    """The GSYM cache entry of a split-DWARF program is converted with the split
    units the symbolizer's DWARF source reads (the store's finder, which
    `ModuleFiles` carries to both): the entry holds llvm-gsymutil-19's bytes, and
    `--gsym-cache=build` prints what DWARF does, inlined frames included."""
    from stackmark.symbols.cache import GsymCache
    from tests.support.symbolizer_oracle import line_table_addresses

    program = _build_split_program(tmp_path)
    ident = build_id(program)
    lines = [
        f"{{{{{{module:0:split_prog:elf:{ident}}}}}}}",
        "{{{mmap:0x10000:0x10000:load:0:rx:0}}}",
    ]
    lines += [
        f"{{{{{{bt:{i}:{0x10000 + address:#x}:pc}}}}}}"
        for i, address in enumerate(line_table_addresses(program))
    ]
    log = ("\n".join(lines) + "\n").encode()
    cache = tmp_path / "cache"
    options = (f"--obj={program}",)
    through_gsym = stackmark(log, *options, "--gsym-cache=build", f"--gsym-cache-dir={cache}")
    entry = GsymCache(cache).validate(ident)
    assert entry is not None  # the entry answered
    _llvm(tmp_path, "--convert", "split_prog", "-o", "llvm.gsym", "--num-threads=1")
    assert entry.gsym.read_bytes() == (tmp_path / "llvm.gsym").read_bytes()
    through_dwarf = stackmark(log, *options, "--gsym-cache=off")
    assert through_gsym.text == through_dwarf.text
    assert "top_mix" in through_dwarf.text  # an inlined frame, from a .dwo file
