"""`stackmark sframe generate` on Debian's libc.so.6, checked row by row
against llvm-dwarfdump's decoded `.eh_frame` table for the same file.

libc carries DW_CFA_GNU_args_size (which pyelftools 0.33, the CFI reader
before stackmark's own, could not put in a decoded table); vfork keeps its
return address in a register (a v3 flex FDE); getcontext and setcontext
give the stack pointer rules of its own, which SFrame cannot say: those
must be reported.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from stackmark.elf import ElfFile
from stackmark.formats.sframe.from_cfi import generate_from_elf_bytes
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.reader import parse_sframe
from stackmark.formats.sframe.spec import AbiArch
from stackmark.unwind_rules import RuleKind, ValueRule
from tests.conftest import require_tool
from tests.support.build import compile_program

LIBC = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")
_FDE = re.compile(r"^\S+ \S+ \S+ FDE cie=\S+ pc=([0-9a-f]+)\.\.\.([0-9a-f]+)")
_ROW = re.compile(r"^  0x([0-9a-f]+): CFA=(RSP|RBP)([+-]\d+): ?(.*)$")
_REGISTER = {"RSP": 7, "RBP": 6}


def _llvm_rows(path: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int, int, int | None]]]:
    """(FDE ranges, rows (pc, CFA register, CFA offset, RBP's CFA offset or None))
    for the rows whose CFA is RSP/RBP + offset; other rows are not compared."""
    out = subprocess.run(
        [require_tool("llvm-dwarfdump-19"), "--eh-frame", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    fdes: list[tuple[int, int]] = []
    rows: list[tuple[int, int, int, int | None]] = []
    for line in out.splitlines():
        fde = _FDE.match(line)
        if fde:
            fdes.append((int(fde.group(1), 16), int(fde.group(2), 16)))
            continue
        row = _ROW.match(line)
        if not row:
            continue
        rules = dict(part.split("=", 1) for part in row.group(4).split(", ") if "=" in part)
        rbp = rules.get("RBP")
        saved = re.fullmatch(r"\[CFA([+-]\d+)\]", rbp) if rbp else None
        if rbp is not None and saved is None:
            continue  # RBP kept in a register or an expression: not SFrame's DEFAULT form
        if rules.get("RIP", "[CFA-8]") != "[CFA-8]":
            continue
        rows.append(
            (
                int(row.group(1), 16),
                _REGISTER[row.group(2)],
                int(row.group(3)),
                int(saved.group(1)) if saved else None,
            )
        )
    return fdes, rows


def _skipped_from_output(stdout: str) -> list[tuple[int, int, str, str]]:
    """(start, end, name, reason) of each function the command reported."""
    found = []
    for line in stdout.splitlines():
        match = re.match(
            r"^  (?:(\S+) )?\[0x([0-9a-f]+), 0x([0-9a-f]+)\): at 0x[0-9a-f]+: (.*)$", line
        )
        if match:
            name, start, end, reason = match.groups()
            found.append((int(start, 16), int(end, 16), name or "", reason))
    return found


def test_generate_on_libc_matches_llvm_rows_and_reports_the_rest(tmp_path: Path) -> None:
    """The command on libc.so.6, its rows checked against llvm-dwarfdump's table."""
    out = tmp_path / "libc.sframe"
    command = ["sframe", "generate", str(LIBC), "--raw", "-o", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", *command],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "from .eh_frame" in proc.stdout and "could not be expressed in SFrame" in proc.stdout
    table = SFrameTable(parse_sframe(out.read_bytes()))
    assert len(table.section.fdes) > 3000
    skipped = _skipped_from_output(proc.stdout)
    assert skipped, proc.stdout
    # __vfork keeps its return address in a register (rdi) across the vfork: a v3 flex FDE
    with ElfFile.open(LIBC) as elf:
        vfork = next(s.value for s in elf.symbols(".dynsym") if s.name == "vfork")
    vfork_fde = table.find_fde(vfork)
    assert vfork_fde is not None and vfork_fde.is_flex
    vfork_rows = [table.row(pc) for pc in range(vfork, vfork_fde.end)]
    assert ValueRule(RuleKind.VALUE, 5, 0) in {row.ra for row in vfork_rows if row}
    # getcontext & co. describe SP with their own rules (a register, the ucontext)
    assert all("the stack pointer is" in reason for _s, _e, _name, reason in skipped)
    fdes, rows = _llvm_rows(LIBC)

    def is_skipped(pc: int) -> bool:
        return any(start <= pc < end for start, end, _name, _reason in skipped)

    compared = 0
    for pc, register, offset, rbp in rows:
        if is_skipped(pc):
            continue
        row = table.row(pc)
        assert row is not None, f"0x{pc:x}: llvm-dwarfdump has a row, the generated SFrame none"
        assert (row.cfa_register, row.cfa_offset, row.cfa_deref) == (register, offset, False), (
            f"0x{pc:x}"
        )
        expected_fp = RuleKind.SAME if rbp is None else RuleKind.AT
        assert row.fp.kind is expected_fp, f"0x{pc:x}"
        if rbp is not None:
            assert row.fp.offset == rbp, f"0x{pc:x}"
        compared += 1
    assert compared > 20000
    # every function with CFI is either described or reported, none lost silently
    lost = [
        hex(start)
        for start, end in fdes
        if end > start and table.find_fde(start) is None and not is_skipped(start)
    ]
    assert lost == []


def test_gnu_args_size_changes_no_row() -> None:
    """The same function with and without DW_CFA_GNU_args_size gives the same FREs."""
    plain = compile_program("cfi_plain.so", ["hostile_args_size.S"], shared=True, flags=())
    marked = compile_program(
        "cfi_args_size.so", ["hostile_args_size.S"], shared=True, flags=("-DARGS_SIZE",)
    )
    shapes = []
    for path in (plain, marked):
        section = generate_from_elf_bytes(path.read_bytes(), AbiArch.AMD64_LITTLE).section
        assert section.fdes, path
        shapes.append([(f.size, [(r.start, r.words) for r in f.fres]) for f in section.fdes])
    assert shapes[0] == shapes[1]
    assert any(len(fres) >= 3 for _size, fres in shapes[0])
