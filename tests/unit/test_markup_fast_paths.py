"""The fast paths of `stackmark symbolize` against its general path.

The filter answers common lines directly (a `bt` line, a context line of
one well-formed `reset`/`module`/`mmap`), and the CLI copies lines without
markup as bytes, a block at a time. None of that may change a byte of the
output or of the diagnostics: each test compares with the general path
(every line parsed and fed on its own, `fast_paths=False`).
"""

from __future__ import annotations

import argparse
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.cli import symbolize
from stackmark.markup import stream
from stackmark.markup.filter import StackmarkFilter
from stackmark.markup.llvm19 import Llvm19Filter
from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.report import DiagnosticPrinter
from stackmark.markup.resolve import Resolver
from stackmark.model import DataSymbol, SourceFrame
from tests.support.fake_symbolizer import FakeBinary, FakeSymbolizer


def fake() -> FakeSymbolizer:
    binary = FakeBinary(
        "/bin/prog",
        code=[
            (0x0, 0x800, [SourceFrame("_Z1fv", "f", "/a.c", 1, 2)]),
            (
                0x800,
                0x900,
                [SourceFrame("_Z1gv", "g", "/g.c", 3, 4), SourceFrame(None, "h", "/h.c", 5, 6)],
            ),
        ],
        data=[DataSymbol("g", 0x900, 8)],
    )
    return FakeSymbolizer({"aa01": binary, "0abc": binary})


def naming() -> Naming:
    return Naming(NameOptions(), lambda s: f"D({s})", lambda s: s)


def general(lines: list[str], compat: bool, eol: str = "\n") -> tuple[str, str]:
    """Every line through the general path, fed one by one."""
    err: list[str] = []
    printer = DiagnosticPrinter(err.append, llvm_style=compat, source="log")
    resolver = Resolver(fake())
    line_filter: Llvm19Filter | StackmarkFilter
    if compat:
        line_filter = Llvm19Filter(resolver, naming(), printer, fast_paths=False)
    else:
        line_filter = StackmarkFilter(resolver, naming(), printer, fast_paths=False)
    out = [line_filter.feed(line, eol) for line in lines]
    out.append(line_filter.finish())
    return "".join(out), "".join(err)


def through_cli(raw: bytes, compat: bool) -> tuple[str, str]:
    """The CLI's block-at-a-time driver with every fast path."""
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    args = parser.parse_args(["--compat=llvm19"] if compat else [])
    out = io.BytesIO()
    err: list[str] = []
    symbolize.run_streams([("log", io.BytesIO(raw))], out, err.append, args, fake(), naming())
    return out.getvalue().decode("utf-8", "surrogateescape"), "".join(err)


