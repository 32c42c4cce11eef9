"""Seed corpora for the fuzz targets, generated from the test fixtures at run time.

Each generator returns a list of inputs (bytes) a target understands: real
markup logs printed by the markup fixture program and the markup lines the
unit tests use; GSYM files converted from fixture programs; the `.sframe`
sections of tests/fixtures/sframe; the CBF and image-map vectors of the unit
tests; Breakpad files; small ELF programs with DWARF (plain, compressed
sections, DWARF 4); Mach-O images and a universal file; HTTP responses a debuginfod server may send.

`seed_directory(target)` writes them once under build/fuzz/<target>/seeds
and rewrites them when the fixture sources or this file change.
"""

from __future__ import annotations

import ast
import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from stackmark.errors import StackmarkError
from tests.support.build import REPO, SOURCES, compile_program

FUZZ_ROOT = REPO / "build" / "fuzz"
_UNIT_TESTS = REPO / "tests" / "unit"


# -- fixture programs --------------------------------------------------------------------


def elf_programs() -> list[Path]:
    """Small programs with inline functions and a data symbol, in three DWARF shapes."""
    sources = ["gsym_inline.c", "gsym_inline_b.c"]
    return [
        compile_program("fuzz_inline", sources, flags=("-g", "-O2")),
        compile_program("fuzz_inline_gz", sources, flags=("-g", "-O2", "-gz=zlib")),
        compile_program("fuzz_inline_dw4", sources, flags=("-gdwarf-4", "-O1")),
    ]


def _string_literals(paths: Iterable[Path], needle: str) -> list[str]:
    """Every string constant containing `needle` in the given Python files."""
    found: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and needle in node.value
            ):
                found.append(node.value)
    return found


def _hex_constants(paths: Iterable[Path]) -> list[bytes]:
    """Every string constant in the given Python files that reads as hex bytes."""
    found: list[bytes] = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    data = bytes.fromhex(node.value)
                except ValueError:
                    continue
                if data:
                    found.append(data)
    return found


# -- per target --------------------------------------------------------------------------


def markup_seeds() -> list[bytes]:
    from tests.support.markup_programs import program_log

    with tempfile.TemporaryDirectory() as work:
        logs = [program_log(variant, Path(work)).log for variant in ("pie", "cpp")]
    seeds: list[bytes] = []
    for log in logs:
        lines = log.splitlines(keepends=True)
        seeds.append(log)
        seeds.extend(b"".join(lines[i : i + 12]) for i in range(0, len(lines), 12))
    literals = _string_literals(sorted(_UNIT_TESTS.glob("test_markup_*.py")), "{{{")
    seeds.extend(text.encode("utf-8", "surrogateescape") for text in literals)
    seeds.append(b"{{{hexdict:\n  a: 0x1000\n  b: 0x2000\n}}}\n")
    seeds.append(b"\x1b[1mbold {{{pc:0x1}}}\x1b[0m \xff\xfe not utf-8\r\n")
    return seeds


def symbolize_seeds() -> list[bytes]:
    return markup_seeds()


def gsym_seeds() -> list[bytes]:
    from stackmark.conversion.from_breakpad import convert_breakpad
    from stackmark.formats.gsym.convert import convert_elf

    seeds = [convert_elf(str(path)).data for path in elf_programs()[:2]]
    cpp = compile_program("fuzz_cpp", ["gsym_cpp.cpp"], compiler="g++", flags=("-g", "-O2"))
    seeds.append(convert_elf(str(cpp)).data)
    with tempfile.TemporaryDirectory() as work:
        seeds.append(_merged_functions_gsym(Path(work)))
        for i, sym in enumerate(breakpad_seeds()):
            path = Path(work) / f"{i}.sym"
            path.write_bytes(sym)
            try:
                seeds.append(convert_breakpad(str(path)).data)
            except StackmarkError:
                continue  # the unit tests' malformed examples
    return seeds


def _merged_functions_gsym(work: Path) -> bytes:
    """A GSYM with merged functions and call sites (InfoTypes 3 and 4), which
    stackmark does not write: llvm-gsymutil-22's, of a program linked with
    identical-code folding."""
    binary = compile_program(
        "fuzz_merged",
        ["gsym_merged.c"],
        flags=("-g", "-O2", "-ffunction-sections"),
        link_flags=("-fuse-ld=gold", "-Wl,--icf=all"),
    )
    tool = shutil.which("llvm-gsymutil-22")
    if tool is None:
        raise RuntimeError("llvm-gsymutil-22 is not installed; `make test` installs it")
    out = work / "merged.gsym"
    convert = ["--convert", str(binary), "--merged-functions", "--dwarf-callsites"]
    subprocess.run(
        [tool, *convert, "--num-threads=1", "-o", str(out)], capture_output=True, check=True
    )
    return out.read_bytes()


