"""Semantic tokens: tags, addresses and fields of markup elements.

Only the parts that mean something are tokens: the tag (`keyword`),
numbers and addresses (`number`), names and build IDs (`string`, with
`declaration` on a module's name), fixed words such as `elf`, `load`,
`ra` or a mode (`enumMember`), the name in `{{{symbol}}}` (`function`)
and hexdict keys (`variable`). The braces and colons are left to the
editor's grammar (a TextMate injection colours them), so the two agree.

Lines the fast scanner reads are tokenised from its match; any other
line from the core's elements.
"""

from __future__ import annotations

from lsprotocol import types

from stackmark.markup.elements import HexdictElement
from stackmark.markup.syntax import Element
from stackmark_lsp import scan
from stackmark_lsp.index import F_CONT, F_SLOW, flags_of
from stackmark_lsp.logs import OpenLog

TOKEN_TYPES = ["keyword", "number", "string", "enumMember", "function", "variable"]
TOKEN_MODIFIERS = ["declaration"]
LEGEND = types.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)

KEYWORD, NUMBER, STRING, ENUM, FUNCTION, VARIABLE = range(6)
DECLARATION = 1

Token = tuple[int, int, int, int, int]  # line, start, end, type, modifiers

# Field types by tag, for elements read by the core (in field order).
_FIELDS = {
    "bt": (NUMBER, NUMBER, ENUM),
    "pc": (NUMBER, ENUM),
    "data": (NUMBER,),
    "mmap": (NUMBER, NUMBER, ENUM, NUMBER, ENUM, NUMBER),
    "module": (NUMBER, STRING, ENUM, STRING),
    "symbol": (FUNCTION,),
    "dumpfile": (ENUM, STRING),
}

# Group numbers of the scanner's match, by kind: (group, type, modifiers).
_GROUPS: dict[int, tuple[tuple[int, int, int], ...]] = {
    scan.BT: ((2, NUMBER, 0), (3, NUMBER, 0), (4, ENUM, 0)),
    scan.PC: ((6, NUMBER, 0), (7, ENUM, 0)),
    scan.DATA: ((9, NUMBER, 0),),
    scan.MMAP: ((11, NUMBER, 0), (12, NUMBER, 0), (13, NUMBER, 0), (14, ENUM, 0), (15, NUMBER, 0)),
    scan.MODULE: ((17, NUMBER, 0), (18, STRING, DECLARATION), (19, STRING, 0)),
    scan.SYMBOL: ((22, FUNCTION, 0),),
}
_TAG_LENGTH = {scan.BT: 2, scan.PC: 2, scan.DATA: 4, scan.MMAP: 4, scan.MODULE: 6,
               scan.RESET: 5, scan.SYMBOL: 6, scan.DUMPFILE: 8}  # fmt: skip


def line_tokens(log: OpenLog, line: int, text: str) -> list[Token]:
    """The tokens of the elements reported on one line (a multi-line element's
    tokens carry the lines of its fields)."""
    flags = log.index.flags(line)
    scanned = scan.scan_line(text) if not flags & (F_CONT | F_SLOW) else None
    if scanned is not None:
        return _scanned_tokens(line, scanned)
    tokens: list[Token] = []
    for element, typed in log.index.elements(line).elements:
        tokens.extend(_element_tokens(element, typed))
    return tokens


def _scanned_tokens(line: int, matches: list[scan.Scanned]) -> list[Token]:
    tokens: list[Token] = []
    for m in matches:
        kind = m.lastindex
        assert kind is not None
        tag_start = m.start() + 3
        tokens.append((line, tag_start, tag_start + _TAG_LENGTH[kind], KEYWORD, 0))
        spans = [(m.start(g), m.end(g), kind_, mods) for g, kind_, mods in _GROUPS.get(kind, ())]
        if kind == scan.MMAP:  # the word "load" sits between the size and the module ID
            spans.append((m.end(12) + 1, m.start(13) - 1, ENUM, 0))
        elif kind == scan.MODULE:  # and "elf" between the name and the build ID
            spans.append((m.end(18) + 1, m.start(19) - 1, ENUM, 0))
        elif kind == scan.DUMPFILE and m.end() - 3 > tag_start + 9:
            spans.append((tag_start + 9, m.end() - 3, STRING, 0))
        tokens.extend((line, *span) for span in spans if span[0] >= 0 and span[1] > span[0])
    return tokens


def _element_tokens(element: Element, typed: object) -> list[Token]:
    tokens: list[Token] = [(element.line, element.tag_start, element.tag_end, KEYWORD, 0)]
    if isinstance(typed, HexdictElement):
        for pair in typed.pairs:
            key = pair.key_field
            tokens.append((key.line, key.start, key.end, VARIABLE, 0))
            value = pair.value_field
            if value is not None:
                kind = NUMBER if pair.value is not None else STRING
                tokens.append((value.line, value.start, value.end, kind, 0))
        return tokens
    kinds = _FIELDS.get(element.tag, ())
    for number, field in enumerate(element.fields):
        if field.end <= field.start:
            continue
        kind = kinds[number] if number < len(kinds) else STRING
        modifiers = DECLARATION if element.tag == "module" and number == 1 else 0
        tokens.append((field.line, field.start, field.end, kind, modifiers))
    return tokens


def encode(log: OpenLog, first: int, stop: int) -> list[int]:
    """The LSP encoding (5 relative ints per token) of the tokens on lines first..stop-1."""
    tokens: list[Token] = []
    for line, entry in log.index.entries(first, len(log.document)):
        if line >= stop and not flags_of(entry) & F_CONT:
            break  # (a multi-line element begun in range is reported where it closes)
        tokens.extend(line_tokens(log, line, log.document.line(line)))
    tokens.sort()
    data: list[int] = []
    previous_line = previous_start = 0
    codec = log.codec
    text_line, text = -1, ""
    for line, start, end, kind, modifiers in tokens:
        if not first <= line < stop:
            continue
        if line != text_line:
            text_line, text = line, log.document.line(line)
        if text.isascii():
            client_start, length = start, end - start
        else:
            client_start = codec.to_client(text, start)
            length = codec.to_client(text, end) - client_start
        delta_line = line - previous_line
        delta_start = client_start - previous_start if delta_line == 0 else client_start
        data.extend((delta_line, delta_start, length, kind, modifiers))
        previous_line, previous_start = line, client_start
    return data
