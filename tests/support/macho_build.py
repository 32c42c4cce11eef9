"""Build Mach-O fixtures at test time, without an Apple SDK.

clang-19 compiles the freestanding sources in tests/fixtures/src for an
Apple target, ld64.lld-19 links them (entry point `_entry`, no libSystem),
dsymutil-19 gathers the DWARF of the objects into a .dSYM bundle, and
llvm-lipo-19 joins images into a universal (fat) file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require_tool
from tests.support.build import SOURCES, run

TARGETS = {
    "x86_64": ("x86_64-apple-macos11", "macos", "11.0"),
    "arm64": ("arm64-apple-macos11", "macos", "11.0"),
    # A 32-bit Mach-O (mach_header, nlist) that ld64.lld can link.
    "arm64_32": ("arm64_32-apple-watchos7", "watchos", "7.0"),
}

DEBUG_SOURCES = ("macho_inline.c", "macho_names.cpp")
PLAIN_SOURCES = ("macho_nodebug.c",)
BINDER_SOURCES = ("macho_stub_binder.c",)


@dataclass(frozen=True)
class MachOBuild:
    """One linked image, its objects and its .dSYM bundle."""

    image: Path
    objects: list[Path]
    dsym: Path

    @property
    def dsym_dwarf(self) -> Path:
        """The DWARF file inside the bundle."""
        return self.dsym / "Contents" / "Resources" / "DWARF" / self.image.name


def build_macho(
    directory: Path, arch: str, *, dylib: bool = False, imports: bool = False
) -> MachOBuild:
    """Compile the Mach-O fixture sources for `arch`, link, and make the .dSYM.

    `imports`: macho_nodebug.c goes into a dylib of its own that the image
    calls through stubs (__stubs, __stub_helper, undefined symbols)."""
    triple, platform, version = TARGETS[arch]
    directory.mkdir(parents=True, exist_ok=True)
    objects: list[Path] = []
    plain: list[Path] = []
    for source in (*DEBUG_SOURCES, *PLAIN_SOURCES, *(BINDER_SOURCES if imports else ())):
        compiler = "clang++-19" if source.endswith(".cpp") else "clang-19"
        debug = ["-g"] if source in DEBUG_SOURCES else []
        obj = directory / f"{Path(source).stem}-{arch}.o"
        run(
            [
                require_tool(compiler),
                "-target",
                triple,
                *debug,
                "-O2",
                "-ffreestanding",
                "-fno-exceptions",
                "-c",
                SOURCES / source,
                "-o",
                obj,
            ],
            cwd=directory,
        )
        (objects if source in DEBUG_SOURCES or not imports else plain).append(obj)
    linked = list(objects)
    if imports:
        library = directory / f"libnodebug-{arch}.dylib"
        run(
            [
                require_tool("ld64.lld-19"),
                "-arch",
                arch,
                "-platform_version",
                platform,
                version,
                version,
                "-dylib",
                "-install_name",
                "@rpath/libnodebug.dylib",
                "-o",
                library,
                *plain,
            ],
            cwd=directory,
        )
        linked.append(library)
    name = f"libprog-{arch}.dylib" if dylib else f"prog-{arch}"
    image = directory / name
    kind = ["-dylib"] if dylib else ["-e", "_entry"]
    run(
        [
            require_tool("ld64.lld-19"),
            "-arch",
            arch,
            "-platform_version",
            platform,
            version,
            version,
            *kind,
            "-o",
            image,
            *linked,
        ],
        cwd=directory,
    )
    dsym = directory / f"{name}.dSYM"
    run([require_tool("dsymutil-19"), image, "-o", dsym], cwd=directory)
    return MachOBuild(image, objects, dsym)


OBJECT_TARGETS = {
    # 32-bit Mach-O objects for CPUs ld64.lld cannot link for.
    "i386": "i386-apple-macos10.13",
    "armv7": "armv7-apple-ios9",
    "armv7k": "armv7k-apple-watchos4",
}


def compile_macho_object(directory: Path, arch: str, source: str) -> Path:
    """One fixture source compiled with -g for `arch` (OBJECT_TARGETS), not linked."""
    directory.mkdir(parents=True, exist_ok=True)
    compiler = "clang++-19" if source.endswith(".cpp") else "clang-19"
    obj = directory / f"{Path(source).stem}-{arch}.o"
    run(
        [
            require_tool(compiler),
            "-target",
            OBJECT_TARGETS[arch],
            "-g",
            "-O2",
            "-ffreestanding",
            "-fno-exceptions",
            "-c",
            SOURCES / source,
            "-o",
            obj,
        ],
        cwd=directory,
    )
    return obj


def lipo(inputs: list[Path], out: Path) -> Path:
    """A universal file of the thin `inputs`."""
    run([require_tool("llvm-lipo-19"), "-create", *inputs, "-output", out])
    return out
