"""The language server's document model and incremental index against the core.

Every test here compares with something computed independently: the
document's text with plain string edits, the index's diagnostics with a
from-scratch core pass over the whole text (tests/lsp/reference.py), the
fast scanner with the core parser and decoder.
"""

from __future__ import annotations

import random
import re
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stackmark_lsp import scan
from stackmark_lsp.document import Document, PositionCodec
from stackmark_lsp.index import F_BT, F_DATA, F_PC, Index, frame_of

from stackmark.markup.context import MarkupContext
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    MmapElement,
    ModuleElement,
    PcElement,
    ResetElement,
    SymbolElement,
    decode,
)
from stackmark.markup.parser import MarkupParser
from stackmark.markup.syntax import MULTILINE_TAGS
from stackmark.model import Module
from tests.lsp.reference import lsp_lines, problems

# -- pieces of logs ------------------------------------------------------------------

HEX = "0123456789abcdefABCDEF"
ADDRESSES = ["0x1000", "0x1fff", "0x2000", "0x2abc", "0x3000", "0x0", "0", "0x10000000000000000",
             "0X10", "0x", "0x00000000000001500", "42", " 0x1", "0x5000"]  # fmt: skip
IDS = ["0", "1", "2", "0x1", "010", "08", "0X2", "-1", "x", "18446744073709551616"]
SIZES = ["0x1000", "0x0", "4096", "0x800", "0", "010", "0xffffffffffffffff"]
MODES = ["r", "rx", "RWX", "w", "xr", "", "rwx", "g"]
NAMES = ["libc.so", "a b", "名前", "", "x{y", "q}"]
BUILD_IDS = ["abcd", "ABC", "0123456789abcdef", "", "xyz", "1"]


def element(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(
        ["module", "mmap", "mmap", "reset", "pc", "bt", "bt", "data", "symbol", "dumpfile",
         "hexdict", "other", "bad"]
    ))  # fmt: skip
    pick = lambda values: draw(st.sampled_from(values))  # noqa: E731
    if kind == "module":
        fields = [pick(IDS), pick(NAMES), pick(["elf", "elf", "ELF"]), pick(BUILD_IDS)]
        if draw(st.integers(0, 9)) == 0:
            fields.append("extra")
        return "{{{module:" + ":".join(fields) + "}}}"
    if kind == "mmap":
        fields = [pick(ADDRESSES), pick(SIZES), pick(["load", "load", "LOAD"]), pick(IDS),
                  pick(MODES), pick(ADDRESSES)]  # fmt: skip
        if draw(st.integers(0, 9)) == 0:
            fields.pop()
        return "{{{mmap:" + ":".join(fields) + "}}}"
    if kind == "reset":
        return pick(["{{{reset}}}", "{{{reset}}}", "{{{reset:x}}}"])
    if kind == "pc":
        suffix = pick(["", "", ":ra", ":pc", ":RA", ":x:y"])
        return "{{{pc:" + pick(ADDRESSES) + suffix + "}}}"
    if kind == "bt":
        frame = pick(["0", "1", "12", "007", "0x1", "-1", "99999999999999999999"])
        suffix = pick(["", ":ra", ":pc", ":ra:x", ":bad"])
        return "{{{bt:" + frame + ":" + pick(ADDRESSES) + suffix + "}}}"
    if kind == "data":
        return "{{{data:" + pick(ADDRESSES) + pick(["", "", ":x"]) + "}}}"
    if kind == "symbol":
        return "{{{symbol:" + pick(["_Z3foov", "", "a:b", "main"]) + "}}}"
    if kind == "dumpfile":
        return "{{{dumpfile:" + pick(["sancov:x.1", "", "a"]) + "}}}"
    if kind == "hexdict":
        return pick(["{{{hexdict:r1: 0x1000 r2:0x2}}}", "{{{hexdict:\n  pc: 0x1010\n}}}",
                     "{{{hexdict:\nsp: 0xzz", "{{{hexdict: a: 0x1000"])  # fmt: skip
    if kind == "other":
        return pick(["{{{frame:1}}}", "{{{}}}", "{{{:x}}}", "{{{pc:0x1", "{{{{pc:0x1000}}}}"])
    return pick(["{{{PC:0x1000}}}", "{{{p-c:1}}}", "{{{ pc:0x1}}}"])


