"""Opening a log without a server: `open_log` and the background completion (opening.py).

A recording stands in for the publisher. A large log (the split forced on a
small one) is published first from its halves' preview and then read whole,
and the result must be what one pass gives; the entries the opening pass
leaves out are filled in afterwards, and only while the log stays open.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from lsprotocol import types
from stackmark_lsp import opening, split
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.split import Preview

URI = "file:///logs/crash.log"


def crash_log(reports: int, frames: int) -> str:
    """Crash reports with a problem each: an address outside every mapping."""
    lines = []
    for report in range(reports):
        lines += ["{{{reset}}}", f"{{{{module:0:prog:elf:{report % 3:04x}}}}}"]
        lines.append("{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}")
        lines += [f"[{report}] {{{{{{bt:{frame}:0x1010}}}}}}" for frame in range(frames)]
        lines.append(f"[{report}] {{{{{{bt:{frames}:0x3000}}}}}}")
    return "\n".join(lines) + "\n"


class Recording:
    def __init__(self, outdated: bool = False) -> None:
        self.previews: list[Preview | None] = []
        self.asked = 0
        self.answer = outdated

    def publish(self, log: OpenLog, preview: Preview | None = None) -> None:
        self.previews.append(preview)

    def outdated(self, log: OpenLog) -> bool:
        self.asked += 1
        return self.answer


def item(text: str) -> types.TextDocumentItem:
    return types.TextDocumentItem(uri=URI, language_id="log", version=3, text=text)


def one_pass(text: str) -> list[object]:
    return list(OpenLog(URI, text, 3, PositionCodec()).index.diagnostics())


@pytest.mark.parametrize("outdated", [False, True])
def test_a_large_log_is_published_from_its_halves_then_read_whole(
    monkeypatch: pytest.MonkeyPatch, outdated: bool
) -> None:
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    text = crash_log(40, 3)
    logs: dict[str, OpenLog] = {}
    published = Recording(outdated)
    log = opening.open_log(item(text), PositionCodec(), logs, published)
    assert logs == {URI: log} and log.version == 3
    first = published.previews[0]
    assert first is not None and first.line > 0  # read in two processes
    assert first.diagnostics == one_pass(text)
    assert published.asked == 1  # then checked against the whole index...
    assert published.previews[1:] == ([None] if outdated else [])  # ...published if it differs
    assert list(log.index.diagnostics()) == one_pass(text)
    assert log.document.text == text


def test_a_small_log_is_read_in_one_pass_and_published_once() -> None:
    text = crash_log(4, 3)
    logs: dict[str, OpenLog] = {}
    published = Recording()
    log = opening.open_log(item(text), PositionCodec(), logs, published)
    assert published.previews == [None] and published.asked == 0
    assert list(log.index.diagnostics()) == one_pass(text)


def lazy_chunks(log: OpenLog) -> int:
    return sum(chunk.lazy for chunk in log.document.chunks)


def test_the_entries_left_out_are_filled_in_while_the_log_is_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(opening, "COMPLETED_PER_TURN", 1)
    text = crash_log(60, 100)  # chunks of plain frame lines: left out on open
    logs: dict[str, OpenLog] = {}
    log = opening.open_log(item(text), PositionCodec(), logs, Recording())
    closed = opening.open_log(item(text), PositionCodec(), {}, Recording())
    assert lazy_chunks(log) > 1 and lazy_chunks(closed) == lazy_chunks(log)

    async def main() -> None:
        opening.complete_later(log, logs)
        opening.complete_later(closed, logs)  # not among the open logs
        assert lazy_chunks(log) == lazy_chunks(closed) - 1  # one chunk a turn
        deadline = time.monotonic() + 30
        while lazy_chunks(log) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert lazy_chunks(log) == 0 and lazy_chunks(closed) > 1
