"""A dwz-compressed program whose supplementary file is only in a user's debug directory.

`dwz -m` moves the DIEs two programs share into one supplementary file and
names it in each program's `.gnu_debugaltlink`. Here the link names another
machine's path, and the file is put by its build ID under a debug-file
directory of the test's own, so that only a reader told about that
directory finds it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support import sym_builds

LINKED_PATH = "/nonexistent/stackmark-test/common.debug"
"""What the programs' .gnu_debugaltlink records: a path no machine has."""


def dwz_compressed(tmp_path: Path, linked_path: str) -> tuple[Path, Path, Path]:
    """(the compressed program, the program before dwz, the supplementary file
    `dwz -m` made in `tmp_path`), the programs' links naming `linked_path`."""
    dwz = require_tool("dwz")
    originals = [sym_builds.cpp_program(), sym_builds.local_classes_program()]
    copies = []
    for original in originals:
        copies.append(tmp_path / original.name)
        shutil.copyfile(original, copies[-1])
    made = tmp_path / "common.debug"
    subprocess.run(
        [dwz, "-m", str(made), "-M", linked_path, *map(str, copies)],
        check=True,
        capture_output=True,
    )
    return copies[0], originals[0], made


def dwz_in_debug_directory(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the compressed program, the program before dwz, the debug-file directory that
    holds the supplementary file under .build-id)."""
    compressed, original, made = dwz_compressed(tmp_path, LINKED_PATH)
    supplementary_id = ElfFile.open(made).build_id
    assert supplementary_id
    debug_dir = tmp_path / "debug"
    placed = debug_dir / ".build-id" / supplementary_id[:2] / (supplementary_id[2:] + ".debug")
    placed.parent.mkdir(parents=True)
    made.rename(placed)
    return compressed, original, debug_dir
