"""Finding files by build ID: debug-file directories, --obj, symbol paths, .gnu_debuglink,
and the checks that reject the wrong file with a reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from stackmark.symbols.api import Failure, Reason
from stackmark.symbols.store import SymbolStore
from tests.support import sym_builds
from tests.support.build import build_id_of


def debug_tree(root: Path, binary: Path, build_id: str | None = None) -> Path:
    """Put `binary` at root/.build-id/xx/rest.debug (for `build_id`, default its own)."""
    build_id = build_id or build_id_of(binary)
    target = root / ".build-id" / build_id[:2] / (build_id[2:] + ".debug")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(binary, target)
    return target


def test_finds_a_debug_file_by_build_id(tmp_path: Path) -> None:
    _, debug = sym_builds.stripped_with_debuglink()
    placed = debug_tree(tmp_path, debug)
    lookup = SymbolStore([str(tmp_path)]).find(build_id_of(debug))
    assert lookup.failure is None
    assert lookup.files is not None and lookup.files.binary == str(placed)
    assert lookup.files.how == "debug-file-directory"
    assert lookup.has_debug_info


def test_build_id_lookup_is_case_insensitive_and_searches_every_directory(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    placed = debug_tree(tmp_path / "second", binary)
    store = SymbolStore([str(tmp_path / "first"), str(tmp_path / "second")])
    lookup = store.find(build_id_of(binary).upper())
    assert lookup.files is not None and lookup.files.binary == str(placed)


def test_rejects_a_file_whose_build_id_does_not_match_and_says_why(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    other = sym_builds.cpp_program()
    wanted = build_id_of(binary)
    placed = debug_tree(tmp_path, other, build_id=wanted)  # the wrong file at the right path
    lookup = SymbolStore([str(tmp_path)]).find(wanted)
    assert lookup.files is None
    assert lookup.failure == Failure(Reason.NOT_FOUND)
    assert any(
        str(placed) in line and build_id_of(other) in line and "does not match" in line
        for line in lookup.searched
    ), lookup.searched


def test_missing_build_id_lists_what_was_searched(tmp_path: Path) -> None:
    lookup = SymbolStore([str(tmp_path)]).find("ab" * 20)
    assert lookup.files is None and lookup.failure == Failure(Reason.NOT_FOUND)
    expected = tmp_path / ".build-id" / "ab" / ("ab" * 19 + ".debug")
    assert f"{expected}: not found" in lookup.searched


def test_obj_files_are_indexed_by_their_own_build_id() -> None:
    c, cpp = sym_builds.c_program(), sym_builds.cpp_program()
    store = SymbolStore([], objects=[str(c), str(cpp)])
    lookup = store.find(build_id_of(cpp))
    assert lookup.files is not None and lookup.files.binary == str(cpp)
    assert lookup.files.how == "--obj"
    assert store.find(build_id_of(c)).files is not None


def test_symbol_paths_are_searched_recursively(tmp_path: Path) -> None:
    binary = sym_builds.shared_library()
    nested = tmp_path / "sysroot" / "usr" / "lib"
    nested.mkdir(parents=True)
    shutil.copyfile(binary, nested / "libsymlib.so")
    (tmp_path / "notes.txt").write_text("not an ELF file")
    lookup = SymbolStore([], symbol_paths=[str(tmp_path)]).find(build_id_of(binary))
    assert lookup.files is not None
    assert lookup.files.binary == str(nested / "libsymlib.so")
    assert lookup.files.how == "symbol-path"


def test_a_stripped_binary_leads_to_its_debuglink_file(tmp_path: Path) -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    copy = tmp_path / binary.name
    shutil.copyfile(binary, copy)
    (tmp_path / ".debug").mkdir()
    shutil.copyfile(debug, tmp_path / ".debug" / debug.name)
    lookup = SymbolStore([], objects=[str(copy)]).find(build_id_of(binary))
    assert lookup.files is not None
    assert lookup.files.binary == str(copy)
    assert lookup.files.debug == str(tmp_path / ".debug" / debug.name)
    assert lookup.has_debug_info


def test_debuglink_under_a_debug_file_directory(tmp_path: Path) -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    copy = tmp_path / "bin" / binary.name
    copy.parent.mkdir()
    shutil.copyfile(binary, copy)
    mirror = tmp_path / "debug" / str(copy.parent).lstrip("/")
    mirror.mkdir(parents=True)
    shutil.copyfile(debug, mirror / debug.name)
    lookup = SymbolStore([str(tmp_path / "debug")], objects=[str(copy)]).find(build_id_of(binary))
    assert lookup.files is not None and lookup.files.debug == str(mirror / debug.name)


def test_a_debuglink_file_from_another_build_is_rejected(tmp_path: Path) -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    copy = tmp_path / binary.name
    shutil.copyfile(binary, copy)
    impostor = sym_builds.c_program("-g", "-O1", name="sym_inline_O1")  # other build ID
    shutil.copyfile(impostor, tmp_path / debug.name)
    lookup = SymbolStore([], objects=[str(copy)]).find(build_id_of(binary))
    assert lookup.files is not None and lookup.files.debug is None  # symbols only
    assert not lookup.has_debug_info
    assert any("does not match" in line and debug.name in line for line in lookup.searched)


def test_a_stripped_obj_is_paired_with_the_debug_file_of_its_build(tmp_path: Path) -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copyfile(binary, lone / binary.name)  # its debuglink target is not next to it
    placed = debug_tree(tmp_path / "dbg", debug)
    store = SymbolStore([str(tmp_path / "dbg")], objects=[str(lone / binary.name)])
    lookup = store.find(build_id_of(binary))
    assert lookup.files is not None  # symbols from the binary, DWARF from the debug file
    assert lookup.files.binary == str(lone / binary.name)
    assert lookup.files.debug == str(placed)
    assert lookup.has_debug_info
    alone = SymbolStore([str(tmp_path / "dbg")]).find(build_id_of(binary))
    assert alone.files is not None and alone.files.binary == str(placed)
    assert alone.files.debug is None


def test_unreadable_and_non_elf_candidates_are_reported(tmp_path: Path) -> None:
    build_id = "cd" * 20
    path = tmp_path / ".build-id" / "cd" / ("cd" * 19 + ".debug")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF" + b"\0" * 8)  # truncated header
    lookup = SymbolStore([str(tmp_path)]).find(build_id)
    assert lookup.files is None
    assert any(str(path) in line and "unreadable" in line for line in lookup.searched)


def test_module_path_without_build_id(tmp_path: Path) -> None:
    binary = sym_builds.c_program("-O2", name="sym_inline_nodebug")
    lookup = SymbolStore([]).find("", str(binary))
    assert lookup.files is not None and lookup.files.binary == str(binary)
    assert not lookup.has_debug_info
    nothing = SymbolStore([]).find("")
    assert nothing.failure == Failure(Reason.NO_BUILD_ID)
    assert os.path.exists(binary)


# --- a module's own name (sanitizer logs name the file the process loaded) ------------


def test_an_absolute_module_name_is_looked_at_after_every_other_place(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    store = SymbolStore([str(tmp_path / "empty")])
    lookup = store.find(build_id_of(binary), module_name=str(binary))
    assert lookup.files is not None and lookup.files.binary == str(binary)
    assert lookup.files.how == "module name" and lookup.has_debug_info
    # A debug-file directory that has it wins (it comes first).
    placed = debug_tree(tmp_path / "debug", binary)
    lookup = SymbolStore([str(tmp_path / "debug")]).find(
        build_id_of(binary), module_name=str(binary)
    )
    assert lookup.files is not None and lookup.files.binary == str(placed)


def test_a_module_name_whose_file_has_another_build_id_is_listed_as_mismatched(
    tmp_path: Path,
) -> None:
    ran = sym_builds.c_program()
    rebuilt = tmp_path / "app"
    shutil.copyfile(sym_builds.cpp_program(), rebuilt)  # another program at the same path
    lookup = SymbolStore([str(tmp_path / "empty")]).find(build_id_of(ran), module_name=str(rebuilt))
    assert lookup.files is None and lookup.failure == Failure(Reason.NOT_FOUND)
    assert lookup.mismatched == [(str(rebuilt), build_id_of(rebuilt))]


def test_a_relative_module_name_is_tried_under_each_symbol_path_and_never_above(
    tmp_path: Path,
) -> None:
    ran = sym_builds.c_program()
    root = tmp_path / "symbols"
    (root / "lib").mkdir(parents=True)
    shutil.copyfile(sym_builds.cpp_program(), root / "lib" / "libapp.so")
    shutil.copyfile(sym_builds.cpp_program(), tmp_path / "outside.so")
    store = SymbolStore([str(tmp_path / "empty")], symbol_paths=[str(root)])
    lookup = store.find(build_id_of(ran), module_name="lib/libapp.so")
    assert lookup.mismatched == [
        (str(root / "lib" / "libapp.so"), build_id_of(root / "lib" / "libapp.so"))
    ]
    escaped = store.find(build_id_of(ran), module_name="../outside.so")
    assert escaped.mismatched == [] and not any("outside" in s for s in escaped.searched)


def test_a_module_name_is_not_trusted_without_a_build_id(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    lookup = SymbolStore([str(tmp_path)]).find("", module_name=str(binary))
    assert lookup.files is None and lookup.failure == Failure(Reason.NO_BUILD_ID)
