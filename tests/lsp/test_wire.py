"""Decoding a message while it arrives (stackmark_lsp.wire) against `json.loads`."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stackmark_lsp import wire

# Text as logs have it, and what JSON escapes: quotes, backslashes (before `n`, `u`,
# quotes), controls, the escape character, characters outside the BMP, a lone surrogate.
_ALPHABET = st.sampled_from(
    ["a", "{", "}", ":", "\n", "\n", "\n", "\r", "\t", '"', "\\", "\\n", "\\\\n", "\\u",
     '\\"', '"text": "', "\x1b", "\x00", "\x7f", "é", "日", "😀", "\ud800", "/", " "]
)  # fmt: skip
_TEXTS = st.lists(_ALPHABET, max_size=300).map("".join)


def _hook(data: dict[str, Any]) -> dict[str, Any]:
    return {"hooked": True, **data}


def _body(text: str, *, key_first: bool = False, decoy: bool = False, **dump: Any) -> bytes:
    item = {"uri": "file:///a.log", "languageId": "log", "version": 1, "text": text}
    if key_first:  # the text before the other keys, and a second, small "text" after it
        item = {"text": text, "uri": "file:///a.log", "x": {"text": "tail"}}
    if decoy:  # a key whose escaped quote makes `"text": "` appear before the real one
        item = {'a"text': "decoy", **item}
    body = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
    return json.dumps(body, **dump).encode("utf-8", "surrogatepass")


def _decoded(body: bytes, cuts: list[int]) -> Any:
    decoder = wire.BodyDecoder()
    previous = 0
    for cut in [*sorted({min(c, len(body)) for c in cuts}), len(body)]:
        if cut > previous:
            decoder.feed(body[previous:cut])
            previous = cut
    return decoder.message(_hook)


@settings(max_examples=400, deadline=None)
@given(
    text=_TEXTS,
    ascii_only=st.booleans(),
    compact=st.booleans(),
    key_first=st.booleans(),
    decoy=st.booleans(),
    cuts=st.lists(st.integers(0, 3000), max_size=12),
)
def test_fed_in_pieces_it_decodes_as_json_does(
    text: str, ascii_only: bool, compact: bool, key_first: bool, decoy: bool, cuts: list[int]
) -> None:
    separators = (",", ":") if compact else None  # Node's spelling, then Python's
    body = _body(
        text, key_first=key_first, decoy=decoy, ensure_ascii=ascii_only, separators=separators
    )
    assert _decoded(body, cuts) == json.loads(body, object_hook=_hook)


@settings(max_examples=300, deadline=None)
@given(
    contents=st.lists(st.sampled_from(["a", "\\", "n", "u", "0", "1", "b", '"', "\n", "é"])),
    cuts=st.lists(st.integers(0, 80), max_size=6),
)
def test_any_bytes_in_the_string_decode_or_fail_as_json_does(
    contents: list[str], cuts: list[int]
) -> None:
    """Malformed strings too: the same value, or the same exception type."""
    body = ('{"jsonrpc": "2.0", "params": {"text": "' + "".join(contents) + '"}}').encode()
    try:
        expected: Any = json.loads(body, object_hook=_hook)
    except ValueError as error:
        expected = type(error)
    try:
        got: Any = _decoded(body, cuts)
    except ValueError as error:
        got = type(error)
    assert got == expected


def test_a_log_is_decoded_piece_by_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """json.loads sees pieces of the log and the envelope, never the whole body."""
    text = '\x1b[31m{{{bt:0:0x1000:pc}}}\x1b[0m "quoted" C:\\path\\n\n' * 40_000
    body = _body(text)
    seen: list[int] = []
    real_loads = json.loads

    def loads(data: Any, **kwargs: Any) -> Any:
        seen.append(len(data))
        return real_loads(data, **kwargs)

    monkeypatch.setattr(wire.json, "loads", loads)
    decoder = wire.read_body(io.BufferedReader(io.BytesIO(body)), len(body))  # type: ignore[arg-type]
    assert isinstance(decoder, wire.BodyDecoder)
    assert decoder.message(_hook)["params"]["textDocument"]["text"] == text
    assert len(seen) > 2 and max(seen) <= wire.READ_SIZE + 2


def test_small_bodies_are_read_whole() -> None:
    body = _body("x")
    assert wire.read_body(io.BytesIO(body + b"next"), len(body)) == body  # type: ignore[arg-type]
