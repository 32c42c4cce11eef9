"""`stackmark sframe generate` against `gas --gsframe` of binutils 2.47.

Each case is a function whose CFI is written by hand at test time: it is
assembled by gas 2.47 twice, with --gsframe (gas's SFrame) and without
(CFI only), and linked by ld 2.47. The functions objdump 2.47 shows in
gas's section must be the ones it shows in the section stackmark generates
from the CFI-only program, row for row; gas repeats a row identical to
the one before it where stackmark does not, so repeated rows are dropped
from both before comparing. Every section stackmark writes is also read
back by objdump 2.47 exactly as stackmark dumps it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from stackmark.cli.main import main
from stackmark.dwarf.cfi import read_cfi
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.formats.sframe.dump import objdump_text
from stackmark.formats.sframe.from_cfi import generate_from_file
from stackmark.formats.sframe.reader import read_sframe_file
from tests.conftest import require_tool
from tests.support.build import compile_program, run

X86_64 = {
    # the return address popped into rcx, then jumped to (x86_64-5)
    "ra_in_register": """
	sub	$0x20,%rsp
	.cfi_adjust_cfa_offset 0x20
	popq	%rcx
	.cfi_register rip, rcx
	.cfi_def_cfa_offset 0
	jmp	*%rcx
""",
    # the return address moved to rbx for a while, then back on the stack (x86_64-6)
    "ra_in_register_and_back": """
	sub	$0x20,%rsp
	.cfi_adjust_cfa_offset 0x20
	nop
	.cfi_register rip, rbx
	mov	%rax, %rdi
	.cfi_offset rip, -8
	nop
	.cfi_def_cfa rsp, 8
	ret
""",
    # the return address said to be at CFA-16 (x86_64-7)
    "ra_at_cfa_minus_16": """
	sub	$0x20,%rsp
	.cfi_adjust_cfa_offset 0x20
	nop
	mov	%rax, %rdi
	.cfi_offset rip, -16
	nop
	.cfi_def_cfa rsp, 8
	nop
	.cfi_offset rip, -8
	ret
""",
    # an rbp frame whose return address goes to rbx, then becomes undefined
    "ra_register_then_undefined": """
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	nop
	.cfi_register rip, rbx
	nop
	.cfi_undefined rip
	.cfi_def_cfa rsp, 8
	ret
""",
    # DW_CFA_restore of registers the CIE gives no rule (gas's pr33170)
    "restore_without_cie_rule": """
	.cfi_def_cfa rbp, 16
	.cfi_offset rbx, -56
	.cfi_offset rbp, -16
	.cfi_offset r12, -48
	.cfi_offset r13, -40
	nop
	.cfi_restore r12
	.cfi_restore r13
	movq	%r12, -32(%rbp)
	.cfi_offset r12, -48
	.cfi_remember_state
	.cfi_restore r12
	nop
	.cfi_restore_state
	nop
""",
}

# Functions gas 2.47 leaves out: their rules cannot be said in SFrame.
X86_64_LEFT_OUT = {
    # `.cfi_startproc simple`: no CFA register at all (common-empty-2)
    "no_cfa_register": (
        "simple",
        """
	nop
	.cfi_adjust_cfa_offset 16
	nop
""",
        "the CFA has no base register",
    ),
    # the return address column is rax (common-empty-3)
    "return_column_0": (
        "",
        """
	.cfi_return_column 0
	nop
	.cfi_adjust_cfa_offset 16
	nop
""",
        "return address column is register 0",
    ),
    # SP saved where an expression says (x86_64-empty-1)
    "sp_expression": (
        "",
        """
	nop
	.cfi_def_cfa_offset 16
	.cfi_escape 0x10,0x7,0x2,0x76,0x78
	nop
""",
        "the stack pointer is saved where a DWARF expression says",
    ),
    # SP undefined (x86_64-empty-4)
    "sp_undefined": (
        "",
        """
	nop
	.cfi_def_cfa_offset 16
	.cfi_undefined rsp
	nop
""",
        "the stack pointer is undefined",
    ),
    # FP = CFA-16, a value (x86_64-empty-2): as a flex word its control would be 0,
    # which is the padding word
    "fp_is_cfa_minus_16": (
        "",
        """
	nop
	.cfi_def_cfa_offset 16
	.cfi_escape 0x14,0x6,0x2
	nop
""",
        "the frame pointer is CFA-16",
    ),
    # SP kept in rcx (x86_64-empty-5)
    "sp_in_register": (
        "",
        """
	nop
	.cfi_def_cfa_offset 16
	.cfi_register rsp, rcx
	nop
