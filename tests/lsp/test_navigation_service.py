"""Go to definition of `symbol` elements over the server's own `NavigationService`, for a
module that only a GSYM file answers for (settings' `gsymPaths`, no ELF file anywhere):
a GSYM holds no declarations, so each function is found by its linkage name among the
file's functions (`Symbolizer.address_of`) and the definition is the first line of its
code. llvm-gsymutil-19 gives that line, at the address nm gives the function.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from lsprotocol import types
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.navigation import Navigator, file_uri
from stackmark_lsp.navigation_service import NavigationService, SourceFinder
from stackmark_lsp.settings import Settings
from stackmark_lsp.symbolization import SymbolService

from stackmark.model import Module
from tests.support.build import build_id_of, compile_program
from tests.support.debuginfod_programs import symbol_address
from tests.support.gsymutil import llvm_convert, llvm_lookup_blocks

# A const method, a file-local function (GCC gives it no linkage name: the GSYM names
# it `helper`), an extern "C" one and main, of tests/fixtures/src/symbol_names.cpp.
NAMES = ["_ZNK6shapes3Box4areaEv", "_ZL6helperi", "plain", "main"]


def log_text(build_id: str, names: list[str]) -> str:
    return (
        "{{{reset}}}\n"
        f"{{{{{{module:0:not-on-disk:elf:{build_id}}}}}}}\n"
        "{{{mmap:0x7000:0x2000:load:0:rx:0x1000}}}\n"
        + "".join(f"in {{{{{{symbol:{name}}}}}}}\n" for name in names)
    )


class _Silent:
    """A progress sink that drops everything (no client here)."""

    def begin(self, title: str) -> object:
        return object()

    def report(self, handle: object, message: str, percentage: int | None = None) -> None:
        return None

    def end(self, handle: object) -> None:
        return None


def test_a_symbol_of_a_gsym_only_module_goes_to_the_first_line_of_its_code(
    tmp_path: Path,
) -> None:
    binary = compile_program("symbol-names", ["symbol_names.cpp"], compiler="g++")
    build_id = build_id_of(binary)
    gsym = llvm_convert(binary, tmp_path / "gsyms" / "symbol-names.gsym")
    expected: list[list[tuple[str, int]]] = []
    for block in llvm_lookup_blocks(gsym, [symbol_address(binary, name) for name in NAMES]):
        outermost = re.findall(r" @ (\S+):(\d+)", block)[-1]
        expected.append([(file_uri(outermost[0]), int(outermost[1]) - 1)])
    unknown = "_Z7nowherev"
    log = OpenLog(
        "file:///logs/crash.log", log_text(build_id, [*NAMES, unknown]), 1, PositionCodec()
    )

    settings = Settings(
        debug_file_directories=(str(tmp_path / "nothing"),),
        gsym_paths=(str(gsym.parent),),
        cache_dir=str(tmp_path / "cache"),
    )
    service = SymbolService(settings, _Silent(), lambda message_id, **values: message_id)
    navigation = NavigationService(service, SourceFinder(settings, service))

    async def definitions(line: int) -> list[tuple[str, int]]:
        position = types.Position(line=line, character=6)  # in "{{{symbol:"
        target = log.target(position)
        assert target is not None
        index_line, column = log.to_index(position)
        links = await Navigator(log, navigation).definition(target, index_line, column)
        return [(link.target_uri, link.target_selection_range.start.line) for link in links]

    async def ask() -> list[list[tuple[str, int]]]:
        return [await definitions(3 + i) for i in range(len(NAMES) + 1)]

    try:
        answers = asyncio.run(ask())
        assert service.resolve(Module(0, "not-on-disk", build_id)).binary == str(gsym)
    finally:
        service.close()
    assert answers == [*expected, []]
