"""`stackmark sframe` on the situations binutils' own testsuites build.

Each test assembles and links its input with binutils 2.47 at test time
(Debian sid's, from tests/support/binutils.py) and holds stackmark's output
against what that release's objdump prints for the same file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.formats.sframe.reader import read_sframe_file
from stackmark.formats.sframe.writer import encode_sframe, with_version
from tests.support.build import run
from tests.support.s390x_binutils import s390x_binutils

# One function with a frame-pointer prologue: four rows, sp+8 .. fp+16 .. sp+8.
FRAME_FUNCTION = """
	.text
	.globl	{name}
	.type	{name}, @function
{name}:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset 6, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register 6
	popq	%rbp
	.cfi_def_cfa 7, 8
	ret
	.cfi_endproc
	.size	{name}, .-{name}
"""


def _stackmark(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", "sframe", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def _objdump(tools: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools / "objdump"), *map(str, args)], capture_output=True, text=True, check=False
    )


def _assemble(tools: Path, where: Path, name: str, *, gsframe: bool = True) -> Path:
    source = where / f"{name}.s"
    source.write_text(FRAME_FUNCTION.format(name=name))
    obj = where / f"{name}.o"
    run([tools / "as", *(["--gsframe"] if gsframe else []), "-o", obj, source])
    return obj


def _linked(tools: Path, where: Path) -> Path:
    program = where / "program"
    run([tools / "ld", "-e", "_start", "-o", program, _assemble(tools, where, "_start")])
    return program


def test_an_empty_section_prints_what_objdump_prints(newer_binutils: Path, tmp_path: Path) -> None:
    """ld --discard-sframe leaves an empty .sframe (binutils' sframe-command-line-1):
    objdump 2.47 prints the file line, complains on stderr and succeeds; lookup
    finds no function."""
    tools = newer_binutils / "bin-sid"
    objects = [_assemble(tools, tmp_path, name) for name in ("foo", "bar")]
    library = tmp_path / "libfoo.so"
    run([tools / "ld", "-shared", "--discard-sframe", "-o", library, *objects])
    expected = _objdump(tools, "--sframe", library)
    assert expected.returncode == 0 and "Corrupt SFrame" in expected.stderr

    dumped = _stackmark("dump", library)
    assert (dumped.returncode, dumped.stdout) == (0, expected.stdout)
    assert "Corrupt SFrame" in dumped.stderr and "Traceback" not in dumped.stderr

    readelf = subprocess.run(
        [str(tools / "readelf"), "--sframe", str(library)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "has no debugging data" in readelf
    like_readelf = _stackmark("dump", "--like", "readelf", library)
    assert (like_readelf.returncode, like_readelf.stdout) == (0, readelf)

    looked_up = _stackmark("lookup", library, "0x1000")
    assert looked_up.returncode == 1
    assert looked_up.stdout == "0x1000: no SFrame row covers this address\n"


def test_section_option_reads_a_renamed_section(newer_binutils: Path, tmp_path: Path) -> None:
    """objcopy --rename-section .sframe=.sframe2 (binutils' objdump-sframe-01):
    --section .sframe2 dumps as objdump --sframe=.sframe2 and looks up the same rows."""
    tools = newer_binutils / "bin-sid"
    program = _linked(tools, tmp_path)
    renamed = tmp_path / "renamed"
    run([tools / "objcopy", "--rename-section", ".sframe=.sframe2", program, renamed])
    expected = _objdump(tools, "--sframe=.sframe2", renamed)
    assert "Contents of the SFrame section .sframe2:" in expected.stdout

    dumped = _stackmark("dump", "--section", ".sframe2", renamed)
    assert (dumped.returncode, dumped.stdout) == (0, expected.stdout)
    readelf = subprocess.run(
        [str(tools / "readelf"), "--sframe=.sframe2", str(renamed)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    like_readelf = _stackmark("dump", "--like", "readelf", "--section", ".sframe2", renamed)
    assert (like_readelf.returncode, like_readelf.stdout) == (0, readelf)

    start = read_sframe_file(program).fdes[0].start
    looked_up = _stackmark("lookup", "--section", ".sframe2", renamed, hex(start + 4))
    assert looked_up.returncode == 0
    assert looked_up.stdout.splitlines()[1].strip() == "CFA = rbp+16; RA = *(CFA-8); FP = *(CFA-16)"

    missing = _stackmark("dump", "--section", ".sframe3", renamed)
    assert missing.returncode == 1 and "no .sframe3 section" in missing.stderr


def test_v2_with_pcrel_starts_is_shown_by_default(newer_binutils: Path, tmp_path: Path) -> None:
    """A v2 section as binutils 2.45 writes it (flags SORTED | FUNC_START_PCREL),
    which objdump 2.44 refuses: the default dump is objdump 2.47's."""
    tools = newer_binutils / "bin-sid"
    program = _linked(tools, tmp_path)
    v2 = tmp_path / "v2.sframe"
    v2.write_bytes(encode_sframe(with_version(read_sframe_file(program), 2)))
    errata = tmp_path / "errata"
    run([tools / "objcopy", f"--update-section=.sframe={v2}", program, errata])
    expected = _objdump(tools, "--sframe", errata)
    assert "SFRAME_VERSION_2" in expected.stdout
    assert "SFRAME_F_FDE_FUNC_START_PCREL" in expected.stdout

    dumped = _stackmark("dump", errata)
    assert (dumped.returncode, dumped.stdout) == (0, expected.stdout)
    refused = _stackmark("dump", "--style=2.44", errata)
    assert refused.returncode == 1 and "flags 0x5" in refused.stderr


AARCH64_FUNCTION = """
	.text
	.globl	{name}
	.type	{name}, @function
{name}:
	.cfi_startproc
	stp	x29, x30, [sp, -16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	ldp	x29, x30, [sp], 16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	{name}, .-{name}
"""

S390X_FUNCTION = """
	.text
	.globl	{name}
	.type	{name}, @function
{name}:
	.cfi_startproc
	stmg	%r11,%r15,88(%r15)
	.cfi_offset 11, -72
	.cfi_offset 14, -48
	.cfi_offset 15, -40
	aghi	%r15,-160
	.cfi_def_cfa_offset 320
	lmg	%r11,%r15,248(%r15)
	.cfi_restore 15
	.cfi_restore 14
	.cfi_restore 11
	.cfi_def_cfa_offset 160
	br	%r14
	.cfi_endproc
	.size	{name}, .-{name}
"""


def _relocatable(tools: dict[str, Path], source: str, where: Path) -> list[Path]:
    """Two objects of two functions each (the second function's start is a relocation
    against .text plus its offset), then both merged by ld -r."""
    objects = []
    for part in ("a", "b"):
        asm = where / f"{part}.s"
        asm.write_text(source.format(name=f"{part}1") + source.format(name=f"{part}2"))
        objects.append(where / f"{part}.o")
        run([tools["as"], "--gsframe", "-o", objects[-1], asm])
    merged = where / "merged.o"
    run([tools["ld"], "-r", "-o", merged, *objects])
    return [*objects, merged]


def _architectures(newer_binutils: Path) -> dict[str, tuple[dict[str, Path], str]]:
    sid = newer_binutils / "bin-sid"
    s390x = s390x_binutils(newer_binutils)
    return {
        "x86_64": ({t: sid / t for t in ("as", "ld", "objdump")}, FRAME_FUNCTION),
        "aarch64": ({t: sid / f"aarch64-{t}" for t in ("as", "ld", "objdump")}, AARCH64_FUNCTION),
        "s390x": ({t: s390x / t for t in ("as", "ld", "objdump")}, S390X_FUNCTION),
    }


@pytest.mark.parametrize("arch", ["x86_64", "aarch64", "s390x"])
def test_relocatable_objects_dump_as_objdump_2_47(
    newer_binutils: Path, arch: str, tmp_path: Path
) -> None:
    """In a .o and in ld -r output a v3 FDE's start is a PC-relative field completed
    by a relocation in .rela.sframe: objdump applies it (pc = 0x0, then the second
    function's offset), and so does stackmark."""
    tools, source = _architectures(newer_binutils)[arch]
    for obj in _relocatable(tools, source, tmp_path):
        expected = subprocess.run(
            [str(tools["objdump"]), "--sframe", str(obj)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "pc = 0x0," in expected
        dumped = _stackmark("dump", obj)
        assert (dumped.returncode, dumped.stdout) == (0, expected), obj.name
        looked_up = _stackmark("lookup", obj, "0x1")
        assert looked_up.returncode == 0 and ": FDE 0 " in looked_up.stdout
        assert "[0x0, " in looked_up.stdout, looked_up.stdout
    starts = [fde.start for fde in read_sframe_file(tmp_path / "merged.o").fdes]
    assert starts[0] == 0 and len(set(starts)) == 4  # ld -r put b1, b2 after a1, a2


def test_generate_on_an_object_file_relocates_eh_frame(
    newer_binutils: Path, tmp_path: Path
) -> None:
    """generate on a .o reads .eh_frame's relocated pc_begin fields: the functions
    start where gas's own SFrame for the same source says (0x0 and after it)."""
    tools = newer_binutils / "bin-sid"
    source = tmp_path / "two.s"
    source.write_text(FRAME_FUNCTION.format(name="f1") + FRAME_FUNCTION.format(name="f2"))
    gas, plain = tmp_path / "gas.o", tmp_path / "plain.o"
    run([tools / "as", "--gsframe", "-o", gas, source])
    run([tools / "as", "-o", plain, source])
    out = tmp_path / "generated.o"
    generated = _stackmark("generate", plain, "-o", out)
    assert generated.returncode == 0, generated.stderr
    expected = [(f.start, f.size) for f in read_sframe_file(gas).fdes]
    assert expected == [(0, 6), (6, 6)]
    assert [(f.start, f.size) for f in read_sframe_file(out).fdes] == expected
    ours = _objdump(tools, "--sframe", out).stdout
    theirs = _objdump(tools, "--sframe", gas).stdout
    assert ours.split("Function Index")[1] == theirs.split("Function Index")[1]
