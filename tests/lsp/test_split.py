"""Opening a large log on two cores (split.py): the halves must give what one pass gives.

The split path forks a child that reads the second half of the log; its
diagnostics, module elements and build IDs, joined with the parent's first
half, make the first publication. These tests read random logs both ways
(the split forced on small logs, the chunks made small so that the middle
falls in a crash report) and compare with the one-pass index: the preview,
then the index once the parent has read the rest.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stackmark_lsp import document as document_module
from stackmark_lsp import split
from stackmark_lsp.document import Document
from stackmark_lsp.index import Index, flags_of, frame_of, pending_of

from tests.lsp.test_index import element

CHUNK = 60  # characters per chunk here, so that the middle falls inside a crash report


def small_chunks(text: str, monkeypatch: pytest.MonkeyPatch) -> Document:
    monkeypatch.setattr(document_module, "CHUNK_TARGET", CHUNK)
    return Document("file:///t.log", text)


def state(index: Index) -> tuple[object, ...]:
    """Everything the index knows, by document line (the halves cut chunks elsewhere)."""
    entries = []
    epochs = []
    for chunk in index.document.chunks:
        if chunk.lazy:
            index._complete(chunk)
        base = chunk.start
        entries += sorted(
            (base + line, flags_of(e), frame_of(e), repr(pending_of(e)), getattr(e, "diags", ()))
            for line, e in chunk.infos.items()
        )
        epochs += [(e.line, e.column, sorted(e.modules), e.starts) for e in chunk.epochs]
    # The epoch a chunk starts in is the one in force at the end of the chunk before it.
    in_force = [
        (chunk.start, _epoch(chunk.entry), _epoch(index.epoch_at(chunk.start - 1, 1 << 30)))
        for chunk in index.document.chunks[1:]
    ]
    return (
        entries,
        epochs,
        all(entry == at for _, entry, at in in_force),
        list(index.diagnostics()),
        list(split._module_records(index)),
        +index.build_ids,
    )


def _epoch(epoch: object) -> object:
    return None if epoch is None else (epoch.line, epoch.column)  # type: ignore[attr-defined]


@st.composite
def crash_logs(draw: st.DrawFn) -> str:
    """Logs of several crash reports, each a reset, a context and random elements."""
    lines: list[str] = []
    for _ in range(draw(st.integers(2, 8))):
        lines.append("{{{reset}}}")
        lines.append("{{{module:0:prog:elf:" + draw(st.sampled_from(["abcd", "ef01", "9"])) + "}}}")
        lines.append("{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}")
        for _ in range(draw(st.integers(0, 6))):
            parts = [draw(st.sampled_from(["", "text ", "[1] "]))]
            for _ in range(draw(st.integers(0, 2))):
                parts.append(element(draw))
            lines.append("".join(parts))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


def read_both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> split.Preview | None:
    """Read `text` as the server opens it (halves when split_offset says so) and in one
    pass; compare the preview, then the whole index, with the one pass."""
    whole = Index(small_chunks(text, monkeypatch))
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    halves = split.fork_second_half("file:///t.log", text)
    stop = None if halves is None else halves.offset
    document = Document("file:///t.log", text, stop=stop)
    index = Index(document, read=False)
    preview = None
    if halves is None:
        index.rebuild()
    elif (preview := halves.read_first_half(index)) is None:
        halves.read_second_half(index)
    if preview is not None:
        assert halves is not None
        assert preview.diagnostics == list(whole.diagnostics())
        assert [
            (m.id, m.name, m.build_id, line, column) for m, line, column in preview.modules()
        ] == list(split._module_records(whole))
        assert +preview.build_ids == +whole.build_ids
        halves.read_second_half(index)
    assert document.text == text
    assert state(index) == state(whole)
    return preview


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crash_logs())
def test_two_halves_read_as_one_pass(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        read_both_ways(text, monkeypatch)


def test_the_split_happens_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """A log with problems on both sides of the middle is read in two processes."""
    rng = random.Random(5)
    lines = []
    for report in range(40):
        lines += ["{{{reset}}}", f"{{{{module:0:prog:elf:{report % 3:04x}}}}}"]
        lines.append("{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}")
        if report % 7 == 3:
            lines.append("{{{mmap:0x1800:0x100:load:0:r:0x0}}}")  # overlaps
        if report % 5 == 1:
            lines.append("{{{module:0:again:elf:00}}}")  # duplicate module ID
        for frame in range(rng.randint(1, 6)):
            address = rng.choice(["0x1010", "0x1ff0", "0x3000", "0x1"])
            lines.append(f"[{report}] {{{{{{bt:{frame}:{address}}}}}}}")
        if report % 9 == 4:
            lines.append("{{{pc:0x1000:x:y}}} {{{bad}}}")
    preview = read_both_ways("\n".join(lines) + "\n", monkeypatch)
    assert preview is not None
    assert 0 < preview.line < len(lines)
    assert any(line < preview.line for line, _ in preview.diagnostics)
    assert any(line >= preview.line for line, _ in preview.diagnostics)


def test_a_multi_line_element_open_at_the_split_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reset line inside an open hexdict does not start a crash report: the parent finds
    that once it has read the first half, and reads the second half itself before
    publishing."""
    head = ["{{{reset}}}", "{{{module:0:p:elf:ab}}}", "{{{mmap:0x1000:0x100:load:0:r:0x0}}}"]
    head += ["{{{bt:0:0x1010}}}"] * 20
    lines = [*head, "{{{hexdict:", "{{{reset}}}", "  pc: 0x1010", "}}}", *head, "{{{bt:1:0x9}}}"]
    text = "\n".join(lines)
    inner = text.index("\n{{{reset}}}\n  pc:") + 1
    monkeypatch.setattr(split, "split_offset", lambda text: inner)
    assert read_both_ways(text, monkeypatch) is None


def test_the_cut_is_at_a_reset_near_the_middle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    report = "{{{reset}}}\n{{{bt:0:0x1}}}\n" + "x\n" * 30
    text = report * 10
    offset = split.split_offset(text)
    assert offset is not None and text.startswith("{{{reset}}}\n", offset)
    assert len(text) / 2 <= offset < len(text) * 3 / 4
    assert split.split_offset("{{{reset}}}\n" + "x\n" * 500) is None  # no reset after the middle
    monkeypatch.setattr(split, "MIN_CHARS", len(text) + 1)
    assert split.split_offset(text) is None
