"""`--relativenames` against llvm-symbolizer-19 on a tree compiled with relative paths.

llvm prints a file "relative to the compilation directory": the line
table's include directory (unless it is DWARF 5's entry 0, the compilation
directory itself) joined with the file name, the compilation directory
left out. An include directory given as an absolute path stays absolute.
The fixture is compiled here from inside its own tree (`gcc src/main.c
-Iinc -I$PWD/abs`), so its line tables hold all three kinds of entry, in
DWARF 5 and DWARF 4; frames come from the main file, a relative include
and an absolute include, inlined into each other.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.markup_programs import add_to_debug_dir, build_id, llvm, stackmark

HELPER = "static inline int helper(int x) { volatile int y = x * 3; return y + 1; }\n"
OUTER = (
    '#include "helper.h"\n'
    "static inline int outer(int x) { volatile int z = helper(x); return z * 5; }\n"
)
MAIN = """#include "outer.h"
#include <stdio.h>
__attribute__((noinline)) int work(int v) { return outer(v) * 2; }
int main(int argc, char **argv) { (void)argv; printf("%d\\n", work(argc)); return 0; }
"""


def _tree(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "inc").mkdir()
    (root / "abs").mkdir()
    (root / "inc" / "helper.h").write_text(HELPER)
    (root / "abs" / "outer.h").write_text(OUTER)
    (root / "src" / "main.c").write_text(MAIN)


def _code_addresses(binary: Path) -> list[int]:
    """Every line-table address of `work` (inlined frames included), from llvm's own dump."""
    symbols = subprocess.run(
        ["llvm-nm-19", "--defined-only", "-S", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    start, size = next(
        (int(fields[0], 16), int(fields[1], 16))
        for fields in (line.split() for line in symbols.splitlines())
        if len(fields) == 4 and fields[3] == "work"
    )
    return list(range(start, start + size))


@pytest.mark.parametrize("dwarf", ["-gdwarf-5", "-gdwarf-4"])
def test_relativenames_match_llvm(tmp_path: Path, dwarf: str) -> None:
    require_tool("llvm-symbolizer-19")
    root = tmp_path / "proj"
    _tree(root)
    command = ["gcc", dwarf, "-O2", "-Iinc", f"-I{root / 'abs'}", "src/main.c", "-o", "prog"]
    subprocess.run(command, cwd=root, check=True)
    binary = root / "prog"
    debug_dir = tmp_path / "debug"
    add_to_debug_dir(debug_dir, binary)
    base = 0x7F0000000000
    lines = [
        "{{{reset}}}",
        f"{{{{{{module:0:prog:elf:{build_id(binary)}}}}}}}",
        f"{{{{{{mmap:{base:#x}:0x4000:load:0:rx:0x0}}}}}}",
    ]
    for number, address in enumerate(_code_addresses(binary)):
        lines.append(f"{{{{{{bt:{number}:{base + address:#x}:pc}}}}}}")
        lines.append(f"{{{{{{pc:{base + address:#x}}}}}}}")
    log = ("\n".join(lines) + "\n").encode()
    options = (f"--debug-file-directory={debug_dir}", "--relativenames")
    theirs = llvm(log, *options)
    ours = stackmark(log, *options, "--compat=llvm19")
    # the oracle shows all three kinds of path, so the comparison means something
    assert b" src/main.c:" in theirs.stdout and b" inc/helper.h:" in theirs.stdout
    assert f" {root}/abs/outer.h:".encode() in theirs.stdout
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr
    default = stackmark(log, *options)  # stackmark's own layout: the same paths
    for path in (b" src/main.c:", b" inc/helper.h:", f" {root}/abs/outer.h:".encode()):
        assert path in default.stdout
    assert f"{root}/src/main.c".encode() not in default.stdout
