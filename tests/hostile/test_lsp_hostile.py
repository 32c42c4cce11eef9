"""The language server under random edits and garbage documents.

A seeded random session against the real server over stdio (pytest-lsp):
edits anywhere (markup fragments, lines of a real log, garbage, long lines,
astral characters, deletions, whole-document replacements) interleaved with
every request the server offers, at positions inside and outside the text.
Checked: every request is answered (none times out, none fails with an
internal error), the server logs no traceback, its memory stays bounded,
and afterwards it still answers a real hover correctly.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from tests.lsp.session import Session
from tests.support.markup_programs import ProgramLog, program_log

OPERATIONS = 260
REQUEST_DEADLINE = 60.0

FRAGMENTS = [
    "{{{",
    "}}}",
    ":",
    "{{{reset}}}",
    "{{{pc:0x",
    "{{{bt:3:0x1234:ra}}}",
    "{{{data:0x4010}}}",
    "{{{hexdict:",
    "  rax: 0x1000\n",
    "{{{symbol:_ZN3foo3barEv}}}",
    "{{{module:9:x:elf:abcd}}}",
    "{{{mmap:0x0:0xffffffffffffffff:load:9:rwx:0x0}}}",
    "\x1b[31m",
    "\x1b[0m",
    "\r\n",
    "\n",
    "\t",
    "é",
    "€",
    "\U0001f600",  # astral: two UTF-16 code units
    "\ufffd",
    "\u202e",
    "0x" + "f" * 40,
]


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Model:
    """The client's copy of the document, to make valid edits."""

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    def position(self, rng: random.Random) -> tuple[int, int, int]:
        """(line, UTF-16 character, string offset) of a random character boundary."""
        offset = rng.randrange(len(self.text) + 1)
        before = self.text[:offset]
        line = before.count("\n")
        column = utf16_length(before[before.rfind("\n") + 1 :])
        return line, column, offset

    def replace(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]


def _random_text(rng: random.Random, real: list[str]) -> str:
    pieces = []
    for _ in range(rng.randrange(1, 8)):
        choice = rng.random()
        if choice < 0.45:
            pieces.append(rng.choice(FRAGMENTS))
        elif choice < 0.7:
            pieces.append(rng.choice(real) + "\n")
        elif choice < 0.95:
            pieces.append("".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(9))))
        else:
            pieces.append("{{{pc:0x1}}}" * rng.randrange(100, 3000))  # a long line
    return "".join(pieces)


async def _requests(session: Session, uri: str, model: Model, rng: random.Random) -> list[Any]:
    client = session.client
    document = types.TextDocumentIdentifier(uri=uri)
    last_line = max(len(model.lines) - 1, 0)

    def position() -> types.Position:
        if rng.random() < 0.15:  # past the end, or past a line's end
            return types.Position(
                line=last_line + rng.randrange(0, 5), character=rng.randrange(500)
            )
        line, column, _ = model.position(rng)
        return types.Position(line=line, character=column)

    whole = types.Range(start=types.Position(line=0, character=0), end=position())
    calls = [
        lambda: client.text_document_hover_async(
            types.HoverParams(text_document=document, position=position())
        ),
        lambda: client.text_document_definition_async(
            types.DefinitionParams(text_document=document, position=position())
        ),
        lambda: client.text_document_inlay_hint_async(
            types.InlayHintParams(text_document=document, range=whole)
        ),
        lambda: client.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=document)
        ),
        lambda: client.text_document_semantic_tokens_range_async(
            types.SemanticTokensRangeParams(text_document=document, range=whole)
        ),
        lambda: client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=document)
        ),
        lambda: client.text_document_document_link_async(
            types.DocumentLinkParams(text_document=document)
        ),
        lambda: client.text_document_code_lens_async(types.CodeLensParams(text_document=document)),
    ]
    picked = [call() for call in rng.sample(calls, k=rng.randrange(1, len(calls) + 1))]
    results = await asyncio.wait_for(
        asyncio.gather(*picked, return_exceptions=True), timeout=REQUEST_DEADLINE
    )
    for result in results:
        assert not isinstance(result, JsonRpcInternalError), f"server error: {result}"
        assert not isinstance(result, asyncio.TimeoutError | asyncio.CancelledError), result
    return results


def _server_memory(session: Session) -> tuple[int, int]:
    """(VmRSS, VmHWM) of the server process, in MB."""
    pid = session.client._server.pid  # type: ignore[union-attr]
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> ProgramLog:
    return program_log("pie", tmp_path_factory.mktemp("lsp-hostile"))


@pytest.mark.asyncio
async def test_random_edits_and_garbage(program: ProgramLog, tmp_path: Path) -> None:
    rng = random.Random(20261122)
    real = program.log.decode("utf-8", "surrogateescape").splitlines()
    configuration = {"debugFileDirectories": [str(program.debug_dir)], "cacheDir": str(tmp_path)}
    async with Session(tmp_path / "xdg", configuration=configuration) as session:
        docs: dict[str, tuple[Model, int]] = {}
        for name, text in (
            ("real.log", "\n".join(real) + "\n"),
            ("garbage.log", _random_text(rng, real) * 20),
            ("empty.log", ""),
        ):
            uri = session.open(tmp_path / name, text)
            docs[uri] = (Model(text), 1)
        await _requests(session, next(iter(docs)), next(iter(docs.values()))[0], rng)
        warm_rss, _ = _server_memory(session)
        for step in range(OPERATIONS):
            uri = rng.choice(list(docs))
            model, version = docs[uri]
            version += 1
            if rng.random() < 0.03:  # the whole document replaced
                new = _random_text(rng, real) * rng.randrange(1, 40)
                session.client.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(
                            uri=uri, version=version
                        ),
                        content_changes=[types.TextDocumentContentChangeWholeDocument(text=new)],
                    )
                )
                model.text = new
            else:
                start_line, start_col, start = model.position(rng)
                end_line, end_col, end = model.position(rng)
                if end < start:
                    start_line, start_col, start, end_line, end_col, end = (
                        end_line, end_col, end, start_line, start_col, start
                    )  # fmt: skip
                if rng.random() < 0.6:  # mostly insertions
                    end_line, end_col, end = start_line, start_col, start
                new = _random_text(rng, real) if rng.random() < 0.8 else ""
                session.edit(uri, version, (start_line, start_col), (end_line, end_col), new)
                model.replace(start, end, new)
            docs[uri] = (model, version)
            if step % 3 == 0:
                await _requests(session, uri, model, rng)
        rss, peak = _server_memory(session)
        assert rss < warm_rss + 400, f"server grew from {warm_rss} MB to {rss} MB"
        assert peak < 1500, f"server peaked at {peak} MB"
        # still sound: a fresh copy of the real log gets the right hover
        fresh = session.open(tmp_path / "fresh.log", "\n".join(real) + "\n")
        line = next(i for i, text in enumerate(real) if "{{{bt:0:" in text)
        column = real[line].index("{{{bt:0:") + 3
        hover = await asyncio.wait_for(session.hover_text(fresh, line, column), REQUEST_DEADLINE)
        assert hover is not None and "capture" in hover
        problems = [
            m.message
            for m in session.client.log_messages
            if "Traceback" in m.message or m.type == types.MessageType.Error
        ]
        assert problems == []
