"""The first crash reports of a large log, read from the start of its `didOpen` message.

A client sends a log as one `didOpen` notification whose JSON holds the
whole text: 72 MB for a million lines. Encoding it (the client), carrying
it through the pipe and decoding it (`json.loads` in the server) take about
0.7 s on their own before the server can read a line, and the whole log's
index takes as long again. The first lines of the message, though, arrive
as soon as the client starts writing it. For a large message the server's
reading loop (transport.py) hands its first bytes to `parse_head`, and the
server publishes the diagnostics of the crash reports they hold right away
(`Publisher.publish_head`, publishing.py); the whole log's diagnostics replace them
when the message is complete and read, as any later publication does.

`parse_head` recognises the start of a `didOpen` whose text item lists `uri`,
`languageId` and `version` before `text` (the order VS Code's and pygls'
clients write them in) and returns the text up to the start of the
last line that begins with `{{{reset}}}`. A crash report from such a line
on does not depend on anything before it, and nothing before it depends on
what comes after (split.py relies on the same), so the diagnostics of the
lines it returns are exactly those the whole log gives them; the server
also checks that no multi-line element is open at the cut. Anything else
(another message, another key order, a text without such a line) gives
None and the message is handled only when it is complete.
"""

from __future__ import annotations

import json
import os
import re
from typing import NamedTuple

# Messages shorter than this (in bytes) are only handled whole: below a few megabytes the
# whole log's diagnostics come soon enough. Tests lower it through the environment.
MIN_MESSAGE = int(os.environ.get("STACKMARK_LSP_HEAD_MIN_BYTES", str(4 << 20)))
# How much of a large message is read before its head is looked at: about 3,700 lines of
# a typical log, read and checked in a few milliseconds.
HEAD_BYTES = 256 << 10

# The message up to the opening quote of the text: `jsonrpc` and `method` (when they come
# first), then the text item's other fields. JSON allows whitespace between tokens.
_STRING = rb'"(?:[^"\\]|\\.)*"'
_START = re.compile(
    rb"\s*\{\s*(?:" + rb'"jsonrpc"\s*:\s*"2\.0"\s*,\s*'
    rb'|"method"\s*:\s*"textDocument/didOpen"\s*,\s*' + rb')*"params"\s*:\s*\{\s*'
    rb'"textDocument"\s*:\s*\{\s*'
    rb'(?P<fields>(?:"(?:uri|languageId|version)"\s*:\s*(?:' + _STRING + rb"|-?\d+)\s*,\s*)*)"
    rb'"text"\s*:\s*"'
)
# A line starting with a reset, as the JSON string spells it: the escaped newline before
# it (when its backslash is not itself the end of an escaped backslash) and the element.
_RESET = rb"\n{{{reset}}}"
BACKSLASH = ord("\\")


class Head(NamedTuple):
    """The document a `didOpen` opens, and its text up to a crash report's start."""

    uri: str
    version: int
    text: str  # ends with a newline; the log's first lines


def parse_head(start: bytes | bytearray | memoryview) -> Head | None:
    """The head of the `didOpen` whose message begins with `start` (see the module
    docstring), or None."""
    data = bytes(start)
    match = _START.match(data)
    if match is None:
        return None
    try:
        fields = json.loads(b"{" + match["fields"].rstrip().rstrip(b",") + b"}")
    except ValueError:
        return None
    uri, version = fields.get("uri"), fields.get("version")
    if set(fields) != {"uri", "languageId", "version"}:
        return None
    if not isinstance(uri, str) or type(version) is not int:
        return None
    body = match.end()
    end = _last_reset(data, body)
    if end is None:
        return None
    try:
        text = json.loads(b'"' + data[body:end] + b'"')
    except ValueError:  # a control character, a bad escape: the whole message will say
        return None
    return Head(uri, version, text)


def _last_reset(data: bytes, start: int) -> int | None:
    """Where the last line of `data[start:]` that begins with a reset begins: just after
    the escaped newline before it."""
    at = len(data)
    while (at := data.rfind(_RESET, start, at)) >= 0:
        before = at
        while before > start and data[before - 1] == BACKSLASH:
            before -= 1
        if (at - before) % 2 == 0:  # this backslash starts an escape: a newline
            return at + 2
    return None
