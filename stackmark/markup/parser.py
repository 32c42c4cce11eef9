"""Split one line of a log into spans: text, SGR codes and markup elements.

Parsing is per line so that an editor can re-parse just the lines that
changed; the only state carried from one line to the next is an open
multi-line element (`Pending`), which the caller passes back in.

The element syntax follows llvm-symbolizer 19 exactly (LLVM's
llvm/lib/DebugInfo/Symbolize/Markup.cpp, beside llvm/docs/SymbolizerMarkupFormat.rst):

* an element runs from `{{{` to the first `}}}` after it;
* the tag is everything up to the first `:`; an empty tag means the braces
  are plain text; any other tag (even an invalid one such as `PC`) makes an
  element, and the decoder reports the bad tag;
* the rest is split on every `:`, empty fields kept; nothing is trimmed;
* SGR codes are recognised only outside elements, in their exact forms.

Multi-line elements (`hexdict`) are recognised when the parser is built with
them (llvm 19 recognises none): a line whose last `{{{` opens such a tag
with no `}}}` after it starts one, and it closes at the first `}}}` on a
later line. A later line that opens another element (`{{{` before any
`}}}`) abandons it: the lines it held were plain text after all.
"""

from __future__ import annotations

import re

from stackmark.markup.syntax import (
    MULTILINE_TAGS,
    Continuation,
    Element,
    Field,
    Sgr,
    Span,
    Text,
)
from stackmark.plain import Record

_SGR = re.compile("\x1b\\[([01]|3[0-7])m")

# A multi-line element that has not closed after this many lines is given up
# (its lines are plain text); this bounds memory on a stray `{{{hexdict:`.
MAX_MULTILINE_LINES = 4096
# ... or holds more characters than this (a stray one followed by huge lines).
MAX_MULTILINE_CHARS = 1 << 20

# Elements recognised on one line; the rest of a line with more is plain text
# (`ParsedLine.capped`). Bounds the time and memory one hostile line costs:
# each element is a few hundred bytes of objects and a lookup.
MAX_ELEMENTS_PER_LINE = 10_000


class Pending(Record):
    """A multi-line element opened on an earlier line and not closed yet."""

    __slots__ = _fields = ("tag", "line", "start", "pieces", "size")
    tag: str
    line: int  # line of its `{{{`
    start: int  # column of its `{{{`
    pieces: tuple[str, ...]  # its text so far, one entry per line
    size: int  # characters in `pieces`

    def __init__(
        self, tag: str, line: int, start: int, pieces: tuple[str, ...], size: int = 0
    ) -> None:
        self.tag = tag
        self.line = line
        self.start = start
        self.pieces = pieces
        self.size = size


class ParsedLine(Record):
    """The spans of one line.

    `pending` is the multi-line element still open after this line (pass it
    to the next `parse` call). `abandoned` is set when an element that was
    open before this line turned out not to be one: its lines, from
    `abandoned.line` to this line's predecessor, are plain text. `capped`
    is the column from which the line was left as plain text because it
    holds more than `MAX_ELEMENTS_PER_LINE` elements.
    """

    __slots__ = _fields = ("line", "text", "spans", "pending", "abandoned", "capped")
    line: int
    text: str
    spans: tuple[Span, ...]
    pending: Pending | None
    abandoned: Pending | None
    capped: int | None

    def __init__(
        self,
        line: int,
        text: str,
        spans: tuple[Span, ...],
        pending: Pending | None = None,
        abandoned: Pending | None = None,
        capped: int | None = None,
    ) -> None:
        self.line = line
        self.text = text
        self.spans = spans
        self.pending = pending
        self.abandoned = abandoned
        self.capped = capped

    @property
    def elements(self) -> list[Element]:
        return [s for s in self.spans if isinstance(s, Element)]


def _fields(tag: str, body: str, line: int, column: int) -> tuple[Field, ...]:
    """Split `body` (what follows `tag:`) on every ':'; `column` is where body starts."""
    fields: list[Field] = []
    for part in body.split(":"):
        fields.append(Field(part, line, column))
        column += len(part) + 1
    return tuple(fields)


