"""What a line of symbolizer markup is made of: text, SGR codes and elements.

The parser (`parser.py`) turns a line into a tuple of spans; everything
downstream (element decoding, the context, the renderers, the language
server) works on these spans. Every span knows where it came from: a
0-based line number and 0-based columns counted in characters of the
decoded line (the filter converts to byte offsets where llvm reports bytes;
the language server converts to UTF-16 units).

Spans are plain (not frozen) records because a log has millions of them
and frozen ones cost three times as much to build; treat them as
immutable all the same. (Records from stackmark/plain.py rather than
dataclasses: they are on the start-up path.)

A multi-line element (`hexdict`) is reported once, on the line where it
closes; `line`/`start` then point at its `{{{` on an earlier line.
"""

from __future__ import annotations

from stackmark.plain import Record

# Tags the markup specification defines.
CONTEXTUAL_TAGS = frozenset({"reset", "module", "mmap"})
PRESENTATION_TAGS = frozenset({"symbol", "pc", "bt", "data", "hexdict"})
TRIGGER_TAGS = frozenset({"dumpfile"})
KNOWN_TAGS = CONTEXTUAL_TAGS | PRESENTATION_TAGS | TRIGGER_TAGS
# Tags whose element may span lines.
MULTILINE_TAGS = frozenset({"hexdict"})


class Field(Record):
    """One `:`-separated field of an element, with its position."""

    __slots__ = _fields = __match_args__ = ("text", "line", "start")
    text: str
    line: int
    start: int  # column of the first character (of where it would be, if empty)

    def __init__(self, text: str, line: int, start: int) -> None:
        self.text = text
        self.line = line
        self.start = start

    @property
    def end(self) -> int:
        return self.start + len(self.text)


class Text(Record):
    """Plain log text (outside any element), never interpreted."""

    __slots__ = _fields = __match_args__ = ("text", "line", "start")
    text: str
    line: int
    start: int

    def __init__(self, text: str, line: int, start: int) -> None:
        self.text = text
        self.line = line
        self.start = start

    @property
    def end(self) -> int:
        return self.start + len(self.text)


class Sgr(Record):
    """One of the SGR colour codes the spec allows: ESC[0m, ESC[1m, ESC[30m..ESC[37m."""

    __slots__ = _fields = __match_args__ = ("text", "line", "start", "code")
    text: str
    line: int
    start: int
    code: int  # 0 reset, 1 bold, 30..37 colours

    def __init__(self, text: str, line: int, start: int, code: int) -> None:
        self.text = text
        self.line = line
        self.start = start
        self.code = code

    @property
    def end(self) -> int:
        return self.start + len(self.text)


class Continuation(Record):
    """Part of a multi-line element that has not closed yet on this line.

    If the element never closes, these parts turn out to be plain text
    (see `ParsedLine.abandoned`).
    """

    __slots__ = _fields = __match_args__ = ("text", "line", "start")
    text: str
    line: int
    start: int

    def __init__(self, text: str, line: int, start: int) -> None:
        self.text = text
        self.line = line
        self.start = start

    @property
    def end(self) -> int:
        return self.start + len(self.text)


class Element(Record):
    """`{{{tag:field:...}}}`: everything from `{{{` to the first `}}}` after it.

    `text` is the source text, braces included (lines of a multi-line
    element joined by '\\n'). `tag_start`/`tag_end` are columns on `line`.
    `end` is the column just past `}}}` on `end_line`.
    """

    __slots__ = _fields = __match_args__ = (
        "tag",
        "fields",
        "text",
        "line",
        "start",
        "end_line",
        "end",
    )
    tag: str
    fields: tuple[Field, ...]
    text: str
    line: int
    start: int
    end_line: int
    end: int

    def __init__(
        self,
        tag: str,
        fields: tuple[Field, ...],
        text: str,
        line: int,
        start: int,
        end_line: int,
        end: int,
    ) -> None:
        self.tag = tag
        self.fields = fields
        self.text = text
        self.line = line
        self.start = start
        self.end_line = end_line
        self.end = end

    @property
    def tag_start(self) -> int:
        return self.start + 3

    @property
    def tag_end(self) -> int:
        return self.start + 3 + len(self.tag)

    @property
    def multiline(self) -> bool:
        return self.end_line != self.line

    @property
    def content(self) -> str:
        """What is between the braces."""
        return self.text[3:-3]

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column) of character `offset` of `text`."""
        before = self.text[:offset]
        newlines = before.count("\n")
        if newlines == 0:
            return self.line, self.start + offset
        return self.line + newlines, offset - before.rfind("\n") - 1


Span = Text | Sgr | Element | Continuation


def is_tag_valid(tag: str) -> bool:
    """Tags are all lower-case ASCII letters (an empty tag is not an element at all)."""
    return all("a" <= c <= "z" for c in tag)
