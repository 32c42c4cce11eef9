"""A `.build-id` path holding a file with another build ID (or none).

llvm-symbolizer 19 uses whatever file sits at DIR/.build-id/xx/rest.debug;
LLVM's own symbolize-filter-markup-{bt,data,pc}.test rely on it, with an
object that has no build ID note. `--compat=llvm19` does the same; the
default mode checks the build ID and refuses the file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.markup_programs import llvm, stackmark

CLAIMED = "abcdef"


def _debug_dir_with_stranger(tmp_path: Path) -> tuple[Path, int]:
    """DIR/.build-id/ab/cdef.debug holding a library whose own build ID is not abcdef;
    and the address of its function `second`."""
    library = compile_program("buildid_stranger.so", ["reloc_inline.c"], shared=True)
    with ElfFile.open(library) as elf:
        assert elf.build_id != CLAIMED
        (address,) = [s.value for s in elf.symbols() if s.name == "second"]
    target = tmp_path / ".build-id" / CLAIMED[:2] / f"{CLAIMED[2:]}.debug"
    target.parent.mkdir(parents=True)
    shutil.copyfile(library, target)
    return tmp_path, address


def _log(address: int) -> bytes:
    return (
        f"{{{{{{module:0:lib.so:elf:{CLAIMED}}}}}}}\n"
        "{{{mmap:0x10000:0x10000:load:0:rx:0}}}\n"
        f"{{{{{{pc:{0x10000 + address:#x}}}}}}}\n"
    ).encode()


def test_compat_mode_uses_the_file_at_the_build_id_path_as_llvm_19_does(tmp_path: Path) -> None:
    require_tool("llvm-symbolizer-19")
    directory, address = _debug_dir_with_stranger(tmp_path)
    log = _log(address)
    expected = llvm(log, f"--debug-file-directory={directory}")
    assert "second[" in expected.text
    got = stackmark(log, "--compat=llvm19", f"--debug-file-directory={directory}")
    assert got.text == expected.text
    assert got.stderr == expected.stderr


def test_default_mode_refuses_a_file_whose_build_id_does_not_match(tmp_path: Path) -> None:
    directory, address = _debug_dir_with_stranger(tmp_path)
    got = stackmark(_log(address), f"--debug-file-directory={directory}")
    assert "second[" not in got.text
    assert "does not match" in got.stderr.decode()