""",
        "the stack pointer is kept in register 2",
    ),
}


def _function(name: str, body: str, startproc: str = "") -> str:
    return (
        f"\t.text\n\t.globl {name}\n\t.type {name}, @function\n{name}:\n"
        f"\t.cfi_startproc {startproc}\n{body}\t.cfi_endproc\n\t.size {name}, .-{name}\n"
    )


def _build(tools: Path, where: Path, name: str, source: str, gsframe: bool) -> Path:
    asm = where / f"{name}.s"
    asm.write_text(source)
    obj = where / f"{name}{'-gas' if gsframe else ''}.o"
    run([tools / "as", *(["--gsframe"] if gsframe else []), "-o", obj, asm])
    program = where / f"{name}{'-gas' if gsframe else ''}"
    run([tools / "ld", "-e", name, "-o", program, obj])
    return program


def _objdump(tools: Path, binary: Path) -> str:
    proc = subprocess.run(
        [str(tools / "objdump"), "--sframe", binary.name],
        cwd=binary.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _functions(dump: str) -> list[list[str]]:
    """objdump's function index: per FDE its heading and rows, PCs made relative to
    the function (the two links place it differently), repeated rows dropped."""
    functions: list[list[str]] = []
    start = 0
    for line in dump.splitlines():
        heading = re.match(r"^    func idx \[\d+\]: pc = 0x([0-9a-f]+)(.*)$", line)
        row = re.match(r"^    ([0-9a-f]{16})(.*)$", line)
        if heading:
            start = int(heading.group(1), 16)
            functions.append([heading.group(2)])
        elif functions and row:
            columns = row.group(2).split()
            if len(functions[-1]) < 2 or functions[-1][-1].split()[1:] != columns:
                offset = int(row.group(1), 16) - start
                functions[-1].append(" ".join([f"+{offset:x}", *columns]))
    return functions


def _generate(tools: Path, program: Path) -> tuple[Path, str]:
    out = program.with_name(program.name + "-generated")
    assert main(["sframe", "generate", str(program), "-o", str(out)]) == 0
    dumped = _objdump(tools, out)
    assert objdump_text(read_sframe_file(out), out.name) == dumped  # read back identically
    return out, dumped


@pytest.mark.parametrize("case", sorted(X86_64))
def test_generated_rows_equal_gas_2_47(newer_binutils: Path, case: str, tmp_path: Path) -> None:
    tools = newer_binutils / "bin-sid"
    source = _function(case, X86_64[case])
    gas = _objdump(tools, _build(tools, tmp_path, case, source, gsframe=True))
    _out, ours = _generate(tools, _build(tools, tmp_path, case, source, gsframe=False))
    assert _functions(gas) and _functions(ours) == _functions(gas)


@pytest.mark.parametrize("case", sorted(X86_64_LEFT_OUT))
def test_what_sframe_cannot_say_is_left_out_as_gas_does(
    newer_binutils: Path, case: str, tmp_path: Path
) -> None:
    tools = newer_binutils / "bin-sid"
    startproc, body, reason = X86_64_LEFT_OUT[case]
    source = _function(case, body, startproc)
    gas = _objdump(tools, _build(tools, tmp_path, case, source, gsframe=True))
    assert "func idx" not in gas
    program = _build(tools, tmp_path, case, source, gsframe=False)
    result = generate_from_file(program)
    assert result.section.fdes == []
    assert [(s.name, reason in s.reason) for s in result.skipped] == [(case, True)]
    _out, ours = _generate(tools, program)
    assert "Num FDEs: 0" in ours


def _aarch64_tools(newer_binutils: Path, where: Path) -> Path:
    """as and ld under their plain names, for _build."""
    tools = where / "aarch64-tools"
    tools.mkdir()
    for tool in ("as", "ld", "objdump"):
        (tools / tool).symlink_to(newer_binutils / "bin-sid" / f"aarch64-{tool}")
    return tools


def test_aarch64_pauth_lr_signing_is_left_out_not_fatal(
    newer_binutils: Path, tmp_path: Path
) -> None:
    """DW_CFA_AARCH64_negate_ra_state_with_pc (0x2c, PAuth_LR) is valid CFI: the
    function is left out, as gas 2.47 does, and its neighbour is still generated."""
    tools = _aarch64_tools(newer_binutils, tmp_path)
    signed = """
	.cfi_def_cfa_offset 16
	.cfi_negate_ra_state_with_pc
	nop
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	nop
"""
    plain = """
	sub	sp, sp, #16
	.cfi_def_cfa_offset 16
	add	sp, sp, #16
	.cfi_def_cfa_offset 0
	ret
