"""Breakpad stores and build-ID prefixes: the lookups a v5 request makes, on files made here."""

from __future__ import annotations

import shutil
from pathlib import Path

from stackmark.symbols.breakpad_store import (
    BreakpadSource,
    BreakpadStore,
    check_module_name,
    sym_file_name,
)
from stackmark.symbols.store import SymbolStore
from tests.support.build import build_id_of, compile_program

SYM = "MODULE Linux x86_64 {id} lib.so\nFILE 0 /s/a.c\nFUNC 10 10 0 f\n10 10 3 0\n"
ID = "0905AE80CEE75A33E3CAB61C274274DE0"


def test_a_sym_file_is_converted_once_into_the_cache(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "lib.so" / ID).mkdir(parents=True)
    (store / "lib.so" / ID / "lib.so.sym").write_text(SYM.format(id=ID))
    breakpad = BreakpadStore([str(store)], tmp_path / "cache")
    searched: list[str] = []
    gsym = breakpad.gsym_for("lib.so", ID.lower(), searched)
    assert gsym == tmp_path / "cache" / "breakpad-v1" / "lib.so" / ID / "lib.so.gsym"
    assert searched == []
    first = gsym.stat().st_ino
    assert breakpad.gsym_for("lib.so", ID, []) == gsym
    assert gsym.stat().st_ino == first  # not made again
    source = BreakpadSource(gsym)
    try:  # the FUNC record's name and address (`FUNC 10 ...`: 0x10)
        assert (source.address_of("f"), source.address_of("g")) == (0x10, None)
    finally:
        source.close()


def test_a_sym_file_for_another_module_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "lib.so" / ID).mkdir(parents=True)
    other = "1" * 33
    (store / "lib.so" / ID / "lib.so.sym").write_text(SYM.format(id=other))
    searched: list[str] = []
    assert BreakpadStore([str(store)], tmp_path / "cache").gsym_for("lib.so", ID, searched) is None
    assert searched[-1].endswith(f"its MODULE record says debug ID {other!r}")


def test_names_that_are_not_file_names_never_reach_a_path() -> None:
    for name in ("../x", "/etc/passwd", "..", ".", "a/b", "a\\b", "", " x", "a\0b", "x" * 256):
        assert check_module_name(name, ID) is not None, name
    assert check_module_name("libxul.so", "../" + ID) is not None
    assert check_module_name("Font Awesome 5.otf", ID) is None
    assert sym_file_name("xul.pdb") == "xul.sym"
    assert sym_file_name("libxul.so") == "libxul.so.sym"


def test_build_ids_are_found_by_their_first_bytes_in_every_local_place(tmp_path: Path) -> None:
    program = compile_program("breakpad_prefix", ["elf_basic.c"], flags=["-g", "-O1"])
    build_id = build_id_of(program)
    debug_dir = tmp_path / "debug"
    (debug_dir / ".build-id" / build_id[:2]).mkdir(parents=True)
    shutil.copy(program, debug_dir / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug")
    symbol_dir = tmp_path / "symbols"
    symbol_dir.mkdir()
    shutil.copy(program, symbol_dir / "renamed")
    for places in (
        {"debug_file_directories": [str(debug_dir)]},
        {"symbol_paths": [str(symbol_dir)]},
        {"objects": [str(program)]},
    ):
        store = SymbolStore(**places)  # type: ignore[arg-type]
        assert store.build_ids_starting_with(build_id[:32]) == [build_id], places
        other = "00" if build_id[:2] != "00" else "11"
        assert store.build_ids_starting_with(other + build_id[2:32]) == [], places
    assert SymbolStore(symbol_paths=[str(symbol_dir)]).build_ids_starting_with("../") == []
