"""Go to definition without a server: navigation.py over an in-memory symbolizer.

The log below maps module 0 (build ID 0xabcd) at 0x7000 from module-relative 0x1000,
so a runtime address A is module-relative A - 0x7000 + 0x1000 = A - 0x6000.
Editors count lines and characters from 0, source lines from 1: line 12 column 5
of a file is position (11, 4).
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.navigation import Navigator

from stackmark.model import DataSymbol, SourceFrame
from stackmark.symbols.declarations import Declaration
from tests.support.fake_navigation import FakeNavigationLookups
from tests.support.fake_symbolizer import FakeBinary, FakeSymbolizer

LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
    "value {{{data:0x7810}}}\n"
    "table {{{data:0x7910}}}\n"
    "in {{{symbol:_Z5checkv}}}\n"
    "in {{{symbol:_Z4mainv}}}\n"
)
INLINED = SourceFrame(None, "check", "/src/crash.c", 12, 5)
CALLER = SourceFrame(None, "main", "/src/crash.c", 30, 3)
MAIN_START = SourceFrame(None, "main", "/src/crash.c", 28, 1)
TABLE_INLINED = SourceFrame(None, "fill", "/src/crash.c", 45, 7)
TABLE = SourceFrame(None, "table", "/src/crash.c", 40, 2)
HERE = "/checkout/src/crash.c"  # where the source file is found on this machine


def lookups(sources: dict[str, str] | None = None) -> FakeNavigationLookups:
    binary = FakeBinary(
        "/bin/libcrash.so",
        # bt 0x7011 is a return address: looked up at 0x7010, module-relative 0x1010.
        code=[
            (0x1000, 0x1100, [INLINED, CALLER]),
            (0x1200, 0x1300, [MAIN_START]),
            (0x1900, 0x1920, [TABLE_INLINED, TABLE]),  # code, although data names it
        ],
        data=[
            DataSymbol("counters", 0x1800, 32),  # data 0x7810 is 0x1810: counters + 0x10
            DataSymbol("table", 0x1900, 32),  # 0x7910: no declaration, the code at 0x1900
        ],
    )
    return FakeNavigationLookups(
        FakeSymbolizer({"abcd": binary}),
        declarations={
            ("abcd", "counters", 0x1800): Declaration("/src/counters.c", 7),
            ("abcd", "_Z5checkv", None): Declaration("/src/crash.c", 10),
        },
        addresses={("abcd", "_Z4mainv"): 0x1200},
        sources={"/src/crash.c": HERE, "/src/counters.c": "/checkout/src/counters.c"}
        if sources is None
        else sources,
    )


def definitions(
    line: int, character: int, fake: FakeNavigationLookups
) -> list[tuple[str, int, int]]:
    """(file, line, character) of each target, for the cursor at (line, character)."""
    log = OpenLog("file:///logs/crash.log", LOG, 1, PositionCodec())
    target = log.target(types.Position(line=line, character=character))
    assert target is not None
    index_line, column = log.to_index(types.Position(line=line, character=character))
    links = asyncio.run(Navigator(log, fake).definition(target, index_line, column))
    return [
        (
            link.target_uri,
            link.target_selection_range.start.line,
            link.target_selection_range.start.character,
        )
        for link in links
    ]


def test_a_bt_element_goes_to_every_frame_of_its_inline_chain_innermost_first() -> None:
    fake = lookups()
    assert definitions(3, 12, fake) == [
        ("file:///checkout/src/crash.c", 11, 4),  # check, /src/crash.c:12:5
        ("file:///checkout/src/crash.c", 29, 2),  # main, /src/crash.c:30:3
    ]
    assert fake.symbolizer.calls == [("code", "abcd", 0x1010)]


def test_a_frame_whose_source_file_is_nowhere_has_no_target() -> None:
    fake = lookups(sources={})
    assert definitions(3, 12, fake) == []
    assert ("source", "/src/crash.c", "abcd") in fake.asked


def test_a_data_element_goes_to_where_its_variable_is_declared() -> None:
    fake = lookups()
    assert definitions(4, 8, fake) == [("file:///checkout/src/counters.c", 6, 0)]
    # The declaration is asked by the symbol's start, not by the address in it.
    assert ("declaration", "abcd", "counters", "0x1800") in fake.asked


def test_an_undeclared_address_in_code_goes_to_the_first_line_of_its_function() -> None:
    # 0x7910 is table + 0x10 (0x1910); the segment is executable ("rwx"), so the code
    # at table's start answers: its outermost frame, /src/crash.c:40:2.
    fake = lookups()
    assert definitions(5, 8, fake) == [("file:///checkout/src/crash.c", 39, 1)]
    assert fake.symbolizer.calls == [("data", "abcd", 0x1910), ("code", "abcd", 0x1900)]


def test_a_symbol_element_goes_to_the_declaration_of_that_linkage_name() -> None:
    fake = lookups()
    assert definitions(6, 6, fake) == [("file:///checkout/src/crash.c", 9, 0)]
    assert ("address", "abcd", "_Z5checkv") not in fake.asked


def test_an_undeclared_symbol_goes_to_the_code_at_its_address() -> None:
    fake = lookups()
    assert definitions(7, 6, fake) == [("file:///checkout/src/crash.c", 27, 0)]
    assert fake.asked[:2] == [
        ("declaration", "abcd", "_Z4mainv", "-"),
        ("address", "abcd", "_Z4mainv"),
    ]
    assert fake.symbolizer.calls == [("code", "abcd", 0x1200)]


def test_the_module_id_of_an_mmap_goes_to_its_module_element() -> None:
    # "{{{mmap:0x7000:0x2000:load:" is 27 characters: the module ID 0 is at 27.
    fake = lookups()
    assert definitions(2, 27, fake) == [("file:///logs/crash.log", 1, 0)]
    assert definitions(2, 10, fake) == []  # elsewhere in the mmap element: nowhere


def test_elements_without_a_definition_ask_nothing() -> None:
    fake = lookups()
    assert definitions(0, 4, fake) == []  # reset
    assert definitions(1, 4, fake) == []  # module
    assert fake.symbolizer.calls == [] and fake.asked == []