"""
    source = _function("pauth_lr", signed) + _function("plain", plain)
    gas = _objdump(tools, _build(tools, tmp_path, "plain", source, gsframe=True))
    program = _build(tools, tmp_path, "plain", source, gsframe=False)
    result = generate_from_file(program)
    assert [s.name for s in result.skipped] == ["pauth_lr"]
    assert "PAuth_LR" in result.skipped[0].reason
    _out, ours = _generate(tools, program)
    assert _functions(ours) == _functions(gas) and len(_functions(ours)) == 1


def test_cfi_damage_is_a_format_error_with_the_offset(newer_binutils: Path, tmp_path: Path) -> None:
    """A cut .eh_frame: FormatError naming the section and where, no IndexError."""
    tools = newer_binutils / "bin-sid"
    program = _build(tools, tmp_path, "cut", _function("cut", X86_64["ra_in_register"]), False)
    with ElfFile.open(program) as elf:
        section = elf.section(".eh_frame")
        assert section is not None
        data = elf.section_data(section)
    fdes = read_cfi(data, ".eh_frame", address=section.addr)
    assert [fde.start for fde in fdes] and all(fde.rows() for fde in fdes)
    last = fdes[-1]
    for cut in range(1, len(data) - last.offset):
        damaged = data[: last.offset] + data[last.offset :][:cut]
        try:
            for fde in read_cfi(damaged, ".eh_frame", address=section.addr, source="cut"):
                fde.rows()
        except FormatError as exc:
            assert exc.source == "cut" and exc.offset is not None
            assert exc.reason.startswith(".eh_frame: ")


def test_a_damaged_fde_leaves_out_its_function_only(newer_binutils: Path, tmp_path: Path) -> None:
    """An unknown DW_CFA opcode in one FDE: that function is reported, with the
    section offset, and the other is still generated."""
    tools = newer_binutils / "bin-sid"
    source = _function("first", X86_64["ra_at_cfa_minus_16"]) + _function(
        "second", X86_64["ra_in_register"]
    )
    program = _build(tools, tmp_path, "first", source, gsframe=False)
    with ElfFile.open(program) as elf:
        section = elf.section(".eh_frame")
        assert section is not None
        fdes = read_cfi(elf.section_data(section), ".eh_frame", address=section.addr)
        second = next(fde for fde in fdes if fde.size == 7)
        position = section.offset + second.instructions_offset
    image = bytearray(program.read_bytes())
    image[position] = 0x3F  # no DW_CFA opcode has this number
    damaged = tmp_path / "damaged"
    damaged.write_bytes(bytes(image))
    result = generate_from_file(damaged)
    assert [fde.start for fde in result.section.fdes] == [fdes[0].start]
    (skipped,) = result.skipped
    assert skipped.name == "second"
    offset = second.instructions_offset
    assert f"offset 0x{offset:x}: .eh_frame: unknown call-frame instruction 0x3f" in skipped.reason


def test_cxx_fdes_with_an_lsda_equal_gas(tmp_path: Path) -> None:
    """C++ functions with exception tables carry augmentation data (the LSDA
    pointer) in their FDEs: the instructions start after it. g++ with gas 2.40's
    --gsframe against generate --sframe-version 1, both read by objdump 2.40."""
    objdump = require_tool("objdump")
    flags = ("-O2", "-fomit-frame-pointer")
    gas = compile_program(
        "sframe_cxx_gas", ["markup_cpp.cpp"], compiler="g++", flags=(*flags, "-Wa,--gsframe")
    )
    plain = compile_program("sframe_cxx_plain", ["markup_cpp.cpp"], compiler="g++", flags=flags)
    with ElfFile.open(plain) as elf:
        section = elf.section(".eh_frame")
        assert section is not None
        fdes = read_cfi(elf.section_data(section), ".eh_frame", address=section.addr)
    assert any(fde.cie.augmentation == "zPLR" for fde in fdes)  # personality and LSDA
    out = tmp_path / "generated"
    assert main(["sframe", "generate", str(plain), "-o", str(out), "--sframe-version", "1"]) == 0

    def dumped(binary: Path) -> str:
        return subprocess.run(
            [objdump, "--sframe", str(binary)], capture_output=True, text=True, check=True
        ).stdout

    # gas describes the program's own functions; ld adds its PLT; the C runtime's
    # objects were built without --gsframe, so only the generated section has them
    gas_functions, ours = _functions(dumped(gas)), _functions(dumped(out))
    assert len(gas_functions) > 5 and len(ours) > len(gas_functions)
    assert [f for f in gas_functions if f not in ours] == []
