"""A `didChange`'s edits without a server (`OpenLog.edit`, logs.py): applied in order, and
a log whose index cannot follow an edit is read again rather than left wrong."""

from __future__ import annotations

import pytest
from lsprotocol import types
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog

URI = "file:///logs/crash.log"
LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
)
EDITED = LOG.replace("0x7011", "0x9011") + "{{{bt:1:0x3}}}\n"


def at(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def changes() -> list[types.TextDocumentContentChangeEvent]:
    """Two edits, the second's position valid only once the first is made."""
    return [
        types.TextDocumentContentChangePartial(range=types.Range(at(3, 19), at(3, 20)), text="9"),
        types.TextDocumentContentChangePartial(
            range=types.Range(at(4, 0), at(4, 0)), text="{{{bt:1:0x3}}}\n"
        ),
    ]


def fresh(text: str) -> list[object]:
    return list(OpenLog(URI, text, 1, PositionCodec()).index.diagnostics())


def test_a_did_change_s_edits_are_applied_in_order() -> None:
    log = OpenLog(URI, LOG, 1, PositionCodec())
    log.edit(changes(), 2)
    assert log.document.text == EDITED and log.version == 2
    assert list(log.index.diagnostics()) == fresh(EDITED)
    assert [line for line, _ in log.index.diagnostics()] == [3, 4]


def test_an_index_that_cannot_follow_an_edit_is_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = OpenLog(URI, LOG, 1, PositionCodec())

    def broken(*args: object) -> None:
        raise RuntimeError("lost")

    monkeypatch.setattr(log.index, "edit", broken)
    log.edit(changes(), 2)
    assert log.document.text == EDITED
    assert list(log.index.diagnostics()) == fresh(EDITED)
