"""The first crash reports of a large log, read from the start of its `didOpen` message
(head.py), and the input stream that hands those bytes over (transport.HeadFirstInput).

The server publishes the diagnostics of what `parse_head` returns before
the message is complete, so the head must be exactly a prefix of the text
that ends where a line starting with `{{{reset}}}` begins, or None.
tests/lsp/test_server.py checks the publication itself against llvm.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from stackmark_lsp import head
from stackmark_lsp.head import parse_head
from stackmark_lsp.transport import HeadFirstInput

REPORT = "{{{reset}}}\n{{{module:0:prog:elf:abcd}}}\n[%d] text \\ \\n \u00e9 {{{pc:0x%x}}}\n"
LOG = "".join(REPORT % (n, n) for n in range(2000))


def did_open(text: str, *, params_first: bool = False, indent: int | None = None) -> bytes:
    item = {"uri": "file:///a%20b/c.log", "languageId": "log", "version": 7, "text": text}
    message: dict[str, object] = {"jsonrpc": "2.0", "method": "textDocument/didOpen"}
    params = {"textDocument": item}
    message = {"params": params, **message} if params_first else {**message, "params": params}
    return json.dumps(message, indent=indent).encode()


@pytest.mark.parametrize("params_first", [False, True])
@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("size", [400, 5000, 60000])
def test_the_head_ends_where_a_crash_report_begins(
    params_first: bool, indent: int | None, size: int
) -> None:
    data = did_open(LOG, params_first=params_first, indent=indent)[:size]
    found = parse_head(data)
    assert found is not None
    assert (found.uri, found.version) == ("file:///a%20b/c.log", 7)
    assert LOG.startswith(found.text) and LOG[len(found.text) :].startswith("{{{reset}}}")
    # The last such line the bytes hold whole: the next one is not in them.
    following = LOG.find("\n{{{reset}}}", len(found.text)) + len("\n{{{reset}}}")
    assert json.dumps(LOG[:following])[1:-1].encode() not in data


def test_escaped_backslashes_are_not_newlines() -> None:
    # The text holds a backslash then `n{{{reset}}}`: no new line starts there.
    text = "{{{reset}}}\nfirst\nsecond \\n{{{reset}}} \\\\n{{{reset}}}\n{{{reset}}}\nlast"
    found = parse_head(did_open(text))
    assert found is not None and found.text == text[: text.rindex("{{{reset}}}")]
    assert parse_head(did_open("one\\n{{{reset}}}\\\\n{{{reset}}}")) is None


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "textDocument/didChange",
         "params": {"textDocument": {"uri": "u", "languageId": "l", "version": 1,
                                     "text": "a\n{{{reset}}}\n"}}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": "u", "version": 1, "text": "a\n{{{reset}}}\n"}}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": "u", "languageId": "l", "version": "1",
                                     "text": "a\n{{{reset}}}\n"}}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"text": "a\n{{{reset}}}\n", "uri": "u",
                                     "languageId": "l", "version": 1}}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen",
         "params": {"textDocument": {"uri": "u", "languageId": "l", "version": 1,
                                     "text": "no reset line\n {{{reset}}} not first"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand",
         "params": {"command": "x", "arguments": ["a\n{{{reset}}}\n"]}},
    ],
)  # fmt: skip
def test_other_messages_have_no_head(message: dict[str, object]) -> None:
    assert parse_head(json.dumps(message).encode()) is None


def test_damaged_starts_have_no_head() -> None:
    good = did_open(LOG)[:4000]
    assert parse_head(good) is not None
    assert parse_head(good.replace(b'"version": 7', b'"version": 7.5')) is None
    assert parse_head(good.replace(b"[1] text", b"[1]\ttext")) is None  # a raw control char
    assert parse_head(good.replace(b"\\u00e9", b"\\u00zz")) is None  # a bad escape
    assert parse_head(good[:60]) is None
    assert parse_head(b"") is None


class Pipe(io.RawIOBase):
    """Bytes that arrive a little at a time, as through a pipe."""

    def __init__(self, data: bytes, step: int = 1000) -> None:
        self.data = memoryview(data)
        self.step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = min(len(buffer), self.step, len(self.data))
        buffer[:count] = self.data[:count]
        self.data = self.data[count:]
        return count


def framed(*bodies: bytes) -> io.BufferedReader:
    data = b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(b), b) for b in bodies)
    return io.BufferedReader(Pipe(data), buffer_size=4096)


def read_message(stream: HeadFirstInput) -> bytes:
    length = 0
    while line := stream.readline():
        if line.startswith(b"Content-Length:"):
            length = int(line.split(b":")[1])
        elif line == b"\r\n":
            return bytes(stream.read(length))
    return b""


def test_a_large_message_is_read_whole_after_its_head(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(head, "MIN_MESSAGE", 10_000)
    monkeypatch.setattr(head, "HEAD_BYTES", 3_000)
    large, small, after = did_open(LOG), did_open(LOG[:500]), b'{"jsonrpc": "2.0"}'
    starts: list[bytes] = []
    stream = HeadFirstInput(framed(small, large, after), starts.append)
    assert read_message(stream) == small
    assert starts == []
    assert read_message(stream) == large
    assert len(starts) == 1 and 3_000 <= len(starts[0]) < len(large)
    assert large.startswith(starts[0])
    assert read_message(stream) == after
    assert len(starts) == 1


def test_a_large_body_is_let_go_once_the_next_message_is_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(head, "MIN_MESSAGE", 10_000)
    monkeypatch.setattr(head, "HEAD_BYTES", 3_000)
    large, small = did_open(LOG), did_open(LOG[:500])
    stream = HeadFirstInput(framed(large, small, small), lambda start: None)
    stream.readline()
    stream.readline()
    body = stream.read(len(large))
    assert body == large  # the loop decodes and handles it before it reads on
    assert read_message(stream) == small
    assert len(body) == 0
    assert read_message(stream) == small  # small bodies are read as before


def test_a_failing_look_at_the_head_loses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(head, "MIN_MESSAGE", 0)
    message = did_open(LOG)

    def fail(start: bytes) -> None:
        raise ValueError("broken")

    assert read_message(HeadFirstInput(framed(message), fail)) == message
    # A message cut short by the end of the input comes out as pygls' read gives it.
    cut = io.BufferedReader(Pipe(b"Content-Length: 99999999\r\n\r\n" + message))
    assert read_message(HeadFirstInput(cut, fail)) == message
