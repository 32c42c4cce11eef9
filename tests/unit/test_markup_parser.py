"""The markup line parser: spans, fields and positions, llvm 19's syntax rules."""

from __future__ import annotations

from stackmark.markup.parser import MAX_MULTILINE_LINES, MarkupParser, parse_line
from stackmark.markup.syntax import Continuation, Element, Sgr, Text

ESC = "\x1b"


def kinds(text: str) -> list[tuple[str, str]]:
    return [(type(s).__name__, s.text) for s in parse_line(text).spans]


def test_text_and_element_positions() -> None:
    parsed = parse_line("crash {{{pc:0x1a:ra}}} here", line=7)
    text, element, tail = parsed.spans
    assert text == Text("crash ", 7, 0)
    assert isinstance(element, Element)
    assert (element.tag, element.start, element.end, element.line) == ("pc", 6, 22, 7)
    assert (element.tag_start, element.tag_end) == (9, 11)
    assert [(f.text, f.start, f.end) for f in element.fields] == [("0x1a", 12, 16), ("ra", 17, 19)]
    assert tail == Text(" here", 7, 22)


def test_fields_split_on_every_colon_and_keep_empty_ones() -> None:
    (element,) = parse_line("{{{pc:0x1:}}}").spans
    assert isinstance(element, Element)
    assert [f.text for f in element.fields] == ["0x1", ""]
    (element,) = parse_line("{{{symbol:}}}").spans
    assert isinstance(element, Element)
    assert [f.text for f in element.fields] == [""]
    assert element.fields[0].start == 10
    (element,) = parse_line("{{{reset}}}").spans
    assert isinstance(element, Element)
    assert element.fields == ()


def test_empty_tag_is_plain_text() -> None:
    assert kinds("a {{{}}} b {{{:x}}} c") == [("Text", "a {{{}}} b {{{:x}}} c")]
    # the search resumes after the empty element
    assert kinds("{{{}}}{{{pc:0x1}}}") == [("Text", "{{{}}}"), ("Element", "{{{pc:0x1}}}")]


def test_invalid_tags_still_make_elements() -> None:
    for tag in ("PC", "p-c", "pc2", " pc", "{pc"):
        (element, *_rest) = [
            s for s in parse_line("{{{" + tag + ":1}}}").spans if isinstance(s, Element)
        ]
        assert element.tag == tag


def test_braces_inside_an_element() -> None:
    spans = parse_line("{{{symbol:{{{symbol:_Z3foov}}}}}}").spans
    element, rest = spans
    assert isinstance(element, Element)
    assert [f.text for f in element.fields] == ["{{{symbol", "_Z3foov"]
    assert rest == Text("}}}", 0, 30)
    element, rest = parse_line("{{{{pc:0x1}}}}").spans
    assert isinstance(element, Element) and element.tag == "{pc"
    assert rest.text == "}"


def test_unterminated_element_and_whitespace() -> None:
    assert kinds("{{{pc:0x1") == [("Text", "{{{pc:0x1")]
    (element,) = parse_line("{{{pc: 0x1 }}}").spans
    assert isinstance(element, Element)
    assert element.fields[0].text == " 0x1 "


def test_sgr_codes_only_exact_forms_outside_elements() -> None:
    line = f"{ESC}[31mred{ESC}[0m {ESC}[1m{ESC}[37m {ESC}[4m{ESC}[38;5;196m{ESC}[0;31m{ESC}[m"
    spans = parse_line(line).spans
    codes = [s.code for s in spans if isinstance(s, Sgr)]
    assert codes == [31, 0, 1, 37]
    assert "".join(s.text for s in spans) == line
    (element,) = parse_line("{{{symbol:" + ESC + "[31mx}}}").spans
    assert isinstance(element, Element)  # not split by the SGR code inside


def test_spans_rebuild_the_line() -> None:
    line = f"a{ESC}[32m{{{{{{bt:1:0x2}}}}}} {{{{{{}}}}}}x{{{{{{pc:0x1}}}}}}tail{{{{{{"
    spans = parse_line(line).spans
    assert "".join(s.text for s in spans) == line
    positions = [s.start for s in spans]
    assert positions == sorted(positions)


def test_llvm_parser_has_no_multiline_elements() -> None:
    parsed = parse_line("regs {{{hexdict:")
    assert parsed.pending is None
    assert kinds("regs {{{hexdict:") == [("Text", "regs {{{hexdict:")]


def test_multiline_hexdict() -> None:
    parser = MarkupParser()
    first = parser.parse("regs: {{{hexdict:", 3)
    assert first.pending is not None
    assert first.spans == (Text("regs: ", 3, 0), Continuation("{{{hexdict:", 3, 6))
    middle = parser.parse("  RIP: 0x10 RSP: 0", 4, first.pending)
    assert middle.spans == (Continuation("  RIP: 0x10 RSP: 0", 4, 0),)
    last = parser.parse("  }} }}} after {{{pc:0x1}}}", 5, middle.pending)
    assert last.pending is None
    element, text, pc = last.spans
    assert isinstance(element, Element) and element.tag == "hexdict"
    assert (element.line, element.start, element.end_line, element.end) == (3, 6, 5, 8)
    assert element.text == "{{{hexdict:\n  RIP: 0x10 RSP: 0\n  }} }}}"
    assert element.position(element.text.index("RIP")) == (4, 2)
    assert text == Text(" after ", 5, 8)
    assert isinstance(pc, Element)


def test_multiline_opened_after_complete_elements() -> None:
    parsed = MarkupParser().parse("{{{pc:0x1}}} {{{hexdict:A: 0x1", 0)
    assert parsed.pending is not None
    assert [type(s).__name__ for s in parsed.spans] == ["Element", "Text", "Continuation"]


def test_multiline_needs_a_colon_and_a_multiline_tag() -> None:
    parser = MarkupParser()
    assert parser.parse("{{{hexdict", 0).pending is None
    assert parser.parse("{{{pc:0x1", 0).pending is None
    assert parser.parse("{{{hexdict:a }}} {{{pc:", 0).pending is None


def test_multiline_abandoned_when_another_element_opens() -> None:
    parser = MarkupParser()
    opened = parser.parse("{{{hexdict:", 0)
    parsed = parser.parse("x {{{pc:0x1}}}", 1, opened.pending)
    assert parsed.abandoned == opened.pending
    assert parsed.pending is None
    assert [type(s).__name__ for s in parsed.spans] == ["Text", "Element"]


def test_multiline_gives_up_after_many_lines() -> None:
    parser = MarkupParser()
    state = parser.parse("{{{hexdict:", 0).pending
    for line in range(1, MAX_MULTILINE_LINES):
        state = parser.parse("A: 0x1", line, state).pending
        assert state is not None
    last = parser.parse("A: 0x1", MAX_MULTILINE_LINES, state)
    assert last.pending is None and last.abandoned is not None
    assert last.spans == (Text("A: 0x1", MAX_MULTILINE_LINES, 0),)


def test_multiline_fields_have_positions() -> None:
    parser = MarkupParser()
    opened = parser.parse("{{{hexdict:a", 0)
    closed = parser.parse("b:c}}}", 1, opened.pending)
    (element,) = closed.elements
    assert [(f.text, f.line, f.start) for f in element.fields] == [("a\nb", 0, 11), ("c", 1, 2)]
