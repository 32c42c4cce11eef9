"""How the server's messages travel: document sync routed to the server, large answers
written without copies, a wide stdin pipe, the start of a large message looked at early.

pygls keeps its own copy of every open document and rebuilds its whole
text on each edit; `StackmarkProtocol` routes the document notifications
to the server's chunked model instead, so a million-line log costs one
copy and an edit costs a chunk. The symbolized view's text (a `LargeText`)
is escaped and written a piece at a time (`StackmarkProtocol._send_data`).
A large message is read in two steps (`HeadFirstInput`), its first bytes
handed to the server in between (head.py: the first crash reports of a
log being opened). None of this changes what a message says, only how it
is carried.
"""

from __future__ import annotations

import contextlib
import io
import json
import json.encoder
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any, TextIO

try:
    import fcntl
except ImportError:  # not on Windows
    fcntl = None  # type: ignore[assignment]

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from stackmark_lsp import head, view

logger = logging.getLogger("stackmark_lsp")

PIPE_BUFFER = 1 << 20  # bytes asked for stdin's pipe (Linux's default limit for users)
_rpc_logger = logging.getLogger("pygls.protocol.json_rpc")
_write_lock = threading.Lock()
_LOGGED = 2000  # characters of a message the log shows
_SLICE = 1 << 20  # characters of a message's body written at a time


class StackmarkProtocol(LanguageServerProtocol):
    """pygls' protocol with document sync handled by the server alone (see module doc),
    and messages written without extra copies (`_send_data`)."""

    def _send_data(self, data: Any) -> None:
        """Send a message as pygls does, without its copies of a large one.

        pygls logs every message whole at level info, then joins header and body and
        encodes the result: for the symbolized view of a large log (a 130 MB string)
        that made three more copies of it. Here the log gets the first characters, and
        the body is written after the header in 1 MiB slices, under a lock so that
        messages sent from several threads never interleave.
        """
        writer = self.writer
        large, marked = _large_text(data)
        if not data or not self._include_headers or not isinstance(writer, StdoutWriter):
            if large is not None:
                data = _large_text(data, str(large))[1]
            super()._send_data(data)
            return
        data = marked
        try:
            body = json.dumps(data, default=self._serialize_message)  # ASCII: \u escapes
            if large is not None:
                self._send_large(writer, body, large)
                return
            if _rpc_logger.isEnabledFor(logging.INFO):
                shown = (
                    body if len(body) <= _LOGGED else f"{body[:_LOGGED]}... ({len(body):,} chars)"
                )
                _rpc_logger.info("Sending data: %s", shown)
            header = (
                f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            with _write_lock:
                writer.write(header.encode(self.CHARSET))
                for start in range(0, len(body), _SLICE):
                    writer.write(body[start : start + _SLICE].encode(self.CHARSET))
        except BrokenPipeError:
            logger.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            logger.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _send_large(self, writer: StdoutWriter, body: str, large: view.LargeText) -> None:
        """Write `body` with `large` in place of its marker, escaped a piece at a time
        (twice: once to count the bytes the header announces, once to write them)."""
        before, marker, after = body.partition(_MARKER_JSON)
        assert marker, "the marker is in the message"
        escape = json.encoder.encode_basestring_ascii
        size = len(before) + len(after) + 2 + sum(len(escape(p)) - 2 for p in large.pieces)
        _rpc_logger.info("Sending data: %s... (%d)", before[:_LOGGED], size)
        header = (
            f"Content-Length: {size}\r\n"
            f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        )
        with _write_lock:
            writer.write(header.encode(self.CHARSET))
            writer.write(f'{before}"'.encode(self.CHARSET))
            for piece in large.pieces:
                writer.write(escape(piece)[1:-1].encode(self.CHARSET))
            writer.write(f'"{after}'.encode(self.CHARSET))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


_MARKER = "\x00stackmark:large-text\x00"
_MARKER_JSON = json.dumps(_MARKER)


def _large_text(data: Any, replacement: str = _MARKER) -> tuple[view.LargeText | None, Any]:
    """The `LargeText` value of a response whose result is an object of plain values
    (the view's answers), and the response as a plain message with `replacement` in its
    place; (None, data) for any other message."""
    result = getattr(data, "result", None)
    if isinstance(result, dict):
        for key, value in result.items():
            if isinstance(value, view.LargeText):
                plain = {"id": data.id, "jsonrpc": data.jsonrpc, "result": {**result}}
                plain["result"][key] = replacement
                return value, plain
    return None, data


def widen_pipe(stream: TextIO) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; pipes start at 64 KiB): opening a large log is
    one message of tens of megabytes, and each refill of the pipe is a round trip through
    both processes' event loops. Anything else (a file, a terminal, no permission) stays
    as it is."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is None:
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.fcntl(stream.fileno(), set_size, PIPE_BUFFER)


class HeadFirstInput:
    """The server's input stream, as pygls' reading loop reads it (`readline`, then
    `read` of each message's body, on a worker thread).

    A body of at least `head.MIN_MESSAGE` bytes is read into one buffer in two steps:
    what has arrived once `head.HEAD_BYTES` are in is passed to `on_head` (on the
    reading thread), then the rest is read. The loop gets the same bytes either way.

    The loop keeps the last body it read until the next message arrives, which may be
    seconds after a log's `didOpen`; so a large body's buffer is emptied when the loop
    asks for the next message's first line, by which time it has decoded and handled
    that body (the tens of megabytes are not kept alive beside the index).
    """

    def __init__(self, stream: io.BufferedIOBase, on_head: Callable[[bytes], None]) -> None:
        self._stream = stream
        self._on_head = on_head
        self._handled: bytearray | None = None  # the last large body, emptied when handled

    def readline(self) -> bytes:
        if self._handled is not None:
            self._handled.clear()
            self._handled = None
        return self._stream.readline()

    def read(self, size: int) -> bytes | bytearray:
        if size < head.MIN_MESSAGE:
            return self._stream.read(size)
        body = bytearray(size)
        self._handled = body
        with memoryview(body) as window:
            got = 0
            while got < min(size, head.HEAD_BYTES):
                count = self._stream.readinto1(window[got:])
                if not count:
                    return body[:got]
                got += count
            if got < size:
                try:
                    self._on_head(bytes(window[:got]))
                except Exception:  # the message is still read and handled whole
                    logger.exception("looking at the start of a message failed")
            while got < size:
                count = self._stream.readinto(window[got:])
                if not count:
                    return body[:got]
                got += count
        return body
