"""`stackmark gsym convert` on Mach-O files, against llvm-gsymutil-19 --convert.

The fixtures are built at test time (tests/support/macho_build.py): thin
x86_64 and arm64 executables (also ones calling a dylib through stubs) and
dylibs, their .dSYM bundles, the objects they were linked from, a 32-bit
arm64_32 image, 32-bit i386 and armv7 objects, and universal files. For
each input both tools write their GSYM files next to each other; the files
must be the same bytes and the logs the same lines (the tools name their
own output files, so each tool gets the same output name in its own
directory).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gsymutil import llvm_convert_run
from tests.support.macho_build import (
    DEBUG_SOURCES,
    OBJECT_TARGETS,
    MachOBuild,
    build_macho,
    compile_macho_object,
    lipo,
)

STACKMARK = [sys.executable, "-m", "stackmark"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, MachOBuild]:
    root = tmp_path_factory.mktemp("macho")
    return {
        "x86_64": build_macho(root / "x86_64", "x86_64"),
        "arm64": build_macho(root / "arm64", "arm64"),
        "x86_64-dylib": build_macho(root / "x86_64-dylib", "x86_64", dylib=True),
        "arm64-dylib": build_macho(root / "arm64-dylib", "arm64", dylib=True),
        "arm64_32": build_macho(root / "arm64_32", "arm64_32"),
        "x86_64-imports": build_macho(root / "x86_64-imports", "x86_64", imports=True),
        "arm64-imports": build_macho(root / "arm64-imports", "arm64", imports=True),
    }


def stackmark_convert(
    binary: Path, out: Path, *options: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STACKMARK, "gsym", "convert", str(binary), "-o", str(out), "-j", "1", *options],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def both(binary: Path, tmp_path: Path, *options: str) -> tuple[Path, Path, str, str]:
    """Convert with both tools into tmp_path/{llvm,ours}/out.gsym, each run from its
    own directory so that the logs name the same relative output paths.

    Returns the two directories and the two logs; both runs must succeed."""
    llvm_dir, our_dir = tmp_path / "llvm", tmp_path / "ours"
    llvm_dir.mkdir()
    our_dir.mkdir()
    theirs = llvm_convert_run(binary, Path("out.gsym"), *options, cwd=llvm_dir)
    mine = stackmark_convert(binary, Path("out.gsym"), *options, cwd=our_dir)
    assert theirs.returncode == 0, theirs.stderr
    assert mine.returncode == 0, mine.stderr
    return llvm_dir, our_dir, theirs.stdout, mine.stdout


def assert_same_outputs(llvm_dir: Path, our_dir: Path) -> list[str]:
    """Both directories hold the same GSYM files, byte for byte; returns their names."""
    names = sorted(p.name for p in llvm_dir.iterdir())
    assert names == sorted(p.name for p in our_dir.iterdir())
    for name in names:
        assert (our_dir / name).read_bytes() == (llvm_dir / name).read_bytes(), name
    return names


INPUTS = {
    "executable": lambda b: b.image,
    "dsym-bundle": lambda b: b.dsym,
    "dsym-dwarf-file": lambda b: b.dsym_dwarf,
    "object-file": lambda b: b.objects[0],
}


@pytest.mark.parametrize("kind", sorted(INPUTS))
@pytest.mark.parametrize(
    "build",
    [
        "x86_64",
        "arm64",
        "x86_64-dylib",
        "arm64-dylib",
        "arm64_32",
        "x86_64-imports",
        "arm64-imports",
    ],
)
def test_thin_mach_o_converts_to_llvm_gsymutils_bytes_and_log(
    builds: dict[str, MachOBuild], build: str, kind: str, tmp_path: Path
) -> None:
    binary = INPUTS[kind](builds[build])
    llvm_dir, our_dir, theirs, mine = both(binary, tmp_path)
    assert mine == theirs
    assert assert_same_outputs(llvm_dir, our_dir) == ["out.gsym"]


def test_a_dsym_gives_dwarf_functions_with_inline_frames_and_mangled_names(
    builds: dict[str, MachOBuild], tmp_path: Path
) -> None:
    llvm_dir, _, theirs, _ = both(builds["arm64"].dsym, tmp_path)
    # The fixture's functions with DWARF (top, entry, geometry::scaled, twice_cpp),
    # so the comparison above is not only about symbol tables.
    assert "Output file (aarch64): out.gsym\nLoaded 4 functions from DWARF.\n" in theirs
    dump = subprocess.run(
        [*STACKMARK, "gsym", "dump", str(llvm_dir / "out.gsym")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"_ZN8geometry6scaledEi"' in dump
    assert "macho_inline.c" in dump
    assert "_ZNK8geometry3BoxIiE6volumeEv called from " in dump  # an inlined call


@pytest.mark.parametrize("source", DEBUG_SOURCES)
@pytest.mark.parametrize("arch", sorted(OBJECT_TARGETS))
def test_32_bit_objects_convert_to_llvm_gsymutils_bytes_and_log(
    arch: str, source: str, tmp_path: Path
) -> None:
    obj = compile_macho_object(tmp_path / "build", arch, source)
    llvm_dir, our_dir, theirs, mine = both(obj, tmp_path)
    assert mine == theirs
    assert "Loaded 0 functions from DWARF." not in mine
    assert_same_outputs(llvm_dir, our_dir)


def test_a_universal_file_of_32_bit_objects_is_named_i386_and_armv7(tmp_path: Path) -> None:
    objects = [
        compile_macho_object(tmp_path / "build", arch, "macho_inline.c")
        for arch in ("i386", "armv7")
    ]
    fat = lipo(objects, tmp_path / "fat.o")
    llvm_dir, our_dir, theirs, mine = both(fat, tmp_path)
    assert mine == theirs
    assert assert_same_outputs(llvm_dir, our_dir) == ["out.gsym.armv7", "out.gsym.i386"]


def test_a_universal_file_gives_one_gsym_per_slice_named_by_arch(
    builds: dict[str, MachOBuild], tmp_path: Path
) -> None:
    fat = lipo([builds["x86_64"].dsym_dwarf, builds["arm64"].dsym_dwarf], tmp_path / "fat")
    llvm_dir, our_dir, theirs, mine = both(fat, tmp_path)
    assert mine == theirs
    assert "Output file (arm64): out.gsym.arm64\n" in mine
    assert assert_same_outputs(llvm_dir, our_dir) == ["out.gsym.arm64", "out.gsym.x86_64"]


@pytest.mark.parametrize(
    "options",
    [
        ("--arch", "arm64"),
        ("--arch", "x86_64"),
        ("--arch", "0x01000007"),  # CPU_TYPE_X86_64, as a number
        ("--arch", "16777228"),  # CPU_TYPE_ARM64 in decimal
        ("--arch", "arm64", "--arch", "x86_64"),
    ],
)
def test_arch_picks_slices_of_a_universal_file_as_llvm_does(
    builds: dict[str, MachOBuild], tmp_path: Path, options: tuple[str, ...]
) -> None:
    fat = lipo([builds["x86_64"].image, builds["arm64"].dsym_dwarf], tmp_path / "fat")
    llvm_dir, our_dir, theirs, mine = both(fat, tmp_path, *options)
    assert mine == theirs
    assert_same_outputs(llvm_dir, our_dir)


def test_arch_that_matches_no_slice_is_an_error_after_the_input_line(
    builds: dict[str, MachOBuild], tmp_path: Path
) -> None:
    fat = lipo([builds["x86_64"].image, builds["arm64"].image], tmp_path / "fat")
    theirs = llvm_convert_run(fat, tmp_path / "llvm.gsym", "--arch", "armv7")
    mine = stackmark_convert(fat, tmp_path / "ours.gsym", "--arch", "armv7")
    assert theirs.returncode == mine.returncode == 1
    assert mine.stdout == theirs.stdout == f"Input file: {fat}\n"
    assert f"{fat}: no matching architectures found" in mine.stderr
    assert not (tmp_path / "ours.gsym").exists()


def test_a_dsym_bundle_without_objects_is_named_in_the_error_as_in_llvm(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "empty.dSYM"
    (bundle / "Contents").mkdir(parents=True)
    for reason in (
        "expected directory 'Contents/Resources/DWARF' in dSYM bundle",
        "no objects found in dSYM bundle",
    ):
        theirs = llvm_convert_run(bundle, tmp_path / "out.gsym")
        mine = stackmark_convert(bundle, tmp_path / "out.gsym")
        assert theirs.returncode == mine.returncode == 1
        assert mine.stdout == theirs.stdout == f"Input file: {bundle}\n"
        assert f"error: {bundle}: {reason}" in theirs.stderr
        assert f"error: {bundle}: {reason}" in mine.stderr
        assert "Traceback" not in mine.stderr
        (bundle / "Contents" / "Resources" / "DWARF").mkdir(parents=True, exist_ok=True)


def test_a_slice_converted_by_several_processes_gives_the_same_bytes(
    builds: dict[str, MachOBuild], tmp_path: Path
) -> None:
    """With -j 2 the workers open the slice again themselves (two compile units)."""
    fat = lipo([builds["x86_64"].dsym_dwarf, builds["arm64"].dsym_dwarf], tmp_path / "fat")
    theirs = llvm_convert_run(fat, tmp_path / "llvm.gsym", "--arch", "arm64")
    assert theirs.returncode == 0
    proc = stackmark_convert(fat, tmp_path / "ours.gsym", "--arch", "arm64", "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert "Loaded 4 functions from DWARF." in proc.stdout
    assert (tmp_path / "ours.gsym").read_bytes() == (tmp_path / "llvm.gsym").read_bytes()


def test_verify_finds_the_dwarf_in_a_dsym_or_the_slice_with_the_gsyms_uuid(
    builds: dict[str, MachOBuild], tmp_path: Path
) -> None:
    x86, arm = builds["x86_64"], builds["arm64"]
    gsym = tmp_path / "x86_64.gsym"
    assert stackmark_convert(x86.dsym, gsym).returncode == 0
    fat = lipo([arm.dsym_dwarf, x86.dsym_dwarf], tmp_path / "fat")

    def verify(binary: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*STACKMARK, "gsym", "verify", str(gsym), str(binary)],
            capture_output=True,
            text=True,
            check=False,
        )

    for binary in (x86.dsym, fat):
        proc = verify(binary)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.endswith("functions against the DWARF: OK\n")
    # The arm64 DWARF is another program's: verify says so.
    assert "mismatching addresses" in verify(arm.dsym).stdout
    # A universal file without that UUID is named.
    other = lipo([arm.dsym_dwarf, builds["arm64_32"].image], tmp_path / "other")
    proc = verify(other)
    assert proc.returncode == 1
    assert f"{other}: no slice has the GSYM's UUID" in proc.stderr