number = st.sampled_from(["0", "1", "0x1", "0X1", "010", "079", "-1", "", "18446744073709551616"])
address = st.sampled_from(
    ["0x0", "0x1000", "0x2000", "0x1800", "0X1000", "0", "00", "0x", "0x00000000000000001000"]
)
context_element = st.one_of(
    st.just("{{{reset}}}"),
    st.just("{{{reset:x}}}"),
    st.builds(
        lambda i, name, kind, build: (
            "{{{module:" + i + ":" + name + ":" + kind + ":" + build + "}}}"
        ),
        number,
        st.sampled_from(["prog", "", "a b", "{x}"]),
        st.sampled_from(["elf", "ELF"]),
        st.sampled_from(["aa01", "AA01", "abc", "xyz", ""]),
    ),
    st.builds(
        lambda start, size, kind, i, mode, rel: (
            "{{{mmap:" + ":".join([start, size, kind, i, mode, rel]) + "}}}"
        ),
        address,
        st.sampled_from(["0x1000", "4096", "0", "010", "0x800"]),
        st.sampled_from(["load", "LOAD"]),
        number,
        st.sampled_from(["rx", "r", "RWX", "xr", ""]),
        address,
    ),
)
bt_element = st.builds(
    lambda n, a, s: "{{{bt:" + n + ":" + a + s + "}}}",
    st.sampled_from(["0", "7", "007", "18446744073709551615", "18446744073709551616", "x"]),
    address,
    st.sampled_from(["", ":ra", ":pc", ":RA", ":ra:x"]),
)
around = st.sampled_from(
    ["", " ", "[t] ", "{", "{{{", "}}}", "\x1b[31m", " {{{pc:0x1000}}}", "é ", " \udcff"]
)
line = st.one_of(
    context_element,
    st.builds(lambda a, c: a + c, st.sampled_from(["", " ", "x"]), context_element),
    st.builds(lambda a, e, b: a + e + b, around, bt_element, around),
    st.sampled_from(["plain text", "", "\x1b[1mbold", "{{{symbol:_Z1fv}}}"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(line, max_size=14))
def test_fast_paths_match_the_general_path(lines: list[str]) -> None:
    raw = "".join(text + "\n" for text in lines).encode("utf-8", "surrogateescape")
    for compat in (False, True):
        assert through_cli(raw, compat) == general(lines, compat)


@settings(max_examples=150, deadline=None)
@given(st.lists(line, min_size=1, max_size=14), st.integers(1, 40), st.booleans())
def test_blocks_split_anywhere(lines: list[str], size: int, crlf: bool) -> None:
    """Blocks that end mid-line, mid-element or between `\\r` and `\\n`."""
    eol = "\r\n" if crlf else "\n"
    raw = "".join(text + eol for text in lines).encode("utf-8", "surrogateescape")
    saved = stream.READ_SIZE
    stream.READ_SIZE = size
    try:
        for compat in (False, True):
            assert through_cli(raw, compat) == general(lines, compat, eol)
    finally:
        stream.READ_SIZE = saved


def test_last_line_without_a_line_feed() -> None:
    lines = [
        "{{{module:0:prog:elf:aa01}}}",
        "{{{mmap:0x1000:0x1000:load:0:rx:0}}}",
        "{{{bt:0:0x1001}}}\r",
    ]
    raw = "\n".join(lines).encode()
    out, _ = through_cli(raw, compat=False)
    assert out.endswith("(prog+0x0)\r")
    out, _ = through_cli(raw, compat=True)
    assert out.endswith("(prog+0x0)\r\n")


def test_four_braces_are_a_bad_tag_not_a_frame() -> None:
    """`{{{{bt:...}}}` is an element with the tag `{bt` (llvm: an error), not a
    frame after a brace (the fast path once printed the frame)."""
    lines = [
        "{{{module:0:prog:elf:aa01}}}",
        "{{{mmap:0x1000:0x1000:load:0:rx:0}}}",
        "{{{{bt:0:0x1001}}}",
    ]
    raw = "".join(text + "\n" for text in lines).encode()
    for compat in (False, True):
        out, err = through_cli(raw, compat)
        assert "tags must be all lowercase characters" in err
        assert "(prog+0x0)" not in out


def test_bt_lines_answered_as_bytes() -> None:
    """`bt` lines after plain text take the byte path (no decoding): an inline chain
    joined by the line's own ending, text around the element kept byte for byte,
    and the line count kept for the diagnostics that follow."""
    lines = [
        "{{{module:0:prog:elf:aa01}}}",
        "{{{mmap:0x1000:0x1000:load:0:rx:0}}}",
        "plain",
        "[t] \udcff {{{bt:0:0x1800:pc}}} é",
        "{{{bt:1:0x1801:ra}}}",
        "{{{bt:2:0x1802}}} {{{pc:0x1000}}}",
        "{{{{bt:0:0x1001}}}",
    ]
    for eol in ("\n", "\r\n"):
        raw = "".join(text + eol for text in lines).encode("utf-8", "surrogateescape")
        for compat in (False, True):
            out, err = through_cli(raw, compat)
            assert (out, err) == general(lines, compat, eol)
            assert f"/g.c:3:4 (prog+0x800){eol}" in out
            assert compat or "log:7:4: error: tags must be all lowercase" in err