@st.composite
def logs(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        parts = []
        for _ in range(draw(st.integers(0, 3))):
            parts.append(draw(st.sampled_from(["", "text ", "ñ ", "\x1b[31m", "  "])))
            parts.append(element(draw))
        parts.append(draw(st.sampled_from(["", " tail", "}}}", "{{{"])))
        lines.append("".join(parts))
    eol = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    return eol.join(lines) + draw(st.sampled_from(["", eol]))


def base_log() -> str:
    """A well-formed log: two processes, frames in and out of their mappings."""
    return "\n".join([
        "boot",
        "{{{module:0:prog:elf:abcd}}}",
        "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}",
        "[1] {{{bt:0:0x1010:pc}}}",
        "[1] {{{bt:1:0x1800:ra}}}",
        "{{{reset}}}",
        "{{{module:1:lib:elf:ef01}}}",
        "{{{mmap:0x5000:0x800:load:1:r:0x0}}}",
        "{{{pc:0x5010}}} and {{{data:0x5100}}}",
        "{{{bt:0:0x1010}}}",
        "end",
    ])  # fmt: skip


# -- the scanner ---------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(logs())
def test_scanner_agrees_with_core(text: str) -> None:
    """Whatever the scanner accepts, the core parses to the same elements, values, and no
    diagnostics."""
    parser = MarkupParser(MULTILINE_TAGS)
    for line in lsp_lines(text):
        scanned = scan.scan_line(line)
        if scanned is None:
            continue
        parsed = parser.parse(line, 0, None)
        assert parsed.pending is None
        assert len(parsed.elements) == len(scanned)
        for element, m in zip(parsed.elements, scanned, strict=True):
            typed = decode(element)
            assert typed.diagnostics == []
            assert (element.start, element.end) == m.span()
            kind = m.lastindex
            if kind == scan.BT:
                assert isinstance(typed, BtElement)
                assert (typed.frame, typed.address, typed.pc_type) == (
                    int(m.group(2)),
                    int(m.group(3), 16),
                    m.group(4),
                )
                assert m.span(3) == (element.fields[1].start, element.fields[1].end)
            elif kind == scan.PC:
                assert isinstance(typed, PcElement)
                assert (typed.address, typed.pc_type) == (int(m.group(6), 16), m.group(7))
            elif kind == scan.DATA:
                assert isinstance(typed, DataElement) and typed.address == int(m.group(9), 16)
            elif kind == scan.MMAP:
                assert isinstance(typed, MmapElement)
                assert typed.module_relative_error is None
                assert (
                    typed.start,
                    typed.size,
                    typed.module_id,
                    typed.mode,
                    typed.module_relative,
                ) == (
                    int(m.group(11), 16),
                    scan.parse_id(m.group(12)),
                    scan.parse_id(m.group(13)),
                    m.group(14).lower(),
                    int(m.group(15), 16),
                )
            elif kind == scan.MODULE:
                assert isinstance(typed, ModuleElement)
                assert (typed.module_id, typed.name, typed.build_id) == (
                    scan.parse_id(m.group(17)),
                    m.group(18),
                    scan.build_id(m.group(19)),
                )
            elif kind == scan.RESET:
                assert isinstance(typed, ResetElement)
            elif kind == scan.SYMBOL:
                assert isinstance(typed, SymbolElement) and typed.name == m.group(22)
            else:
                assert isinstance(typed, DumpfileElement)  # fmt: skip


def test_scanner_declines_what_needs_the_core() -> None:
    for line in [
        "{{{pc:0}}}",
        "{{{module:010:x:elf:ab}}}",
        "{{{PC:0x1}}}",
        "{{{pc:0x1",
        "{{{hexdict:a: 0x1}}}",
        "{{{pc:0x1:ra:x}}}",
        "{{{frame:1}}}",
        "{{{}}}",
    ]:
        assert scan.scan_line(line) is None, line  # fmt: skip
    assert scan.scan_line("no markup") == []


# -- whole logs: the index against the core -------------------------------------------


def index_problems(index: Index) -> list[tuple[int, int | None, int | None, str, str]]:
    found = [(line, d.column, d.end_column, d.code, d.message) for line, d in index.diagnostics()]
    return sorted(found, key=lambda p: (p[0], p[1] or -1, p[2] or -1, p[3], p[4]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_index_agrees_with_core(text: str) -> None:
    index = Index(Document("file:///t.log", text))
    assert index_problems(index) == problems(text)


def test_index_of_a_clean_log() -> None:
    text = base_log()
    index = Index(Document("file:///t.log", text))
    assert index_problems(index) == problems(text)
    found = index_problems(index)
    assert [(p[0], p[3]) for p in found] == [(9, "no-mmap")]  # the bt after the reset
    epoch = index.epoch_at(3, 4)
    mapping = epoch.mapping_at(0x1010, (3, 4))
    assert mapping is not None and mapping.module.name == "prog"
    assert epoch.mapping_at(0x1010, (2, 0)) is None  # before its mmap
    assert index.epoch_at(8, 0).module(1) is not None


def frame_kinds(text: str) -> list[tuple[int, int]]:
    """Per line, from scratch with the core: (which of bt/pc/data it holds, as index flags;
    its first bt frame number or -1), counting well-formed elements where the parser
    reports them (a multi-line element on the line it closes)."""
    parser = MarkupParser(MULTILINE_TAGS)
    pending = None
    found = []
    for number, line in enumerate(lsp_lines(text)):
        parsed = parser.parse(line, number, pending)
        pending = parsed.pending
        flags, frame = 0, -1
        for element in parsed.elements:
            typed = decode(element)
            if not typed.ok:
                continue
            if isinstance(typed, BtElement):
                flags |= F_BT
                frame = typed.frame if frame < 0 else frame
            elif isinstance(typed, PcElement):
                flags |= F_PC
            elif isinstance(typed, DataElement):
                flags |= F_DATA
        found.append((flags, frame))
    return found


def index_frame_kinds(index: Index) -> list[tuple[int, int]]:
    found = []
    for line in range(len(index.document)):
        entry = index.entry(line)
        if entry is None:
            found.append((0, -1))
        else:
            found.append((index.flags(line) & (F_BT | F_PC | F_DATA), frame_of(entry)))
    return found


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_lazy_entries_agree_with_core(text: str) -> None:
    """The entries of plain frame lines, which the opening pass leaves out and fills in
    on first use, say what the core finds on each line."""
    index = Index(Document("file:///t.log", text))
    assert index_frame_kinds(index) == frame_kinds(text)


def test_lazy_entries_of_a_large_log() -> None:
    """Many crash reports over many chunks: frame numbers and kinds of every line, and no
    chunk left lazy once completed."""
    text = "\n".join([base_log()] * 400)
    index = Index(Document("file:///t.log", text))
    assert any(chunk.lazy for chunk in index.document.chunks)
    assert index_problems(index) == problems(text)
    assert index_frame_kinds(index) == frame_kinds(text)
    assert not index.complete(10**6)
    assert not any(chunk.lazy for chunk in index.document.chunks)


# -- edits ----------------------------------------------------------------------------


def apply(text: str, start: tuple[int, int], end: tuple[int, int], new: str) -> str:
    """The same edit on a plain string (positions in LSP lines)."""
    pieces = re.split(r"(\r\n|\r|\n)", text)
    lines = pieces[0::2]
    breaks = [*pieces[1::2], ""]

    def offset(line: int, column: int) -> int:
        return sum(len(lines[i]) + len(breaks[i]) for i in range(line)) + column

    return text[: offset(*start)] + new + text[offset(*end) :]


INSERTS = ["", "x", "\n", "{{{reset}}}\n", "{{{module:0:m:elf:ab}}}", "\n{{{bt:3:0x1010}}}\n",
           "{{{mmap:0x1000:0x10:load:0:r:0x0}}}", "{{{hexdict:\n", "}}}\n", "\r", "\r\n",
           "ñ", "{{{pc:0x5010}}}", "{{{bt:0:0x1800"]  # fmt: skip


def random_edit(rng: random.Random, text: str) -> tuple[tuple[int, int], tuple[int, int], str]:
    lines = lsp_lines(text)

    def position() -> tuple[int, int]:
        line = rng.randrange(len(lines))
        return line, rng.randint(0, len(lines[line]))

    a, b = sorted((position(), position()))
    if rng.random() < 0.5:  # mostly small edits
        b = a if rng.random() < 0.5 else (a[0], min(len(lines[a[0]]), a[1] + rng.randint(0, 5)))
    return a, b, rng.choice(INSERTS)


def declared_build_ids(text: str) -> Counter[str]:
    """Build IDs of the module elements the core accepts, counted, from scratch."""
    found: Counter[str] = Counter()
    parser = MarkupParser(MULTILINE_TAGS)
    context = MarkupContext()
    pending = None
    for number, line in enumerate(lsp_lines(text)):
        parsed = parser.parse(line, number, pending)
        pending = parsed.pending
        for element in parsed.elements:
            typed = decode(element)
            if not typed.ok:
                continue
            if isinstance(typed, ResetElement):
                context = MarkupContext()
            elif isinstance(typed, ModuleElement) and isinstance(
                context.declare_module(typed), Module
            ):
                found[typed.build_id] += 1
    return found


def check_edits(text: str, seed: int, count: int, chunk_target: int | None = None) -> None:
    rng = random.Random(seed)
    document = Document("file:///t.log", text)
    if chunk_target is not None:
        from stackmark_lsp import document as document_module

        pieces = document_module.cut(text, chunk_target)
        document.chunks = [
            document_module.Chunk(p, i == len(pieces) - 1) for i, p in enumerate(pieces)
        ]
        document.renumber()
    index = Index(document)
    assert index_problems(index) == problems(text)
    for _ in range(count):
        start, end, new = random_edit(rng, text)
        text = apply(text, start, end, new)
        edit = document.replace(start, end, new)
        index.edit(edit)
        assert document.text == text
        assert len(document) == len(lsp_lines(text))
        assert index_problems(index) == problems(text), (start, end, new)
        assert index.build_ids == declared_build_ids(text)
        if rng.random() < 0.2:
            assert index_frame_kinds(index) == frame_kinds(text), (start, end, new)
        top = document.chunks[0].entry
        assert top is not None and top.start is None  # the epoch before any reset


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.integers(0, 2**32))
def test_edits_keep_the_index_right(text: str, seed: int) -> None:
    check_edits(text, seed, 12)


def test_edits_across_small_chunks() -> None:
    """Chunks of ~40 characters: edits merge and cut them, infos and epochs follow."""
    text = "\n".join([base_log()] * 4)
    for seed in range(40):
        check_edits(text, seed, 25, chunk_target=40)


def test_removing_a_module_line_unresolves_later_frames() -> None:
    text = base_log()
    document = Document("file:///t.log", text)
    index = Index(document)
    assert [p[0] for p in index_problems(index)] == [9]
    index.edit(document.replace((1, 0), (2, 0), ""))  # delete the module line
    lines = sorted({p[0] for p in index_problems(index)})
    # The mmap now names an unknown module; the frames it covered have no mmap.
    assert lines == [1, 2, 3, 8]
    assert index_problems(index) == problems(document.text)


# -- positions --------------------------------------------------------------------------


def test_position_codec() -> None:
    line = "a😀b\udc80c"  # an astral character and an undecodable byte
    utf16, utf8 = PositionCodec("utf-16"), PositionCodec("utf-8")
    assert [utf16.to_client(line, i) for i in range(6)] == [0, 1, 3, 4, 5, 6]
    assert [utf8.to_client(line, i) for i in range(6)] == [0, 1, 5, 6, 7, 8]
    assert utf16.to_index(line, 3) == 2 and utf16.to_index(line, 2) == 1  # inside a pair
    assert utf8.to_index(line, 5) == 2 and utf8.to_index(line, 99) == 5


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("a:{}\u00e9\u20ac\U0001f600\udc80"), max_size=40))
def test_position_codec_agrees_with_the_encoders(line: str) -> None:
    """Every index and column, against the lengths Python's own encoders give."""
    for encoding, codec in (
        ("utf-16-le", PositionCodec("utf-16")),
        ("utf-8", PositionCodec("utf-8")),
    ):
        unit = 2 if encoding == "utf-16-le" else 1

        def units(text: str, encoding: str = encoding, unit: int = unit) -> int:
            return (
                len(text.encode(encoding, "surrogateescape" if unit == 1 else "surrogatepass"))
                // unit
            )

        for index in range(len(line) + 1):
            column = units(line[:index])
            assert codec.to_client(line, index) == column
            assert codec.to_index(line, column) == index
            if index < len(line) and units(line[index]) > 1:  # inside a wide character
                assert codec.to_index(line, column + 1) == index


def test_position_codec_is_linear_on_a_long_line() -> None:
    """Converting every token column of one long line reuses one table for it."""
    line = "\U0001f600{{{pc:0x1}}}" * 20_000
    codec = PositionCodec("utf-16")
    indexes = range(0, len(line), 13)
    columns = [codec.to_client(line, i) for i in indexes]
    assert columns[-1] == len(line[: indexes[-1]].encode("utf-16-le")) // 2
    assert len(codec._tables) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.integers(0, 2**32))
def test_edits_with_tiny_chunks(text: str, seed: int) -> None:
    """Multi-line elements and contexts across chunk boundaries (chunks of ~30 characters)."""
    check_edits(text, seed, 8, chunk_target=30)
