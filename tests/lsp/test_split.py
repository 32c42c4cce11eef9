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


def small_chunks(text: str, target: int = 60) -> Document:
    document = Document("file:///t.log", text)
    pieces = document_module.cut(text, target)
    document.chunks = [document_module.Chunk(p, i == len(pieces) - 1) for i, p in enumerate(pieces)]
    document.renumber()
    return document


def state(index: Index) -> tuple[object, ...]:
    """Everything the index knows, in a comparable form."""
    chunks = []
    for chunk in index.document.chunks:
        if chunk.lazy:
            index._complete(chunk)
        entries = sorted(
            (line, flags_of(e), frame_of(e), repr(pending_of(e)), getattr(e, "diags", ()))
            for line, e in chunk.infos.items()
        )
        epochs = [(e.line, e.column, sorted(e.modules), e.starts) for e in chunk.epochs]
        chunks.append((chunk.start, entries, epochs, chunk.entry is not None))
    return (
        chunks,
        list(index.diagnostics()),
        list(split._module_records(index)),
        +index.build_ids,
    )


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
    whole = Index(small_chunks(text))
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    halves = Index(small_chunks(text), read=False)
    preview = split.read_first_half(halves)
    if preview is not None:
        assert preview.diagnostics == list(whole.diagnostics())
        assert [
            (m.id, m.name, m.build_id, line, column) for m, line, column in preview.modules()
        ] == list(split._module_records(whole))
        assert +preview.build_ids == +whole.build_ids
        halves.read_on(preview.line)
    assert state(halves) == state(whole)
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
    that when it gets there, and reads the log in one pass."""
    head = ["{{{reset}}}", "{{{module:0:p:elf:ab}}}", "{{{mmap:0x1000:0x100:load:0:r:0x0}}}"]
    head += ["{{{bt:0:0x1010}}}"] * 20
    inner = len(head) + 1
    lines = [*head, "{{{hexdict:", "{{{reset}}}", "  pc: 0x1010", "}}}", *head, "{{{bt:1:0x9}}}"]
    assert lines[inner] == "{{{reset}}}"
    monkeypatch.setattr(split, "split_line", lambda document: inner)
    assert read_both_ways("\n".join(lines), monkeypatch) is None
    index = Index(small_chunks("\n".join(lines)), read=False)
    assert index.read_until(inner) is False
