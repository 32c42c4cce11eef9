"""Hover and inlay hints without a server: the feature modules over an in-memory symbolizer.

The log below maps module 0 (build ID 0xabcd) at 0x7000 from module-relative 0x1000,
so a runtime address A is module-relative A - 0x7000 + 0x1000 = A - 0x6000.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.hints import inlay_hints
from stackmark_lsp.hover import HoverBuilder
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages
from stackmark_lsp.settings import Settings

from stackmark.demangle import demangle, demangle_symbol
from stackmark.markup.naming import NameOptions, Naming
from stackmark.model import DataSymbol, SourceFrame
from tests.support.fake_symbolizer import FakeBinary, FakeLookups, FakeSymbolizer

LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
    "value {{{data:0x7810}}}\n"
    "other {{{bt:1:0x9999}}}\n"
)
INLINED = SourceFrame(None, "check", "/src/crash.c", 12, 5)
CALLER = SourceFrame(None, "main", "/src/crash.c", 30, 3)


def symbolizer() -> FakeSymbolizer:
    # bt 0x7011 is a return address: looked up at 0x7010, module-relative 0x1010.
    binary = FakeBinary(
        "/bin/libcrash.so",
        code=[(0x1000, 0x1100, [INLINED, CALLER])],
        data=[DataSymbol("counters", 0x1800, 32)],  # data 0x7810 is 0x1810: counters + 0x10
    )
    return FakeSymbolizer({"abcd": binary})


def naming() -> Naming:
    return Naming(NameOptions(), demangle_name=demangle_symbol, demangle_symbol=demangle)


def hover_at(line: int, character: int, symbols: FakeSymbolizer) -> str:
    log = OpenLog("file:///logs/crash.log", LOG, 1, PositionCodec())
    target = log.target(types.Position(line=line, character=character))
    assert target is not None
    builder = HoverBuilder(log, FakeLookups(symbols), naming(), Messages(), Settings())
    return asyncio.run(builder.build(target)).markdown()


def test_hover_on_a_bt_element_shows_the_inline_chain_and_where_the_address_lies() -> None:
    symbols = symbolizer()
    text = hover_at(3, 12, symbols)
    assert text.startswith("### frame #0 `main`\n")  # the physical function is the title
    assert "`/src/crash.c:12:5`" in text  # the innermost frame's place
    assert "1. `check` — `/src/crash.c:12:5`\n2. `main` — `/src/crash.c:30:3`" in text
    assert "module-relative address: `0x1010`" in text
    assert "symbols from: `/bin/libcrash.so`" in text
    assert symbols.calls == [("code", "abcd", 0x1010)]


def test_hover_on_a_data_element_names_the_symbol_and_the_offset_into_it() -> None:
    symbols = symbolizer()
    text = hover_at(4, 8, symbols)
    assert text.startswith("### data `counters` + `0x10`\n")
    assert "offset: `0x10` / size 32" in text
    assert symbols.calls == [("data", "abcd", 0x1810)]


def test_hover_on_a_module_element_says_why_no_symbols_were_found() -> None:
    log_text = LOG.replace("abcd", "ef01")
    log = OpenLog("file:///logs/crash.log", log_text, 1, PositionCodec())
    target = log.target(types.Position(line=1, character=4))
    assert target is not None
    builder = HoverBuilder(log, FakeLookups(symbolizer()), naming(), Messages(), Settings())
    text = asyncio.run(builder.build(target)).markdown()
    assert text.startswith("### module #0 `libcrash.so`\n")
    assert "no symbols: could not find build ID" in text
    assert "- `/nowhere`" in text


def test_inlay_hints_name_the_function_and_the_one_it_was_inlined_into() -> None:
    symbols = symbolizer()
    log = OpenLog("file:///logs/crash.log", LOG, 1, PositionCodec())
    hints = asyncio.run(inlay_hints(log, FakeLookups(symbols), naming(), 0, 6))
    # Line 5's bt (0x9999) lies outside every mmap: no placement, no question, no hint.
    assert [(h.position.line, h.position.character, h.label) for h in hints] == [
        (3, 26, "→ check (main)")  # after "crash #0 " (9) and "{{{bt:0:0x7011}}}" (17)
    ]
    assert hints[0].tooltip == "/src/crash.c:12:5"
    assert symbols.calls == [("code", "abcd", 0x1010)]


def test_inlay_hints_ask_only_about_the_requested_lines() -> None:
    symbols = symbolizer()
    log = OpenLog("file:///logs/crash.log", LOG, 1, PositionCodec())
    assert asyncio.run(inlay_hints(log, FakeLookups(symbols), naming(), 4, 6)) == []
    assert symbols.calls == []
