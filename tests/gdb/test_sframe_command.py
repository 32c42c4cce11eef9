"""`stackmark sframe info|dump|lookup` on the loaded modules, and `--from-cfi`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.gdb.conftest import (
    LIST_FRAMES,
    SFRAME_FIXTURES,
    Program,
    build_program,
    listed_frames,
    marked,
    run_gdb,
    section,
    stop_at,
)
from tests.support.build import run


def test_info_lists_each_module(gdb_path: str, program: Program) -> None:
    result = run_gdb([*stop_at(), *section("info", "stackmark sframe")], program.exe)
    lines = {line.split()[0]: line for line in marked(result, "info").splitlines()}
    assert "SFrame v1 at 0x" in lines["dbg_main"] and "sorted, amd64" in lines["dbg_main"]
    assert "SFrame v1" in lines["libdbg_lib.so"]
    assert "no SFrame: no .sframe section" in lines["libc.so.6"]


def test_dump_is_what_objdump_prints(gdb_path: str, program: Program) -> None:
    result = run_gdb([*stop_at(), *section("dump", "stackmark sframe dump dbg_main")], program.exe)
    objdump = run([require_tool("objdump"), "--sframe", program.exe])
    assert marked(result, "dump").strip() == objdump.strip()


def test_lookup_at_function_entries(gdb_path: str, program: Program) -> None:
    """At a function's first instruction the CFA is rsp+8 and the RA at CFA-8 (the
    x86-64 call instruction left it there), whatever the function does next."""
    commands = [*stop_at()]
    for name in ("stop_here", "leaf", "lib_call", "dyn"):
        commands += section(name, f"stackmark sframe lookup {name}")
    commands += section("ra", "stackmark sframe lookup --return-address $pc")
    result = run_gdb(commands, program.exe)
    for name in ("stop_here", "leaf", "lib_call", "dyn"):
        text = marked(result, name)
        assert "CFA = rsp+8; RA = *(CFA-8)" in text, text
    assert "= libdbg_lib.so+0x" in marked(result, "lib_call")
    assert "looked up as a return address" in marked(result, "ra")


def test_lookup_outside_any_module(gdb_path: str, program: Program) -> None:
    result = run_gdb([*stop_at(), "stackmark sframe lookup 0x10"], program.exe)
    assert "0x10 is not in any loaded module" in result.stderr


def test_unwinder_with_tables_generated_from_cfi(gdb_path: str) -> None:
    """A binary built without --gsframe: the unwinder works from SFrame made from .eh_frame."""
    plain = build_program(strip_cfi=False, flags=("-g", "-O2", "-fomit-frame-pointer"))
    native = listed_frames(run_gdb([*stop_at(), LIST_FRAMES], plain.exe, plugin=False))
    result = run_gdb(
        [
            *stop_at(),
            "stackmark unwinder on --from-cfi",  # implies --everywhere
            LIST_FRAMES,
            *section("status", "stackmark unwinder status"),
        ],
        plain.exe,
    )
    assert listed_frames(result) == native
    status = marked(result, "status")
    assert re.search(r"dbg_main +generated from \.eh_frame \(v3\); unwound by stackmark", status)
    unwound = int(re.search(r"frames unwound: (\d+)", status)[1])  # type: ignore[index]
    assert unwound >= 5


@pytest.mark.parametrize(
    ("fixture", "objdump"),
    [("deep-x86_64-v2", "2.44"), ("edge-x86_64-v3", "2.47")],
)
def test_dump_of_v2_and_v3_is_what_newer_objdump_printed(
    gdb_path: str, tmp_path: Path, fixture: str, objdump: str
) -> None:
    """objdump 2.40 reads only SFrame v1: the oracle is the committed output of the
    binutils that wrote the fixture (tests/fixtures/sframe/*.objdump-X.txt)."""
    binary = tmp_path / fixture
    shutil.copy(SFRAME_FIXTURES / fixture, binary)
    breakpoint = "realign" if fixture.startswith("edge") else "leaf"
    commands = ["handle SIGUSR1 nostop noprint pass", f"break {breakpoint}", "run"]
    result = run_gdb([*commands, *section("dump", f"stackmark sframe dump {fixture}")], binary)
    expected = (SFRAME_FIXTURES / f"{fixture}.objdump-{objdump}.txt").read_text()
    assert marked(result, "dump").replace(str(binary), fixture).strip() == expected.strip()
