"""The kernel's vDSO in a real log: said once, as information, not warned about.

The log is AddressSanitizer's markup (clang-19, `enable_symbolizer_markup=1`)
from two crashes of a program built at test time: each report declares
`linux-vdso.so.1`, which no disk holds. The language server's Problems
panel gets one Information for it and no warning; `stackmark symbolize`
prints one note for it and no warning.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types

from tests.conftest import require_tool
from tests.lsp.session import Session
from tests.support.build import REPO, compile_program

VDSO = "linux-vdso.so.1"
PROGRAM = """\
#include <stdlib.h>
int main(int argc, char **argv) {
    int *p = malloc(4);
    free(p);
    return p[argc - 1];
}
"""


@pytest.fixture(scope="module")
def asan_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ASan reports (two runs of a use-after-free), one after the other."""
    require_tool("clang-19")
    work = tmp_path_factory.mktemp("asan-log")
    source = work / "use_after_free.c"
    source.write_text(PROGRAM)
    exe = compile_program(
        "use_after_free", [source], compiler="clang-19", flags=("-g", "-fsanitize=address")
    )
    env = {**os.environ, "ASAN_OPTIONS": "enable_symbolizer_markup=1"}
    reports = []
    for _ in range(2):
        proc = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode != 0 and "use-after-free" in proc.stderr, proc.stderr
        reports.append(proc.stderr)
    log = work / "asan.log"
    log.write_text("".join(reports))
    assert log.read_text().count(f":{VDSO}:elf:") == 2
    return log


@pytest.mark.asyncio(loop_scope="module")
async def test_problems_panel_says_the_vdso_once_as_information(
    asan_log: Path, tmp_path: Path
) -> None:
    async with Session(tmp_path / "cache") as session:
        uri = session.open(asan_log)
        found = await session.diagnostics(
            uri, until=lambda d: any(x.code == "no-symbols" or x.code == "no-file" for x in d)
        )
    about_vdso = [d for d in found if VDSO in d.message]
    assert len(about_vdso) == 1, about_vdso
    (said,) = about_vdso
    assert said.severity == types.DiagnosticSeverity.Information and said.code == "no-file"
    lines = asan_log.read_text().splitlines()
    assert f":{VDSO}:elf:" in lines[said.range.start.line]  # on the first declaration


def test_the_cli_says_the_vdso_once_as_a_note(asan_log: Path, tmp_path: Path) -> None:
    stackmark = REPO / ".venv" / "bin" / "stackmark"
    # ASan's frames are not in the vDSO: nothing to say about it.
    proc = subprocess.run([stackmark, "symbolize", asan_log], capture_output=True, text=True)
    assert VDSO not in proc.stderr
    # A frame in the vDSO after each report (as a signal delivered in clock_gettime
    # would give): one note for the whole log, no warning.
    lines = []
    vdso_id = None
    for line in asan_log.read_text().splitlines():
        lines.append(line)
        if f":{VDSO}:elf:" in line:
            vdso_id = line.split(":")[1]
        elif line.startswith("{{{mmap:") and line.split(":")[4] == vdso_id:
            start = int(line.split(":")[1], 16)
            lines.append(f"in the vDSO: {{{{{{pc:{start + 0x100:#x}}}}}}}")
    log = tmp_path / "with-vdso-frames.log"
    log.write_text("\n".join(lines) + "\n")
    assert log.read_text().count("in the vDSO") == 2
    proc = subprocess.run([stackmark, "symbolize", log], capture_output=True, text=True)
    about_vdso = [line for line in proc.stderr.splitlines() if VDSO in line]
    assert len(about_vdso) == 1, proc.stderr
    assert ": note: " in about_vdso[0] and "has no file" in about_vdso[0]
