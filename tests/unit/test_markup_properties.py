"""Properties of the parser and the filters on arbitrary input (hypothesis).

Whatever comes in: nothing raises, the spans of a line rebuild it, and
every input line comes out of the default filter, in order.
"""

from __future__ import annotations

import argparse
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.cli import symbolize
from stackmark.markup.elements import decode
from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.parser import MarkupParser, parse_line
from stackmark.markup.syntax import Element
from stackmark.model import DataSymbol, SourceFrame
from tests.support.fake_symbolizer import FakeBinary, FakeSymbolizer

FRAGMENTS = [
    "{{{",
    "}}}",
    ":",
    "pc",
    "bt",
    "data",
    "symbol",
    "reset",
    "hexdict",
    "dumpfile",
    "module:0:prog:elf:aa01",
    "module:1:x:elf:",
    "mmap:0x1000:0x1000:load:0:rx:0",
    "mmap:0x1800:0x10:load:1:r:0",
    "0x1010",
    "0x0",
    "0",
    "ra",
    "RIP: 0x1010 ",
    "\x1b[31m",
    "\x1b[0m",
    "\x1b[1m",
    "\x1b[34m",
    "\r",
    " ",
    "é",
    "\udcff",  # an undecodable byte, as surrogateescape represents it
]

line_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4).filter(lambda s: "\n" not in s)),
    max_size=12,
).map("".join)


def fake() -> FakeSymbolizer:
    binary = FakeBinary(
        "/bin/prog",
        code=[(0x0, 0x800, [SourceFrame("_Z1fv", "f", "/a.c", 1, 2)])],
        data=[DataSymbol("g", 0x900, 8)],
    )
    return FakeSymbolizer({"aa01": binary})


def naming() -> Naming:
    return Naming(NameOptions(), lambda s: s, lambda s: s)


def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    return parser.parse_args(list(argv))


@given(line_text)
def test_spans_rebuild_the_line_and_decode(text: str) -> None:
    spans = parse_line(text).spans
    assert "".join(s.text for s in spans) == text
    end = 0
    for span in spans:
        assert span.start == end
        end = span.start + len(span.text)
        if isinstance(span, Element):
            decode(span)


@given(st.lists(line_text, max_size=8))
def test_multiline_parse_never_loses_a_line(lines: list[str]) -> None:
    parser = MarkupParser()
    pending = None
    for number, text in enumerate(lines):
        parsed = parser.parse(text, number, pending)
        pending = parsed.pending
        rebuilt = ""
        for span in parsed.spans:
            if isinstance(span, Element) and span.multiline:
                rebuilt += text[: span.end]
                decode(span)
            else:
                rebuilt += span.text
        assert rebuilt == text


def run(raw: bytes, *argv: str) -> bytes:
    out = io.BytesIO()
    symbolize.run_streams(
        [("log", io.BytesIO(raw))], out, lambda _t: None, args(*argv), fake(), naming()
    )
    return out.getvalue()


@settings(max_examples=200)
@given(st.lists(line_text, max_size=10), st.sampled_from(["\n", "\r\n"]))
def test_every_plain_line_comes_out_in_order(lines: list[str], eol: str) -> None:
    raw = "".join(line + eol for line in lines).encode("utf-8", "surrogateescape")
    for argv in ((), ("--color=always",), ("--compat=llvm19",), ("--output-style=json",)):
        output = run(raw, *argv)
        if argv:
            continue
        out_lines = output.decode("utf-8", "surrogateescape").split(eol)
        position = 0
        for line in lines:
            if "{{{" in line or "\x1b" in line or "\n" in line or "\r" in line:
                continue
            assert line in out_lines[position:], (line, out_lines)
            position = out_lines.index(line, position) + 1


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_arbitrary_bytes(raw: bytes) -> None:
    for argv in ((), ("--compat=llvm19",), ("--output-style=json",)):
        output = run(raw, *argv)
        if argv:
            continue
        # text-only lines pass through byte for byte
        kept = output.split(b"\n")
        for line in raw.split(b"\n"):
            if b"{{{" not in line and b"\x1b" not in line and b"\r" not in line:
                assert line in kept


@given(line_text)
def test_lines_without_markup_are_unchanged(text: str) -> None:
    if "{{{" in text or "\x1b" in text:
        return
    raw = text.encode("utf-8", "surrogateescape") + b"\n"
    assert run(raw) == raw
    assert run(raw, "--compat=llvm19") == raw


bt_element = st.builds(
    lambda number, address, suffix: "{{{bt:" + number + ":" + address + suffix + "}}}",
    st.sampled_from(["0", "1", "007", "123456", "x", "0x1", ""]),
    st.sampled_from(
        [
            "0x0",
            "0x1",
            "0x10",
            "0x7ff",
            "0x800",
            "0x900",
            "0xfff",
            "0x1000",
            "0x1001",
            "0x1800",
            "0x2000",
            "0",
            "0X1",
            "12",
            "",
        ]
    ),
    st.sampled_from(["", ":ra", ":pc", ":RA", ":", ":ra:x"]),
)
around = st.sampled_from(
    ["", " ", "[ts] tid> ", "x{{{", "}}}", "\x1b[31m", "{{{pc:0x10}}}", " end"]
)
bt_lines = st.lists(
    st.one_of(
        st.just("{{{module:0:prog:elf:aa01}}}"),
        st.just("{{{mmap:0x0:0x1000:load:0:rx:0}}}"),
        st.just("{{{module:1:gone:elf:dead}}}"),
        st.just("{{{mmap:0x1000:0x1000:load:1:rx:0}}}"),
        st.just("{{{reset}}}"),
        st.builds(lambda a, bt, b: a + bt + b, around, bt_element, around),
    ),
    max_size=12,
)


def filtered(lines: list[str], compat: bool, fast: bool) -> tuple[str, str]:
    from stackmark.markup.filter import StackmarkFilter
    from stackmark.markup.llvm19 import Llvm19Filter
    from stackmark.markup.report import DiagnosticPrinter
    from stackmark.markup.resolve import Resolver

    err: list[str] = []
    printer = DiagnosticPrinter(err.append, llvm_style=compat)
    resolver = Resolver(fake())
    line_filter: Llvm19Filter | StackmarkFilter
    if compat:
        line_filter = Llvm19Filter(resolver, naming(), printer, fast_paths=fast)
    else:
        line_filter = StackmarkFilter(resolver, naming(), printer, fast_paths=fast)
    out = [line_filter.feed(line, "\n") for line in lines]
    out.append(line_filter.finish())
    return "".join(out), "".join(err)


@settings(max_examples=300)
@given(bt_lines)
def test_fast_paths_change_nothing(lines: list[str]) -> None:
    for compat in (False, True):
        assert filtered(lines, compat, fast=True) == filtered(lines, compat, fast=False)
