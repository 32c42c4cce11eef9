"""The GSYM cache's "background" mode (`stackmark.symbols.gsym_background`).

A module answers from its DWARF at once; its GSYM entry is built in a
background thread, and the module's answers switch to it, unchanged. The
program is dwz-compressed with its supplementary file only in the user's
debug-file directory, so the background build must find it where the
DWARF source does to give the same names.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stackmark.model import Module, SourceFrame
from stackmark.symbols.cache import GsymCache
from stackmark.symbols.elf_source import ElfSymbolSource
from stackmark.symbols.gsym_background import BackgroundGsymBuilds, UpgradableSource
from stackmark.symbols.gsym_source import GsymSource
from stackmark.symbols.setup import SymbolSettings, build_symbolizer
from stackmark.symbols.source import ModuleFiles
from stackmark.symbols.symbolizer import Symbolizer
from tests.support.build import build_id_of
from tests.support.debuginfod_programs import symbol_address
from tests.support.dwz import dwz_in_debug_directory
from tests.support.symbolizer_oracle import line_table_addresses


def answers(
    symbolizer: Symbolizer, module: Module, addresses: list[int]
) -> list[list[SourceFrame]]:
    return [symbolizer.code(module, address).frames for address in addresses]


def test_a_module_answers_from_dwarf_then_from_its_entry_built_in_the_background(
    tmp_path: Path,
) -> None:
    compressed, original, debug_dir = dwz_in_debug_directory(tmp_path)
    build_id = build_id_of(compressed)
    built: list[str] = []
    go = threading.Event()  # the build waits until the DWARF answers are checked

    @contextmanager
    def watch(files: ModuleFiles) -> Iterator[None]:
        go.wait()
        yield None
        built.append(files.build_id)

    builds = BackgroundGsymBuilds(watch=watch)
    settings = SymbolSettings(
        debug_file_directories=[str(debug_dir)],
        objects=[str(compressed)],
        gsym_cache="background",
        gsym_cache_dir=str(tmp_path / "cache"),
    )
    symbolizer = build_symbolizer(settings, builds=builds)
    module = Module(0, compressed.name, build_id)
    addresses = line_table_addresses(original, limit=1500)
    main = symbol_address(compressed, "main")
    try:
        from_dwarf = answers(symbolizer, module, addresses)
        assert symbolizer.address_of(module, "main") == main
        source = symbolizer.opened_source(module)
        assert isinstance(source, UpgradableSource)
        assert isinstance(source.current, ElfSymbolSource)
        go.set()
        builds.wait()
        assert built == [build_id]
        assert isinstance(source.current, GsymSource)
        assert answers(symbolizer, module, addresses) == from_dwarf
        assert symbolizer.address_of(module, "main") == main
    finally:
        go.set()
        builds.close()
        symbolizer.close()
    # A second symbolizer opens the entry built at once.
    again = build_symbolizer(settings, builds=BackgroundGsymBuilds())
    try:
        assert GsymCache(tmp_path / "cache").validate(build_id) is not None
        assert answers(again, module, addresses[:50]) == from_dwarf[:50]
        assert isinstance(again.opened_source(module), GsymSource)
    finally:
        again.close()