def sframe_seeds() -> list[bytes]:
    from stackmark.elf import ElfFile
    from stackmark.formats.sframe.reader import find_sframe_section

    seeds = []
    for path in sorted((REPO / "tests" / "fixtures" / "sframe").iterdir()):
        if "." in path.name or not path.is_file():
            continue
        with ElfFile.open(path) as elf:
            section = find_sframe_section(elf)
            if section is not None:
                seeds.append(elf.section_data(section))
    return seeds


def cbf_seeds() -> list[bytes]:
    from stackmark.formats import cbf
    from stackmark.model import BacktraceFrame, FrameKind

    seeds = _hex_constants([_UNIT_TESTS / "test_cbf.py"])
    frames = [BacktraceFrame(FrameKind.PC, 0x401000)]
    frames += [BacktraceFrame(FrameKind.RA, 0x401000 + 16 * i) for i in range(20)]
    frames += [BacktraceFrame(FrameKind.RA, 0x7FFF0000)] * 40
    frames += [BacktraceFrame(FrameKind.OMITTED, count=1000), BacktraceFrame(FrameKind.ASYNC, 8)]
    seeds.append(cbf.encode(frames))
    return seeds


def imagemap_seeds() -> list[bytes]:
    return _hex_constants([_UNIT_TESTS / "test_imagemap.py"])


def breakpad_seeds() -> list[bytes]:
    literals = _string_literals([_UNIT_TESTS / "test_breakpad.py"], "MODULE ")
    return [text.encode() for text in literals]


def elf_seeds() -> list[bytes]:
    return [path.read_bytes() for path in elf_programs()]


def macho_seeds() -> list[bytes]:
    """Mach-O images built from the Mach-O fixtures: an x86_64 executable, the
    arm64 and 32-bit arm64_32 .dSYM DWARF files, and a universal file of two."""
    from tests.support.macho_build import build_macho, lipo

    with tempfile.TemporaryDirectory(prefix="stackmark-macho-seeds-") as tmp:
        root = Path(tmp)
        x86 = build_macho(root / "x86_64", "x86_64")
        arm = build_macho(root / "arm64", "arm64")
        arm32 = build_macho(root / "arm64_32", "arm64_32")
        fat = lipo([x86.image, arm.dsym_dwarf], root / "fat")
        paths = [x86.image, arm.dsym_dwarf, arm32.dsym_dwarf, fat]
        return [path.read_bytes() for path in paths]


def cfi_seeds() -> list[bytes]:
    return [*elf_seeds()[:1], (REPO / "tests/fixtures/sframe/edge-x86_64-v3").read_bytes()]


def debuginfod_seeds() -> list[bytes]:
    """HTTP responses, each prefixed by one byte choosing the request (see targets)."""
    elf = elf_programs()[0].read_bytes()
    length = f"Content-Length: {len(elf)}\r\n".encode()
    return [
        b"\x00HTTP/1.1 200 OK\r\n" + length + b"\r\n" + elf,
        b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(elf):x}\r\n".encode()
        + elf
        + b"\r\n0\r\n\r\n",
        b"\x00HTTP/1.1 200 OK\r\n" + length + b"\r\n" + elf[: len(elf) // 2],
        b"\x00HTTP/1.1 200 OK\r\nX-DEBUGINFOD-SIZE: 99999999999\r\n\r\n" + elf[:64],
        b"\x00HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
        b"\x00HTTP/1.1 500 Internal Server Error\r\n\r\n",
        b"\x00HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\n\r\n",
        b"\x01HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nint main();\n",
        b"\x00garbage\r\n\r\n",
    ]


SEEDS: dict[str, Callable[[], list[bytes]]] = {
    "markup": markup_seeds,
    "symbolize": symbolize_seeds,
    "gsym": gsym_seeds,
    "sframe": sframe_seeds,
    "cbf": cbf_seeds,
    "imagemap": imagemap_seeds,
    "breakpad": breakpad_seeds,
    "elf": elf_seeds,
    "macho": macho_seeds,
    "cfi": cfi_seeds,
    "debuginfod": debuginfod_seeds,
}


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for path in [Path(__file__), *sorted(SOURCES.iterdir()), *sorted(_UNIT_TESTS.glob("*.py"))]:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def seed_directory(target: str) -> Path:
    """build/fuzz/<target>/seeds, (re)generated when its inputs changed."""
    directory = FUZZ_ROOT / target / "seeds"
    stamp = directory / ".fingerprint"
    fingerprint = _fingerprint()
    if stamp.is_file() and stamp.read_text() == fingerprint:
        return directory
    FUZZ_ROOT.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target}-", dir=FUZZ_ROOT))
    for data in SEEDS[target]():
        name = hashlib.sha1(data).hexdigest()
        (staging / name).write_bytes(data)
    (staging / ".fingerprint").write_text(fingerprint)
    shutil.rmtree(directory, ignore_errors=True)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(directory)
    return directory


def seed_inputs(target: str) -> list[bytes]:
    """The seeds of `target`, as bytes (generating them if needed)."""
    directory = seed_directory(target)
    return [p.read_bytes() for p in sorted(directory.iterdir()) if not p.name.startswith(".")]


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:]:
        seed_directory(name)
