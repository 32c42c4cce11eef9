"""Reading the client's messages from stdin, decoding a large log while it arrives.

Opening a log sends all of it in one `textDocument/didOpen` message: for a
million lines, 72 MB of JSON, most of it one string. pygls reads the whole
body from the pipe (0.2 s here: the client refills the pipe a megabyte at a
time) and only then decodes it (`json.loads`, another 0.2 s), both on the
way to the first diagnostics. Here the string is decoded piece by piece as
the body arrives (`BodyDecoder`), so the decoding happens while the pipe
refills, and what is left when the last byte comes is the message around
the string: a few hundred bytes for `json.loads`.

The result is what `json.loads(body, object_hook=hook)` gives, for every
body: a piece is decoded by `json.loads` itself (as a JSON string), pieces
are cut only just after a `\\n` escape (never inside an escape or a UTF-8
character), and anything unusual (no `"text"` key near the start, a piece
json refuses, a marker not put back) makes the decoder fall back to
`json.loads` on the whole body, which also raises its usual errors.
tests/lsp/test_wire.py compares the two on generated bodies cut at random.

`read_messages` is the loop over stdin that pygls' `run_async` runs (headers,
body, hand the message to the protocol), with a body of `LARGE_BODY` bytes or
more read and decoded in this way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, BinaryIO, Protocol

logger = logging.getLogger(__name__)

LARGE_BODY = 1 << 20
"""Bodies from this size on are decoded while they arrive (smaller ones by `json.loads`)."""
READ_SIZE = 1 << 20  # bytes asked of the pipe at a time (what a widened pipe holds)
HEAD_LIMIT = 1 << 16  # bytes the `"text"` key is looked for in before giving up

_TEXT_KEY = re.compile(rb'"text"\s*:\s*"')
_BACKSLASH = 0x5C

Hook = Callable[[dict[str, Any]], Any]


def _backslashes_before(data: bytes | bytearray, pos: int, start: int = 0) -> int:
    count = 0
    while pos - count > start and data[pos - count - 1] == _BACKSLASH:
        count += 1
    return count


def _string_end(data: bytes, start: int = 0) -> int:
    """Index of the quote that ends a JSON string whose contents begin at `start`
    (-1: not in `data`): the first `"` after an even number of backslashes."""
    pos = start
    while (quote := data.find(b'"', pos)) >= 0:
        if _backslashes_before(data, quote, start) % 2 == 0:
            return quote
        pos = quote + 1
    return -1


def _safe_cut(data: bytes) -> int:
    """Index just after the last `\\n` of string contents `data` (0: none): a place where a
    piece can end. That `n` ends an escape, or follows an escaped backslash: either way
    no escape (`n` is not a hex digit of a `\\u`) and no UTF-8 character is split there."""
    at = data.rfind(b"\\n")
    return at + 2 if at >= 0 else 0


class BodyDecoder:
    """A message body fed as it arrives; `message()` decodes what was fed.

    States: looking for the `"text"` key (the bytes so far kept as the head),
    inside its string (pieces decoded, an undecoded remainder carried to the next
    feed), after it (the bytes kept as the tail)."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []  # everything fed, for the fallback
        self._head = bytearray()
        self._in_text = False
        self._after = False
        self._carry = b""
        self._pieces: list[str] = []
        self._tail = bytearray()
        self._failed = False

    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        if self._failed:
            return
        if self._after:
            self._tail += data
            return
        if not self._in_text:
            self._head += data
            key = _TEXT_KEY.search(self._head)
            while key is not None and _backslashes_before(self._head, key.start()) % 2:
                key = _TEXT_KEY.search(self._head, key.start() + 1)  # inside a string
            if key is None:
                self._failed = len(self._head) > HEAD_LIMIT
                return
            data = bytes(self._head[key.end() :])
            del self._head[key.end() :]
            self._in_text = True
        self._take(self._carry + data if self._carry else data)

    def _take(self, data: bytes) -> None:
        """Decode what `data` (string contents from a clean start) allows."""
        end = _string_end(data)
        if end < 0:
            cut = _safe_cut(data)
            if cut:
                self._decode(data[:cut])
            self._carry = data[cut:]
            return
        self._decode(data[:end])
        self._carry = b""
        self._after = True
        self._tail += data[end:]

    def _decode(self, contents: bytes) -> None:
        try:
            self._pieces.append(json.loads(b'"' + contents + b'"'))
        except ValueError:  # JSONDecodeError, UnicodeDecodeError: json says it at the end
            self._failed = True

    def message(self, hook: Hook) -> Any:
        """`json.loads(body, object_hook=hook)` of everything fed."""
        if self._failed or not self._after:
            return self._whole(hook)
        text = "".join(self._pieces)
        self._pieces = []
        marker = f"\x00stackmark:{secrets.token_hex(8)}"
        envelope = bytes(self._head) + json.dumps(marker)[1:-1].encode() + bytes(self._tail)
        put_back = 0

        def hook_putting_back(data: dict[str, Any]) -> Any:
            nonlocal put_back
            if data.get("text") == marker:
                data["text"] = text
                put_back += 1
            return hook(data)

        message = json.loads(envelope, object_hook=hook_putting_back)
        return message if put_back == 1 else self._whole(hook)

    def _whole(self, hook: Hook) -> Any:
        return json.loads(b"".join(self._chunks), object_hook=hook)


def read_body(stdin: BinaryIO, length: int) -> BodyDecoder | bytes:
    """Read a body of `length` bytes: as bytes when small, else into a `BodyDecoder`
    (fed a piece at a time, as the pipe delivers them). Short at the end of input."""
    if length < LARGE_BODY:
        return stdin.read(length)
    decoder = BodyDecoder()
    read1 = getattr(stdin, "read1", stdin.read)
    left = length
    while left > 0:
        data = read1(min(left, READ_SIZE))
        if not data:
            break
        decoder.feed(data)
        left -= len(data)
    return decoder


class MessageProtocol(Protocol):
    def structure_message(self, data: dict[str, Any]) -> Any: ...

    def handle_message(self, message: Any) -> None: ...


_CONTENT_LENGTH = re.compile(rb"Content-Length: *(\d+)\r\n", re.IGNORECASE)


async def read_messages(
    stop: threading.Event,
    stdin: BinaryIO,
    executor: Executor,
    protocol: MessageProtocol,
    on_error: Callable[[Exception], None],
) -> None:
    """Read messages (headers, a blank line, the body) until `stop` is set or the input
    ends, and hand each to `protocol`; one that cannot be decoded or handled goes to
    `on_error`, and reading goes on."""
    loop = asyncio.get_running_loop()
    length = 0
    while not stop.is_set():
        header = await loop.run_in_executor(executor, stdin.readline)
        if not header:
            return
        if not length and (match := _CONTENT_LENGTH.fullmatch(header)) is not None:
            length = int(match.group(1))
        if not length or header.strip():
            continue
        body = await loop.run_in_executor(executor, read_body, stdin, length)
        length = 0
        if not body:
            return
        try:
            if isinstance(body, BodyDecoder):
                message = body.message(protocol.structure_message)
            else:
                message = json.loads(body, object_hook=protocol.structure_message)
            protocol.handle_message(message)
        except Exception as error:
            logger.exception("Unable to handle message")
            on_error(error)
