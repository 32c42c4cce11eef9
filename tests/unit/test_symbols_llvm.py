"""Code addresses through the Symbolizer, against llvm-symbolizer-19 on the same binaries.

For every fixture variant, every line-table address and the first, middle
and last byte of every function symbol are looked up; the whole inline
chain (function, file, line, column of each frame) must equal llvm's.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stackmark.demangle import demangle_symbol
from stackmark.elf import ElfFile
from stackmark.model import Module
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions
from tests.conftest import require_tool
from tests.support import sym_builds
from tests.support.build import build_id_of
from tests.support.dwz import dwz_compressed, dwz_in_debug_directory
from tests.support.sanitizers import OURS
from tests.support.symbolizer_oracle import (
    as_llvm_frame,
    describe,
    function_addresses,
    line_table_addresses,
    llvm_frames,
    mismatches,
)

MAX_ADDRESSES = 1500


def addresses_for(binary: Path, dwarf_file: Path | None = None) -> list[int]:
    found = set(function_addresses(binary))
    if dwarf_file is not None:
        found.update(line_table_addresses(dwarf_file, limit=MAX_ADDRESSES))
    # plus places with nothing: below the first section, past the end, in data
    found.update((0x0, 0x10, 0x7FFFFFFF0000))
    return sorted(found)


def ours(symbolizer: Symbolizer, module: Module, addresses: list[int]) -> dict[int, list]:  # type: ignore[type-arg]
    return {a: [as_llvm_frame(f) for f in symbolizer.code(module, a).frames] for a in addresses}


def check(binary: Path, dwarf_file: Path | None, objects: list[Path] | None = None) -> int:
    require_tool("llvm-symbolizer-19")
    addresses = addresses_for(binary, dwarf_file)
    expected = llvm_frames(binary, addresses)
    symbolizer = Symbolizer(
        SymbolizerOptions(debug_file_directories=[], objects=[str(p) for p in objects or [binary]])
    )
    module = Module(0, binary.name, build_id_of(binary))
    resolution = symbolizer.resolve(module)
    assert resolution.error is None, resolution.searched
    diffs = mismatches(expected, ours(symbolizer, module, addresses))
    assert not diffs, f"{len(diffs)} of {len(addresses)} differ:\n{describe(diffs)}"
    return sum(1 for frames in expected.values() if len(frames) > 1)


VARIANTS = {
    "c-O0": lambda: sym_builds.c_program("-g", "-O0", name="sym_inline_O0"),
    "c-O2-pie": lambda: sym_builds.c_program(),
    "c-O2-nopie": lambda: sym_builds.c_program("-g", "-O2", "-no-pie", name="sym_inline_nopie"),
    "c-O2-dwarf4": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-4", name="sym_inline_d4"),
    "c-O2-gz": lambda: sym_builds.c_program("-g", "-O2", "-gz", name="sym_inline_gz"),
    "c-O2-dwarf2": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-2", name="sym_inline_d2"),
    "c-O2-dwarf3": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-3", name="sym_inline_d3"),
    "c-O2-aarch64": sym_builds.aarch64_program,
    "c-m32": sym_builds.freestanding_32bit,
    "c-m32-dwarf4": lambda: sym_builds.freestanding_32bit("-gdwarf-4"),
    "c-O2-dwarf64": lambda: sym_builds.c_program(
        "-g", "-O2", "-gdwarf64", name="sym_inline_dwarf64"
    ),
    "cpp-O0": lambda: sym_builds.cpp_program("-g", "-O0", name="sym_templates_O0"),
    "cpp-O2": lambda: sym_builds.cpp_program(),
    "cpp-O2-dwarf4-nopie": lambda: sym_builds.cpp_program(
        "-g", "-O2", "-gdwarf-4", "-no-pie", name="sym_templates_d4_nopie"
    ),
    "cpp-local-classes": sym_builds.local_classes_program,
    "cpp-local-classes-dwarf4": lambda: sym_builds.local_classes_program(
        "-g", "-O2", "-gdwarf-4", name="sym_local_classes_d4"
    ),
    "lib": sym_builds.shared_library,
    "lib-user": sym_builds.library_user,
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_inline_chains_match_llvm(variant: str) -> None:
    binary = VARIANTS[variant]()
    inlined = check(binary, binary)
    if "O2" in variant:
        assert inlined > 5, "the fixture should produce inline chains at -O2"


def test_symbol_table_only_matches_llvm() -> None:
    binary = sym_builds.c_program("-O2", name="sym_inline_nodebug")
    check(binary, None)


def test_stripped_binary_with_debuglink_matches_llvm() -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    assert check(binary, debug) > 5


def test_stripped_local_classes_match_llvm() -> None:
    """No symbol table to fall back on: every member function of a local class must be
    found in the DWARF, wherever gcc put its DIE."""
    binary, debug = sym_builds.local_classes_stripped()
    assert check(binary, debug) > 3


def test_debug_file_alone_matches_llvm() -> None:
    _, debug = sym_builds.stripped_with_debuglink()
    check(debug, debug)


@pytest.mark.parametrize("source", [sym_builds.C_SOURCE, sym_builds.CPP_SOURCE])
@pytest.mark.parametrize("version", ["-gdwarf-5", "-gdwarf-4"])
def test_split_dwarf_matches_llvm(source: str, version: str) -> None:
    binary = sym_builds.split_dwarf(source, "-g", "-O2", version)
    assert check(binary, binary) > 5


def test_split_dwarf_without_its_dwo_falls_back_to_line_tables_like_llvm(tmp_path: Path) -> None:
    binary = sym_builds.split_dwarf(sym_builds.C_SOURCE, "-g", "-O2", directory=tmp_path)
    for dwo in tmp_path.glob("*.dwo"):
        dwo.unlink()
    assert check(binary, binary) == 0


def test_demangled_names_match_llvm() -> None:
    binary = sym_builds.cpp_program()
    addresses = addresses_for(binary, binary)
    expected = llvm_frames(binary, addresses, demangle=True)
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[], objects=[str(binary)]))
    module = Module(0, binary.name, build_id_of(binary))
    actual = {
        a: [
            as_llvm_frame(f, demangle_symbol(f.function) if f.function else "")
            for f in symbolizer.code(module, a).frames
        ]
        for a in addresses
    }
    diffs = mismatches(expected, actual)
    assert not diffs, describe(diffs)
    names = {frame[0] for frames in expected.values() for frame in frames}
    assert any("'lambda" in n for n in names) and any(">>" in n for n in names)


# --- the address mode of the user-facing command, llvm-symbolizer-stackmark -----------------

ADDRESS_MODE_VARIANTS = ["c-O2-pie", "cpp-O2", "nodebug", "lib-user"]


def address_mode_input(variant: str) -> tuple[Path, list[int]]:
    """A fixture build and its addresses (line-table ones, bounded; functions; none)."""
    if variant == "nodebug":
        binary = sym_builds.c_program("-O2", name="sym_inline_nodebug")
        return binary, addresses_for(binary, None)
    binary = VARIANTS[variant]()
    return binary, addresses_for(binary, binary)[:600]


def data_addresses(binary: Path) -> list[int]:
    """The first and last byte of every data object nm lists."""
    listing = subprocess.run(
        ["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    found: set[int] = set()
    for fields in map(str.split, listing.splitlines()):
        if len(fields) == 4 and fields[2] in "dDbB":
            start, size = int(fields[0], 16), int(fields[1], 16)
            found.update((start, start + max(size, 1) - 1))
    return sorted(found)


def both(arguments: list[str], stdin: str = "") -> tuple[str, str]:
    """(llvm-symbolizer-19's stdout, llvm-symbolizer-stackmark's) for the same command line
    and input; the second is the console script installed beside this Python."""

    def run(tool: str) -> str:
        return subprocess.run(
            [tool, *arguments], input=stdin, capture_output=True, text=True, check=True
        ).stdout

    return run(require_tool("llvm-symbolizer-19")), run(str(OURS))


@pytest.mark.parametrize("variant", ADDRESS_MODE_VARIANTS)
def test_address_mode_output_is_llvm_symbolizers(variant: str) -> None:
    """`llvm-symbolizer-stackmark --obj` prints exactly what llvm-symbolizer-19 prints."""
    binary, addresses = address_mode_input(variant)
    theirs, ours = both([f"--obj={binary}"], "".join(f"0x{a:x}\n" for a in addresses))
    assert theirs.count("\n\n") == len(addresses)
    assert ours == theirs


@pytest.mark.parametrize("style", [[], ["--pretty-print"], ["--no-inlines", "--basenames"]])
@pytest.mark.parametrize("variant", ADDRESS_MODE_VARIANTS)
def test_json_output_is_llvm_symbolizers(variant: str, style: list[str]) -> None:
    """--output-style=JSON: CODE (with each frame's start and discriminator), DATA and
    FRAME records, byte for byte llvm-symbolizer-19's, a line each or indented."""
    binary, addresses = address_mode_input(variant)
    requests = [f"0x{a:x}" for a in addresses]
    requests += [f"DATA 0x{a:x}" for a in data_addresses(binary)]
    requests += [f"FRAME 0x{a:x}" for a in addresses[::10]]
    theirs, ours = both([f"--obj={binary}", "--output-style=JSON", *style], "\n".join(requests))
    compact = theirs.replace(" ", "").replace("\n", "")
    assert compact.count('"ModuleName"') == len(requests)
    assert re.search('"Data":{"Name":"[^"]', compact)
    if variant != "nodebug":
        assert re.search('"StartFileName":"[^"]', compact) and '"StartAddress":"0x' in compact
    assert ours == theirs


def test_json_discriminators_of_inlined_calls_are_llvm_symbolizers(tmp_path: Path) -> None:
    """An outer frame's Discriminator is its inlined call's DW_AT_GNU_discriminator."""
    binary = sym_builds.inlined_call_discriminators(tmp_path)
    requests = "".join(f"0x{a:x}\n" for a in addresses_for(binary, binary))
    theirs, ours = both([f"--obj={binary}", "--output-style=JSON"], requests)
    assert '"Discriminator":3' in theirs
    assert ours == theirs


def test_json_answers_to_addresses_on_the_command_line_are_one_array() -> None:
    binary, addresses = address_mode_input("c-O2-pie")
    chosen = [f"0x{a:x}" for a in addresses[::7]]
    for style in ([], ["-p"]):
        theirs, ours = both([f"--obj={binary}", "--output-style=JSON", *style, *chosen])
        assert theirs.startswith("[") and theirs.count('"Address"') == len(chosen)
        assert ours == theirs, style


def test_json_errors_are_llvm_symbolizers(tmp_path: Path) -> None:
    """A missing or unreadable module: llvm's Error record the first time, an empty answer
    after; a line without an address: an empty Symbol list; a missing --obj: one error
    record and exit status 1."""
    binary = sym_builds.c_program()
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not an ELF file\n")
    requests = [
        f"{binary} 0x1139",
        "/no/such/module 0x10",
        "/no/such/module 0x20",
        "DATA /no/such/module 0x20",
        "FRAME /no/such/module 0x20",
        f"{text_file} 0x10",
        f"DATA {text_file} 0x10",
        f"{tmp_path} 0x10",
        "0x10",
        f"{binary} 0xzz",
    ]
    theirs, ours = both(["--output-style=JSON"], "\n".join(requests))
    assert '"Error":{"Message":"No such file or directory"}' in theirs
    assert ours == theirs
    for style in ([], ["-p"]):
        args = [f"--obj={tmp_path / 'missing'}", "--output-style=JSON", *style, "0x10"]
        llvm = subprocess.run([require_tool("llvm-symbolizer-19"), *args], capture_output=True)
        mine = subprocess.run([str(OURS), *args], capture_output=True)
        assert (mine.returncode, mine.stdout) == (llvm.returncode, llvm.stdout) == (1, llvm.stdout)


def test_build_id_finds_the_module_in_a_debug_file_directory_as_llvm_does(
    tmp_path: Path,
) -> None:
    """--build-id=HEX: the module from DIR/.build-id/xx/rest.debug, named by its build ID;
    plain, JSON and pretty JSON. A build ID found nowhere: llvm's error records."""
    binary, addresses = address_mode_input("c-O2-pie")
    build_id = build_id_of(binary)
    debug = tmp_path / "debug" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    debug.parent.mkdir(parents=True)
    shutil.copyfile(binary, debug)
    code = [f"0x{a:x}" for a in addresses]
    data = [f"DATA 0x{a:x}" for a in data_addresses(binary)]
    frame = [f"FRAME 0x{a:x}" for a in addresses[::10]]
    where = [f"--build-id={build_id}", f"--debug-file-directory={debug.parents[2]}"]
    # Plain DATA answers are left out: llvm 19 gives no declaration (??:?) for a
    # module found by build ID, where stackmark gives the one it gives with --obj.
    theirs, ours = both(where, "\n".join(code + frame))
    assert "run_pipeline\n" in theirs
    assert ours == theirs
    for style in (["--output-style=JSON"], ["--output-style=JSON", "-p"]):
        theirs, ours = both([*where, *style], "\n".join(code + data + frame))
        assert build_id.upper() in theirs and '"Symbol"' in theirs and '"Data"' in theirs
        assert ours == theirs, style
        theirs, ours = both([*where, *style, *code[:5]])
        assert ours == theirs, style
    nowhere = [f"--build-id={build_id}", f"--debug-file-directory={tmp_path / 'empty'}"]
    theirs, ours = both([*nowhere, "--output-style=JSON"], "\n".join(code[:3] + data[:2]))
    assert theirs.count("could not find build ID") == 5
    assert ours == theirs
    theirs, ours = both(nowhere, "\n".join(code[:3]))
    assert ours == theirs


def test_build_id_is_fetched_from_debuginfod_as_llvm_does(tmp_path: Path) -> None:
    """--build-id=HEX with DEBUGINFOD_URLS: the debug file is downloaded and answers."""
    from tests.support.debuginfod_programs import build_programs, cli_environment, symbol_address
    from tests.support.debuginfod_servers import ScriptedServer, Serve

    split = build_programs()["split"]
    assert split.debuginfo is not None
    address = symbol_address(split.debuginfo, "main")
    arguments = [f"--build-id={split.build_id}", f"0x{address:x}", f"0x{address + 4:x}"]
    with ScriptedServer() as server:
        route = f"/buildid/{split.build_id}/debuginfo"
        server.set_routes({route: Serve(split.debuginfo.read_bytes())})
        answers = []
        for tool, cache in ((require_tool("llvm-symbolizer-19"), "llvm"), (str(OURS), "ours")):
            env = cli_environment(tmp_path / cache, urls=server.url)
            for style in ([], ["--output-style=JSON"]):
                answers.append(
                    subprocess.run(
                        [tool, *style, *arguments],
                        capture_output=True,
                        text=True,
                        env=env,
                        timeout=120,
                    ).stdout
                )
    theirs, ours = answers[:2], answers[2:]
    assert "debuginfod_alpha.c:" in theirs[0] and '"FunctionName":"main"' in theirs[1]
    assert ours == theirs


def test_system_libc_with_its_debug_package_matches_llvm() -> None:
    """glibc from the distribution, its DWARF from libc6-dbg (hand-written assembly,
    IFUNCs, versioned and aliased symbols): paired the way llvm pairs them."""
    libc = Path("/lib/x86_64-linux-gnu/libc.so.6")
    build_id = build_id_of(libc)
    debug = Path("/usr/lib/debug/.build-id") / build_id[:2] / (build_id[2:] + ".debug")
    assert debug.exists(), "libc6-dbg should be installed by make test"
    elf = ElfFile.open(libc)
    functions = sorted({(s.value, s.size) for s in elf.symbols() if s.type == 2 and s.size})
    rng = random.Random(11)
    addresses = sorted({v + rng.randrange(n) for v, n in rng.sample(functions, 600)})
    expected = llvm_frames(libc, addresses)
    symbolizer = Symbolizer(SymbolizerOptions(objects=[str(libc)]))
    module = Module(0, "libc.so.6", build_id)
    resolution = symbolizer.resolve(module)
    assert resolution.has_debug_info and resolution.binary == str(debug)
    diffs = mismatches(expected, ours(symbolizer, module, addresses))
    assert not diffs, describe(diffs)
    assert sum(1 for frames in expected.values() if len(frames) > 1) > 20


def test_dwz_supplementary_files_give_back_the_names_llvm_loses(tmp_path: Path) -> None:
    """dwz -m moves DIEs shared by several programs into one supplementary file
    (.gnu_debugaltlink). llvm-symbolizer 19 does not read it and prints no name for
    functions whose abstract instance moved; stackmark reads it, and answers for the
    compressed program exactly what llvm answers for the original."""
    compressed, original, _ = dwz_compressed(tmp_path, str(tmp_path / "common.debug"))
    assert ElfFile.open(compressed).section(".gnu_debugaltlink") is not None
    addresses = line_table_addresses(original, limit=MAX_ADDRESSES)
    expected = llvm_frames(original, addresses)
    llvm_on_compressed = llvm_frames(compressed, addresses)
    lost = [a for a in addresses if llvm_on_compressed[a] != expected[a]]
    assert lost, "dwz should have moved some inline function names out of the program"
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[], objects=[str(compressed)]))
    module = Module(0, compressed.name, build_id_of(compressed))
    diffs = mismatches(expected, ours(symbolizer, module, addresses))
    assert not diffs, describe(diffs)


def test_a_dwz_supplementary_file_is_found_in_a_debug_file_directory(tmp_path: Path) -> None:
    """The supplementary file is not where its link says (another machine's path):
    it is found by its build ID in the debug-file directory the user gave, as the
    program's own debug files are, and gives back the same names."""
    compressed, original, debug_dir = dwz_in_debug_directory(tmp_path)
    addresses = line_table_addresses(original, limit=MAX_ADDRESSES)
    expected = llvm_frames(original, addresses)
    module = Module(0, compressed.name, build_id_of(compressed))
    options = SymbolizerOptions(debug_file_directories=[str(debug_dir)], objects=[str(compressed)])
    diffs = mismatches(expected, ours(Symbolizer(options), module, addresses))
    assert not diffs, describe(diffs)
    # Without that directory the names dwz moved are lost: the test needs the file.
    options = SymbolizerOptions(debug_file_directories=[], objects=[str(compressed)])
    assert mismatches(expected, ours(Symbolizer(options), module, addresses))
