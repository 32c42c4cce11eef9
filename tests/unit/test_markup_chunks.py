"""Where `stackmark.markup.chunks` cuts a log: the boundary rules, by hand."""

from __future__ import annotations

from stackmark.markup.chunks import LogChunk, boundary_offsets, split_log, splittable


def test_a_boundary_is_a_line_whose_first_element_is_a_reset() -> None:
    data = (
        b"{{{reset}}}\n"  # 0: the first line is never a boundary
        b"a\n"  # 12
        b"{{{reset}}}\n"  # 14: a boundary
        b"[1.5] {{{reset}}}\r\n"  # 26: after a timestamp, a boundary
        b"x {{{pc:0x1}}} {{{reset}}}\n"  # 45: another element first: none
        b"}}} {{{reset}}}\n"  # 72: could close a multi-line element first: none
        b"\x1b[31mred\n"  # 88
        b"{{{reset}}}\n"  # 97: after a line with ESC: none
        b"{{{reset:x}}}\n"  # 109: a reset with fields: none
        b"{{{{reset}}}\n"  # 123: the element's tag is `{reset`: none
        b"  {{{reset}}}"  # 136: the last line, without a line feed: a boundary
    )
    assert boundary_offsets(data) == [14, 26, 136]


def test_chunks_are_at_least_the_size_asked_and_count_their_lines() -> None:
    report = b"{{{reset}}}\nline\nline\n"  # 22 bytes, 3 lines
    data = report * 10
    assert split_log(data, 50) == [
        LogChunk(0, 66, 0),  # the first boundary at least 50 bytes on: report 3
        LogChunk(66, 132, 9),
        LogChunk(132, 198, 18),
        LogChunk(198, 220, 27),  # the 22-byte tail: not under 50 // 4 = 12 bytes
    ]
    # A tail under a quarter of the size rides with the chunk before it:
    # cut at 198 (the first boundary 190 bytes on), 22 < 190 // 4 = 47.
    assert split_log(data, 190) == [LogChunk(0, 220, 0)]


def test_small_logs_logs_without_boundaries_and_size_zero_stay_whole() -> None:
    report = b"{{{reset}}}\nline\n"
    assert split_log(report * 10, len(report) * 10) == [LogChunk(0, 170, 0)]
    assert split_log(report * 10, 0) == [LogChunk(0, 170, 0)]
    assert split_log(b"line\n" * 100, 10) == [LogChunk(0, 500, 0)]


def test_llvm19_logs_are_not_cut() -> None:
    assert splittable(llvm19=False) and not splittable(llvm19=True)


def test_a_chunk_filtered_with_its_first_line_names_the_whole_logs_lines() -> None:
    import io
    import json

    from stackmark.markup.naming import NameOptions
    from stackmark.markup.stream import FilterSettings, filter_streams, make_naming
    from tests.support.fake_symbolizer import FakeSymbolizer

    def run(data: bytes, first_line: int, **settings: object) -> tuple[bytes, str]:
        out, err = io.BytesIO(), io.StringIO()
        filter_streams(
            [("app.log", io.BytesIO(data))],
            out,
            err.write,
            FilterSettings(color="never", **settings),  # type: ignore[arg-type]
            FakeSymbolizer(),
            make_naming(NameOptions()),
            first_line=first_line,
        )
        return out.getvalue(), err.getvalue()

    chunk = b"{{{reset}}}\nx {{{pc:zz}}}\n"
    _out, err = run(chunk, 41)
    # Line 41 (0-based) + 1 is the reset, so the pc is on line 43, column 9 (1-based).
    assert err.startswith("app.log:43:9: error: expected address; found 'zz'\n")
    records, _err = run(chunk, 41, json=True)
    assert [json.loads(r)["line"] for r in records.splitlines()] == [42, 43]


def test_chunks_joined_note_a_module_without_a_file_once_as_the_whole_log_does() -> None:
    import io

    from stackmark.markup.chunks import join_diagnostics
    from stackmark.markup.naming import NameOptions
    from stackmark.markup.stream import FilterSettings, filter_streams, make_naming
    from tests.support.fake_symbolizer import FakeSymbolizer

    def diagnostics(data: bytes, first_line: int) -> str:
        err = io.StringIO()
        filter_streams(
            [("app.log", io.BytesIO(data))],
            io.BytesIO(),
            err.write,
            FilterSettings(color="never"),
            FakeSymbolizer(),
            make_naming(NameOptions()),
            first_line=first_line,
        )
        return err.getvalue()

    report = (
        b"{{{reset}}}\n"
        b"{{{module:0:linux-vdso.so.1:elf:0123456789abcdef}}}\n"
        b"{{{mmap:0x7fff0000:0x1000:load:0:rx:0x0}}}\n"
        b"{{{bt:0:0x7fff0010:pc}}}\n"
    )
    whole = diagnostics(report * 3, 0)
    assert whole.count("has no file") == 1, whole
    chunks = split_log(report * 3, min_size=len(report))
    assert len(chunks) == 3
    parts = [diagnostics((report * 3)[c.start : c.end], c.first_line) for c in chunks]
    assert sum(part.count("has no file") for part in parts) == 3  # each chunk says it
    assert join_diagnostics(parts) == whole