def make_element(text: str, line: int, start: int) -> Element:
    """Build an element from its full text (braces included), which may span lines."""
    content = text[3:-3]
    tag, colon, body = content.partition(":")
    if "\n" not in text:
        fields = _fields(tag, body, line, start + 4 + len(tag)) if colon else ()
        return Element(tag, fields, text, line, start, line, start + len(text))
    end_line = line + text.count("\n")
    end = len(text) - text.rfind("\n") - 1
    element = Element(tag, (), text, line, start, end_line, end)
    if not colon:
        return element
    spread: list[Field] = []
    offset = 4 + len(tag)
    for part in body.split(":"):
        field_line, field_col = element.position(offset)
        spread.append(Field(part, field_line, field_col))
        offset += len(part) + 1
    return Element(tag, tuple(spread), text, line, start, end_line, end)


def _text_spans(text: str, line: int, start: int, out: list[Span]) -> None:
    """Append `text` (found at column `start`) as Text and Sgr spans."""
    if not text:
        return
    if "\x1b" not in text:
        out.append(Text(text, line, start))
        return
    pos = 0
    for match in _SGR.finditer(text):
        if match.start() > pos:
            out.append(Text(text[pos : match.start()], line, start + pos))
        out.append(Sgr(match.group(0), line, start + match.start(), int(match.group(1))))
        pos = match.end()
    if pos < len(text):
        out.append(Text(text[pos:], line, start + pos))


class MarkupParser:
    """Parses lines into spans; `multiline_tags` says which elements may span lines."""

    def __init__(self, multiline_tags: frozenset[str] = MULTILINE_TAGS) -> None:
        self.multiline_tags = multiline_tags

    def parse(self, text: str, line: int = 0, pending: Pending | None = None) -> ParsedLine:
        """Parse `text` (one line, without its line terminator), line number `line`."""
        spans: list[Span] = []
        pos = 0
        abandoned: Pending | None = None
        if pending is not None:
            close = text.find("}}}")
            opener = text.find("{{{")
            reopened = opener >= 0 and (close < 0 or opener < close)
            if close >= 0 and not reopened:
                full = "\n".join((*pending.pieces, text[: close + 3]))
                spans.append(make_element(full, pending.line, pending.start))
                pos = close + 3
            elif (
                not reopened
                and len(pending.pieces) < MAX_MULTILINE_LINES
                and pending.size + len(text) <= MAX_MULTILINE_CHARS
            ):
                pieces = (*pending.pieces, text)
                grown = Pending(
                    pending.tag, pending.line, pending.start, pieces, pending.size + len(text)
                )
                cont = (Continuation(text, line, 0),) if text else ()
                return ParsedLine(line, text, cont, grown)
            else:
                abandoned = pending
        elif "{{{" not in text and "\x1b" not in text:
            return ParsedLine(line, text, (Text(text, line, 0),) if text else ())

        search = pos
        count = 0
        while True:
            begin = text.find("{{{", search)
            if begin < 0:
                break
            close = text.find("}}}", begin + 3)
            if close < 0:
                break
            search = close + 3
            if text.startswith(":", begin + 3) or close == begin + 3:
                continue  # empty tag: the braces are plain text
            if count == MAX_ELEMENTS_PER_LINE:
                _text_spans(text[pos:], line, pos, spans)
                return ParsedLine(line, text, tuple(spans), None, abandoned, capped=begin)
            count += 1
            _text_spans(text[pos:begin], line, pos, spans)
            spans.append(make_element(text[begin:search], line, begin))
            pos = search

        new_pending = None
        rest = text[pos:]
        opener = rest.rfind("{{{")
        if opener >= 0 and self.multiline_tags and "}}}" not in rest[opener + 3 :]:
            tag, colon, _ = rest[opener + 3 :].partition(":")
            if colon and tag in self.multiline_tags:
                _text_spans(rest[:opener], line, pos, spans)
                spans.append(Continuation(rest[opener:], line, pos + opener))
                new_pending = Pending(tag, line, pos + opener, (rest[opener:],), len(rest) - opener)
                return ParsedLine(line, text, tuple(spans), new_pending, abandoned)
        _text_spans(rest, line, pos, spans)
        return ParsedLine(line, text, tuple(spans), None, abandoned)


def parse_line(text: str, line: int = 0) -> ParsedLine:
    """Parse one line on its own, the way llvm-symbolizer 19 does (no multi-line elements)."""
    return _LLVM_PARSER.parse(text, line)


_LLVM_PARSER = MarkupParser(frozenset())
