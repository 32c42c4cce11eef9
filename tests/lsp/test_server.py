"""The language server end to end: pytest-lsp talks to `stackmark lsp` over stdio.

The logs come from the markup fixture programs (compiled and run at test
time); the answers are checked against llvm-symbolizer-19 (and
llvm-dwarfdump-19) on the same addresses, and the symbolized view against
`stackmark symbolize` on the same log.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.conftest import require_tool
from tests.lsp import oracle
from tests.lsp.session import Session, capabilities
from tests.support.build import REPO
from tests.support.markup_programs import ProgramLog, program_log

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCES = REPO / "tests" / "fixtures" / "src"


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProgramLog]:
    require_tool("llvm-symbolizer-19")
    work = tmp_path_factory.mktemp("lsp-programs")
    found = {}
    for variant in ("pie", "cpp"):
        found[variant] = program_log(variant, work)
        (work / f"{variant}.log").write_bytes(found[variant].log)
    return found


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    programs: dict[str, ProgramLog], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Session]:
    """One server for the tests whose settings are the same (each test opens its own logs)."""
    cache = tmp_path_factory.mktemp("lsp-shared")
    configuration = {
        "debugFileDirectories": [str(p.debug_dir) for p in programs.values()],
        "cacheDir": str(cache),
    }
    async with Session(cache / "xdg", configuration=configuration) as session:
        yield session


class borrow:
    """The shared session, for an `async with` block that must not close it."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def __aenter__(self) -> Session:
        return self.session

    async def __aexit__(self, *exc: object) -> None:
        return None


def copy_of(program: ProgramLog, directory: Path) -> Path:
    """A copy of a program's log, for a test that edits it."""
    copy = directory / f"{program.name}-copy.log"
    shutil.copyfile(log_path(program), copy)
    return copy


def log_path(program: ProgramLog) -> Path:
    return program.debug_dir.parent / f"{program.name}.log"


def settings(program: ProgramLog, cache: Path, **more: object) -> dict[str, object]:
    return {"debugFileDirectories": [str(program.debug_dir)], "cacheDir": str(cache), **more}


def hover_chain(text: str) -> list[tuple[str, str | None]]:
    """(function, location) of each frame a code hover lists, innermost first."""
    chain = re.findall(r"^\d+\. `(.+?)`(?: — `(.+?)`)?$", text, re.M)
    if chain:
        return [(function, location or None) for function, location in chain]
    title = re.match(r"### \S+(?: #\d+)? `(.+?)`", text)
    if title is None:
        return []
    location = re.search(r"\A[^\n]*\n\n---\n\n`([^`\n]+)`$", text, re.M)
    return [(title.group(1), location.group(1) if location else None)]


def expected_chain(frames: list[oracle.Frame]) -> list[tuple[str, str | None]]:
    return [(f.function, f.location) for f in frames]


# -- hover, definition, inlay hints against llvm -------------------------------------------


@pytest.mark.parametrize("variant", ["pie", "cpp"])
async def test_code_elements_agree_with_llvm(
    programs: dict[str, ProgramLog], shared: Session, variant: str, tmp_path: Path
) -> None:
    program = programs[variant]
    text = log_path(program).read_text()
    spots = [s for s in oracle.spots(text) if s.tag in ("pc", "bt")]
    by_module: dict[str, list[oracle.Spot]] = {}
    for spot in spots:
        by_module.setdefault(spot.build_id, []).append(spot)
    answers: dict[tuple[str, int], list[oracle.Frame]] = {}
    for build_id, module_spots in by_module.items():
        obj = oracle.debug_file(program.debug_dir, build_id)
        if obj.exists():
            found = oracle.code(obj, [s.relative for s in module_spots])
            answers.update(((build_id, a), frames) for a, frames in found.items())
    assert sum(1 for frames in answers.values() if len(frames) > 1), "no inline chain to check"

    async with borrow(shared) as session:
        uri = session.open(log_path(program))
        await session.diagnostics(uri)
        hints = {
            (h.position.line, h.position.character): h
            for h in await session.inlay_hints(uri, 0, len(text.splitlines()))
        }
        checked = 0
        for spot in spots:
            frames = answers.get((spot.build_id, spot.relative))
            if not frames:
                continue
            hover = await session.hover_text(uri, spot.line, spot.column + 3)
            assert hover is not None, spot
            assert hover_chain(hover) == expected_chain(frames), (spot, hover)
            assert f"`{spot.module_name}` (#" in hover and f"`{hex(spot.relative)}`" in hover

            links = await session.definition(uri, spot.line, spot.column + 3)
            targets = [(link.target_uri, link.target_range.start.line) for link in links]
            wanted: list[tuple[str, int]] = []
            for frame in frames:
                if not frame.file or not frame.line:
                    continue
                target = (Path(frame.file).as_uri(), frame.line - 1)
                if target not in wanted:
                    wanted.append(target)
            assert targets == wanted, spot

            hint = hints[(spot.line, spot.column + len(spot.text))]
            label = frames[0].function + (f" ({frames[-1].function})" if len(frames) > 1 else "")
            assert hint.label == "→ " + label
            checked += 1
        assert checked >= 6


async def test_data_elements_agree_with_llvm(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    require_tool("llvm-dwarfdump-19")
    program = programs["pie"]
    text = log_path(program).read_text()
    spots = [s for s in oracle.spots(text) if s.tag == "data"]
    async with borrow(shared) as session:
        uri = session.open(log_path(program))
        await session.diagnostics(uri)
        declared = 0
        for spot in spots:
            obj = oracle.debug_file(program.debug_dir, spot.build_id)
            name, start = oracle.data(obj, [spot.relative])[spot.relative]
            hover = await session.hover_text(uri, spot.line, spot.column + 4)
            assert hover is not None
            offset = spot.relative - start
            title = f"### data `{name}`" + (f" + `{hex(offset)}`" if offset else "")
            assert hover.splitlines()[0] == title
            place = oracle.declaration(obj, name)
            links = await session.definition(uri, spot.line, spot.column + 4)
            if place is None:
                assert links == []
                continue
            assert [(link.target_uri, link.target_range.start.line) for link in links] == [
                (Path(place[0]).as_uri(), place[1] - 1)
            ]
            declared += 1
        assert declared >= 3  # g_counter, g_banner, g_table, the library's variables


async def test_symbol_and_module_elements(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["cpp"]
    text = log_path(program).read_text()
    lines = text.splitlines()
    symbol_line = next(i for i, line in enumerate(lines) if "{{{symbol:" in line)
    mangled = re.search(r"\{\{\{symbol:([^}]*)\}\}\}", lines[symbol_line])
    assert mangled is not None
    demangled = subprocess.run(
        ["llvm-cxxfilt-19", mangled.group(1)], capture_output=True, text=True, check=True
    ).stdout.strip()
    async with borrow(shared) as session:
        uri = session.open(copy_of(program, tmp_path))
        await session.diagnostics(uri)
        hover = await session.hover_text(uri, symbol_line, lines[symbol_line].index("{{{") + 4)
        assert hover is not None and hover.startswith(f"### symbol `{demangled}`")

        # The symbol's definition: where llvm-dwarfdump says that function is declared
        # (this constructor was inlined everywhere: it has no symbol and no address).
        obj = oracle.debug_file(program.debug_dir, oracle.spots(text)[0].build_id)
        place = oracle.function_declaration(obj, mangled.group(1))
        assert place is not None
        links = await session.definition(uri, symbol_line, lines[symbol_line].index("{{{") + 4)
        assert [(link.target_uri, link.target_range.start.line) for link in links] == [
            (Path(place[0]).as_uri(), place[1] - 1)
        ]
        # A symbol with code: its declaration too ("main").
        session.edit(uri, 2, (len(lines), 0), (len(lines), 0), "{{{symbol:main}}}\n")
        await session.diagnostics(uri)
        place = oracle.function_declaration(obj, "main")
        assert place is not None
        links = await session.definition(uri, len(lines), 4)
        assert [(link.target_uri, link.target_range.start.line) for link in links] == [
            (Path(place[0]).as_uri(), place[1] - 1)
        ]

        module_line = next(i for i, line in enumerate(lines) if "{{{module:0:" in line)
        hover = await session.hover_text(uri, module_line, 4)
        assert hover is not None
        assert str(oracle.debug_file(program.debug_dir, oracle.spots(text)[0].build_id)) in hover
        mmap_line = module_line + 1
        hover = await session.hover_text(uri, mmap_line, 4)
        assert hover is not None and hover.startswith("### mmap `[0x")

        # From the module ID of an mmap to its module element.
        field = lines[mmap_line].split(":")
        column = len(":".join(field[:4])) + 1
        links = await session.definition(uri, mmap_line, column)
        assert len(links) == 1 and isinstance(links[0], types.LocationLink)
        assert links[0].target_range.start.line == module_line


# -- outline, lenses, tokens, links ------------------------------------------------------


async def test_outline_code_lenses_and_tokens(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["pie"]
    text = log_path(program).read_text()
    lines = text.splitlines()
    first_frames = [i for i, line in enumerate(lines) if "{{{bt:0:" in line]
    modules = [re.search(r"module:\d+:([^:]*):", line) for line in lines]
    async with borrow(shared) as session:
        uri = session.open(log_path(program))
        await session.diagnostics(uri)
        ident = types.TextDocumentIdentifier(uri=uri)
        symbols = await session.client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=ident)
        )
        assert symbols is not None and len(symbols) == text.count("{{{reset}}}")
        report = symbols[0]
        assert isinstance(report, types.DocumentSymbol) and report.children is not None
        names = [c.name for c in report.children if c.kind == types.SymbolKind.Module]
        assert names == [m.group(1) for m in modules if m]
        traces = [c for c in report.children if c.kind == types.SymbolKind.Event]
        assert [t.range.start.line for t in traces] == first_frames

        lenses = await session.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=ident)
        )
        assert lenses is not None
        assert [(lens.range.start.line, lens.command.title) for lens in lenses if lens.command] == [
            (line, "Symbolize") for line in first_frames
        ]
        assert all(
            lens.command and lens.command.command == "stackmark.symbolize" for lens in lenses
        )

        tokens = await session.client.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(text_document=ident)
        )
        assert tokens is not None
        decoded = _decode_tokens(list(tokens.data), lines)
        bt_line = first_frames[0]
        address = re.search(r"bt:0:(0x[0-9a-f]+)", lines[bt_line])
        assert address is not None
        on_line = [(word, kind) for line, word, kind in decoded if line == bt_line]
        assert on_line == [("bt", "keyword"), ("0", "number"), (address.group(1), "number"),
                           ("ra", "enumMember")]  # fmt: skip
        mmap_line = next(i for i, line in enumerate(lines) if "{{{mmap:" in line)
        kinds = [kind for line, _, kind in decoded if line == mmap_line]
        assert kinds == ["keyword", "number", "number", "enumMember", "number", "enumMember",
                         "number"]  # fmt: skip
        ranged = await session.client.text_document_semantic_tokens_range_async(
            types.SemanticTokensRangeParams(
                text_document=ident,
                range=types.Range(
                    start=types.Position(line=bt_line, character=0),
                    end=types.Position(line=bt_line, character=99),
                ),
            )
        )
        assert ranged is not None
        assert [(w, k) for _, w, k in _decode_tokens(list(ranged.data), lines)] == on_line


def _decode_tokens(data: list[int], lines: list[str]) -> list[tuple[int, str, str]]:
    names = ["keyword", "number", "string", "enumMember", "function", "variable"]
    found = []
    line = start = 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, length, kind, _ = data[i : i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        found.append((line, lines[line][start : start + length], names[kind]))
    return found


async def test_document_links(shared: Session, tmp_path: Path) -> None:
    dump = tmp_path / "sancov.1234"
    dump.write_bytes(b"\x00dump")
    source = SOURCES / "markup_prog.c"
    log = tmp_path / "links.log"
    log.write_text(
        "{{{dumpfile:sancov:sancov.1234}}}\n"
        f"assertion failed at {source}:54:3 in main\n"
        "{{{dumpfile:sancov:not-there}}} /no/such/file.c:3\n"
    )
    async with borrow(shared) as session:
        uri = session.open(log)
        await session.diagnostics(uri)
        links = await session.client.text_document_document_link_async(
            types.DocumentLinkParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert links is not None
        found = sorted((link.range.start.line, link.target) for link in links)
        assert found == [(0, dump.as_uri()), (1, source.as_uri() + "#L54,3")]
        hover = await session.hover_text(uri, 0, 4)
        assert hover is not None and str(dump) in hover


# -- diagnostics -------------------------------------------------------------------------


async def test_diagnostics_match_llvm(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["pie"]
    text = log_path(program).read_text()
    build_id = oracle.spots(text)[0].build_id
    bad = "\n".join(
        [
            "{{{reset}}}",
            f"{{{{{{module:0:prog:elf:{build_id}}}}}}}",
            "{{{mmap:0x10000:0x1000:load:0:rx:0x1000}}}",
            "dup {{{module:0:again:elf:abcd}}}",
            "unknown {{{mmap:0x20000:0x1000:load:7:r:0x0}}}",
            "overlap {{{mmap:0x10800:0x1000:load:0:r:0x0}}}",
            "out of range {{{pc:0x90000}}}",
            "{{{bt:1:0x10010:ra:extra:x}}} too many fields",
            "bad field {{{pc:zz}}} and tag {{{PC:0x1}}}",
            "{{{module:9:nobody:elf:0123456789abcdef}}}",
            "fine {{{pc:0x10010}}}",
        ]
    )
    log = tmp_path / "bad.log"
    log.write_text(bad + "\n")
    _, stderr = oracle.filter_markup(log.read_bytes(), program.debug_dir)
    expected = set()
    lines = bad.splitlines()
    for message, line_text, caret in oracle.llvm_errors(stderr):
        expected.add((lines.index(line_text), caret, message))
    assert len(expected) >= 6
    async with borrow(shared) as session:
        uri = session.open(log)
        found = await session.diagnostics(
            uri, until=lambda d: any(x.code == "no-symbols" for x in d)
        )
        errors = {
            (d.range.start.line, d.range.start.character, d.message)
            for d in found
            if d.severity == types.DiagnosticSeverity.Error
        }
        assert errors == expected
        missing = [d for d in found if d.code == "no-symbols"]
        assert [(d.range.start.line, lines[9][d.range.start.character : d.range.end.character])
                for d in missing] == [(9, "0123456789abcdef")]  # fmt: skip
        assert all(d.severity == types.DiagnosticSeverity.Warning for d in missing)


async def test_a_large_log_read_in_two_processes(
    programs: dict[str, ProgramLog], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log large enough to be split (the threshold lowered for the test) is read by the
    server and a forked child at once (split.py): the first publication holds every
    problem llvm reports, on both sides of the split, and the modules without binaries."""
    from collections import Counter

    from stackmark_lsp import split

    program = programs["pie"]
    build_id = oracle.spots(log_path(program).read_text())[0].build_id
    reports = []
    for n in range(300):
        reports += [
            "{{{reset}}}",
            f"{{{{{{module:0:prog:elf:{build_id}}}}}}}",
            "{{{mmap:0x10000:0x1000:load:0:rx:0x1000}}}",
            f"[{n}] {{{{{{bt:0:0x10010}}}}}}",
        ]
        if n % 7 == 2:
            reports.append(f"[{n}] overlap {{{{{{mmap:0x10800:0x1000:load:0:r:0x0}}}}}}")
        if n % 11 == 5:
            reports.append(f"[{n}] out of range {{{{{{pc:0x{0x90000 + n:x}}}}}}}")
        if n % 13 == 9:
            reports.append(f"[{n}] {{{{{{module:{n}:nobody:elf:0123456789abcdef}}}}}}")
        reports.append(f"[{n}] text " + "x" * 400)
    text = "\n".join(reports) + "\n"
    log = tmp_path / "large.log"
    log.write_text(text)
    monkeypatch.setattr(split, "MIN_CHARS", 0)
    offset = split.split_offset(text)
    assert offset is not None
    middle = text.count("\n", 0, offset)
    assert 0 < middle < len(reports)
    _, stderr = oracle.filter_markup(log.read_bytes(), program.debug_dir)
    expected = Counter(
        (line, caret, message) for message, line, caret in oracle.llvm_errors(stderr)
    )
    assert sum(expected.values()) > 40
    assert any(reports.index(line) > middle for line, _, _ in expected)
    monkeypatch.setenv("STACKMARK_LSP_SPLIT_MIN_CHARS", "0")
    config = settings(program, tmp_path / "gsym")
    async with Session(tmp_path / "xdg", configuration=config) as session:
        (tmp_path / "small.log").write_text("{{{reset}}}\n")
        await session.diagnostics(session.open(tmp_path / "small.log"))  # the server is ready
        uri = session.open(log)
        await session.diagnostics(uri)
        first = next(found for where, found in session.publications if where == uri)
        errors = Counter(
            (reports[d.range.start.line], d.range.start.character, d.message)
            for d in first
            if d.severity == types.DiagnosticSeverity.Error
        )
        assert errors == expected
        found = await session.diagnostics(
            uri, until=lambda d: any(x.code == "no-symbols" for x in d)
        )
        missing = sorted(d.range.start.line for d in found if d.code == "no-symbols")
        assert missing == [i for i, line in enumerate(reports) if ":nobody:" in line]


async def test_a_large_log_gets_its_first_crash_reports_diagnostics_first(
    programs: dict[str, ProgramLog], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the `didOpen` of a large log (the threshold lowered for the test) is still
    arriving, the server publishes the diagnostics of the crash reports its first bytes
    hold (head.py): exactly llvm's problems on those lines and none after them. The whole
    log's, every problem llvm reports, follow."""
    from collections import Counter

    program = programs["pie"]
    build_id = oracle.spots(log_path(program).read_text())[0].build_id
    reports = []
    for n in range(4000):
        reports += [
            "{{{reset}}}",
            f"{{{{{{module:0:prog:elf:{build_id}}}}}}}",
            "{{{mmap:0x10000:0x1000:load:0:rx:0x1000}}}",
            f"[{n}] {{{{{{bt:0:0x10010}}}}}}",
            f"[{n}] out of range {{{{{{pc:0x{0x90000 + n:x}}}}}}}",
            f"[{n}] text " + "x" * 700,
        ]
    text = "\n".join(reports) + "\n"
    assert len(text) > 2 * (1 << 20)  # more than the pipe holds: the head is a part of it
    log = tmp_path / "large.log"
    log.write_text(text)
    _, stderr = oracle.filter_markup(log.read_bytes(), program.debug_dir)
    expected = Counter(
        (reports.index(line), caret, message) for message, line, caret in oracle.llvm_errors(stderr)
    )
    monkeypatch.setenv("STACKMARK_LSP_HEAD_MIN_BYTES", "0")
    config = settings(program, tmp_path / "gsym")
    async with Session(tmp_path / "xdg", configuration=config) as session:
        (tmp_path / "small.log").write_text("{{{reset}}}\n")
        await session.diagnostics(session.open(tmp_path / "small.log"))  # the server is ready
        uri = session.open(log)

        def errors(found: list[types.Diagnostic]) -> Counter[tuple[int, int, str]]:
            return Counter(
                (d.range.start.line, d.range.start.character, d.message)
                for d in found
                if d.severity == types.DiagnosticSeverity.Error
            )

        await session.diagnostics(uri, until=lambda found: errors(found) == expected)
        first = errors(next(found for where, found in session.publications if where == uri))
        assert 0 < len(first) < len(expected)
        last = max(line for line, _, _ in first)
        cut = reports.index("{{{reset}}}", last)
        assert first == Counter(e for e in expected.elements() if e[0] < cut)


async def test_edits_that_change_context(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["pie"]
    path = copy_of(program, tmp_path)
    text = path.read_text()
    lines = text.splitlines()
    module_line = next(i for i, line in enumerate(lines) if "{{{module:0:" in line)
    async with borrow(shared) as session:
        uri = session.open(path)
        found = await session.diagnostics(uri)
        assert not [d for d in found if d.severity == types.DiagnosticSeverity.Error]
        spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name != "libc.so.6")
        assert await session.hover_text(uri, spot.line, spot.column + 3)

        # Remove the program's module line: its mmaps name an unknown module, and every
        # address they covered is now covered by nothing, exactly as llvm sees the new log.
        session.edit(uri, 2, (module_line, 0), (module_line + 1, 0), "")
        edited = "\n".join(lines[:module_line] + lines[module_line + 1 :]) + "\n"
        _, stderr = oracle.filter_markup(edited.encode(), program.debug_dir)
        new_lines = edited.splitlines()
        expected = {
            (new_lines.index(line_text), caret, message)
            for message, line_text, caret in oracle.llvm_errors(stderr)
            if "no mmap covers" not in message  # llvm's caret is on a bt's frame number
        }
        errors = await session.diagnostics(
            uri, until=lambda d: any(x.severity == types.DiagnosticSeverity.Error for x in d)
        )
        located = {
            (d.range.start.line, d.range.start.character, d.message)
            for d in errors
            if d.severity == types.DiagnosticSeverity.Error and d.code != "no-mmap"
        }
        assert located == expected
        uncovered = sorted(d.range.start.line for d in errors if d.code == "no-mmap")
        llvm_uncovered = sorted(
            new_lines.index(line_text)
            for message, line_text, _ in oracle.llvm_errors(stderr)
            if "no mmap covers" in message
        )
        assert uncovered == llvm_uncovered and uncovered
        hover = await session.hover_text(uri, spot.line - 1, spot.column + 3)
        assert hover is not None and "no mmap covers this address" in hover

        # Put it back: everything resolves again.
        session.edit(uri, 3, (module_line, 0), (module_line, 0), lines[module_line] + "\n")
        found = await session.diagnostics(
            uri,
            until=lambda d: not [x for x in d if x.severity == types.DiagnosticSeverity.Error],
        )
        assert await session.hover_text(uri, spot.line, spot.column + 3)


# -- the symbolized view -------------------------------------------------------------------


async def test_symbolized_view_is_what_the_command_prints(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["cpp"]
    path = copy_of(program, tmp_path)
    cli = subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", program.debug_option, str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert "operator new" in cli.stdout  # symbolized for real
    lines = path.read_text().splitlines()
    first_frame = next(i for i, line in enumerate(lines) if "{{{bt:0:" in line)
    async with borrow(shared) as session:
        uri = session.open(path)
        await session.diagnostics(uri)
        assert [r.method for r in session.registrations] == ["workspace/textDocumentContent"]
        result = await session.command("stackmark.symbolize", uri, first_frame)
        view_uri = result["uri"]
        assert view_uri.startswith("stackmark-symbolized:") and view_uri.endswith(".log")
        assert "text" not in result  # the client reads it as a virtual document
        content = await session.client.workspace_text_document_content_async(
            types.TextDocumentContentParams(uri=view_uri)
        )
        assert content is not None and content.text == cli.stdout
        view_lines = content.text.splitlines()
        assert re.match(r"\s+#0", view_lines[result["line"]])  # the lens's backtrace
        assert [s.uri for s in session.client.shown_documents] == [view_uri]
        text = await session.command("stackmark.symbolizedText", uri)
        assert text["text"] == cli.stdout

        # An edit makes the view stale; the client is told to fetch it again.
        session.edit(uri, 2, (0, 0), (0, 0), "new first line\n")
        await session.diagnostics(uri, until=lambda d: True)
        content = await session.client.workspace_text_document_content_async(
            types.TextDocumentContentParams(uri=view_uri)
        )
        assert content is not None and content.text == "new first line\n" + cli.stdout


async def test_a_view_shown_right_after_an_edit_is_refreshed_first(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    """The code lens run within the refresh's half-second debounce after an edit: the
    server tells the client to read the view again before asking it to show the view
    (a client holding the old text showed it, one edit behind), and only once."""
    program = programs["pie"]
    path = copy_of(program, tmp_path)
    lines = path.read_text().splitlines()
    first_frame = next(i for i, line in enumerate(lines) if "{{{bt:0:" in line)
    async with borrow(shared) as session:
        uri = session.open(path)
        await session.diagnostics(uri)
        view_uri = (await session.command("stackmark.symbolize", uri, first_frame))["uri"]
        before = session.refreshed.count(view_uri)
        session.edit(uri, 2, (0, 0), (0, 0), "a new first line\n")
        result = await session.command("stackmark.symbolize", uri, first_frame + 1)
        # Notifications arrive in order: the refresh came before the command's answer.
        assert session.refreshed.count(view_uri) == before + 1
        assert result["uri"] == view_uri
        await asyncio.sleep(1.0)  # past the debounce: it was cancelled, not sent again
        assert session.refreshed.count(view_uri) == before + 1
        content = await session.client.workspace_text_document_content_async(
            types.TextDocumentContentParams(uri=view_uri)
        )
        assert content is not None and content.text.startswith("a new first line\n")


# -- configuration, missing binaries, bad input ----------------------------------------


async def test_configuration_changes_take_effect(
    programs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    program = programs["pie"]
    path = log_path(program)
    text = path.read_text()
    spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog")
    empty = tmp_path / "empty"
    empty.mkdir()
    options = {"debugFileDirectories": [str(empty)], "cacheDir": str(tmp_path / "c1")}
    async with Session(tmp_path / "cache", initialization_options=options) as session:
        uri = session.open(path)

        def missing(found: list[types.Diagnostic]) -> set[str]:
            return {d.message.split()[5] for d in found if d.code == "no-symbols"}

        before = await session.diagnostics(uri, until=lambda d: spot.build_id in missing(d))
        assert spot.build_id in missing(before)
        hover = await session.hover_text(uri, spot.line, spot.column + 3)
        assert hover is not None and "could not find build ID" in hover

        # workspace/configuration now names the real debug directory (it overrides the
        # initialization options key by key).
        session.configure(settings(program, tmp_path / "c2"))
        after = await session.diagnostics(
            uri, until=lambda d: bool(missing(d)) and spot.build_id not in missing(d)
        )
        assert "libc.so.6" in " ".join(d.message for d in after)  # still not found
        obj = oracle.debug_file(program.debug_dir, spot.build_id)
        frames = oracle.code(obj, [spot.relative])[spot.relative]
        hover = await session.hover_text(uri, spot.line, spot.column + 3)
        assert hover is not None and hover_chain(hover) == expected_chain(frames)

        # A source path map moves the definition targets.
        moved = tmp_path / "moved"
        shutil.copytree(SOURCES, moved)
        session.configure(
            settings(program, tmp_path / "c2", sourcePathMap={str(SOURCES): str(moved)})
        )
        await session.diagnostics(uri, until=lambda d: spot.build_id not in missing(d))
        for _ in range(100):  # the new settings apply once the client has answered
            links = await session.definition(uri, spot.line, spot.column + 3)
            if links and str(moved) in links[0].target_uri:
                break
        assert links and links[0].target_uri == (moved / Path(frames[0].file).name).as_uri()


async def test_a_log_whose_binaries_are_missing(
    programs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    program = programs["pie"]
    path = log_path(program)
    text = path.read_text()
    empty = tmp_path / "nothing"
    empty.mkdir()
    cli = subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", f"--debug-file-directory={empty}",
         str(path)],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    config = {"debugFileDirectories": [str(empty)], "cacheDir": str(tmp_path)}
    async with Session(tmp_path / "cache", configuration=config) as session:
        uri = session.open(path)
        modules = text.count("{{{module:")
        found = await session.diagnostics(
            uri, until=lambda d: len([x for x in d if x.code == "no-symbols"]) == modules
        )
        assert not [d for d in found if d.severity == types.DiagnosticSeverity.Error]
        spot = next(s for s in oracle.spots(text) if s.tag == "bt")
        hover = await session.hover_text(uri, spot.line, spot.column + 3)
        assert hover is not None
        assert f"`{hex(spot.relative)}`" in hover and "could not find build ID" in hover
        assert await session.definition(uri, spot.line, spot.column + 3) == []
        assert await session.inlay_hints(uri, 0, 100) == []
        view = await session.command("stackmark.symbolizedText", uri)
        assert view["text"] == cli.stdout
        assert f"({spot.module_name}+{hex(spot.relative)})" in view["text"]


async def test_garbage_and_binary_input(programs: dict[str, ProgramLog], tmp_path: Path) -> None:
    program = programs["pie"]
    random_bytes = bytes((i * 7919 + 13) % 256 for i in range(20000))
    garbage = random_bytes.decode("utf-8", "surrogateescape").replace("\udc00", "")
    weird = (
        "\x00{{{bt:\x00}}}\u2028{{{pc:0x1\r{{{{{{\x1b[31m}}}}}}\n" * 50 + "{{{hexdict:" + "x" * 5000
    )
    async with Session(tmp_path / "cache", configuration=settings(program, tmp_path)) as session:
        binary_uri = session.open(tmp_path / "binary.log", garbage)
        weird_uri = session.open(tmp_path / "weird.log", weird)
        await session.diagnostics(binary_uri)
        await session.diagnostics(weird_uri)
        for uri in (binary_uri, weird_uri):
            for line, character in ((0, 0), (0, 5), (3, 2), (10**6, 10**6)):
                await session.hover(uri, line, character)
                await session.definition(uri, line, character)
            await session.inlay_hints(uri, 0, 10**6)
            ident = types.TextDocumentIdentifier(uri=uri)
            await session.client.text_document_semantic_tokens_full_async(
                types.SemanticTokensParams(text_document=ident)
            )
            await session.client.text_document_document_symbol_async(
                types.DocumentSymbolParams(text_document=ident)
            )
            await session.command("stackmark.symbolizedText", uri)
        # Edits with garbage, anywhere (even past the end), then a real log still works.
        for version, (line, column) in enumerate([(0, 3), (5, 0), (99, 99), (1, 10**5)], 2):
            session.edit(weird_uri, version, (line, column), (line + 1, 0), garbage[:300])
        await session.diagnostics(weird_uri)
        path = log_path(program)
        uri = session.open(path)
        await session.diagnostics(uri)
        spot = next(s for s in oracle.spots(path.read_text()) if s.tag == "bt")
        assert await session.hover_text(uri, spot.line, spot.column + 3)
        assert not [m for m in session.client.messages if m.type == types.MessageType.Error]


# -- languages and progress ------------------------------------------------------------


@pytest.mark.parametrize(
    ("locale", "title", "missing", "converting", "lens"),
    [
        ("en", "### frame #", "could not find build ID", "Converting markup_prog to GSYM",
         "Symbolize"),
        ("ja-JP", "### フレーム #", "が見つかりません", "markup_prog を GSYM に変換中",
         "シンボル化"),
        ("fr", "### frame #", "could not find build ID", "Converting markup_prog to GSYM",
         "Symbolize"),
        (None, "### frame #", "could not find build ID", "Converting markup_prog to GSYM",
         "Symbolize"),
    ],
)  # fmt: skip
async def test_messages_follow_the_client_locale(
    programs: dict[str, ProgramLog],
    tmp_path: Path,
    locale: str | None,
    title: str,
    missing: str,
    converting: str,
    lens: str,
) -> None:
    program = programs["pie"]
    path = log_path(program)
    text = path.read_text() + "bad {{{pc:zz}}}\n"
    spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog")
    async with Session(
        tmp_path / "cache", configuration=settings(program, tmp_path), locale=locale
    ) as session:
        uri = session.open(path, text)
        found = await session.diagnostics(
            uri, until=lambda d: any(x.code == "no-symbols" for x in d)
        )
        assert any(missing in d.message for d in found if d.code == "no-symbols")
        bad = next(d for d in found if d.code == "bad-field")
        japanese = locale == "ja-JP"
        assert (bad.message == "アドレスが必要ですが「zz」があります") is japanese
        assert (bad.message == "expected address; found 'zz'") is not japanese
        hover = await session.hover_text(uri, spot.line, spot.column + 3)
        assert hover is not None and hover.startswith(title)
        assert ("モジュール相対アドレス" in hover) is japanese
        lenses = await session.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert lenses and all(lens_.command and lens_.command.title == lens for lens_ in lenses)
        # The program's GSYM entry is built in the background, with progress.
        titles: list[str] = []
        for _ in range(600):
            titles = [
                report.title
                for reports in session.client.progress_reports.values()
                for report in reports
                if isinstance(report, types.WorkDoneProgressBegin)
            ]
            ended = [
                reports
                for reports in session.client.progress_reports.values()
                if reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
            ]
            if converting in titles and len(ended) == len(session.client.progress_reports):
                break
            await session.client.wait_for_notification(types.PROGRESS)
        assert converting in titles


# -- debuginfod -------------------------------------------------------------------------


async def test_symbols_and_sources_from_debuginfod(
    programs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    """No local debug files and sources moved away: the binary and the source files come
    from an elfutils debuginfod server on 127.0.0.1."""
    require_tool("debuginfod")
    from tests.support.debuginfod_servers import ElfutilsServer

    program = programs["pie"]
    path = log_path(program)
    text = path.read_text()
    spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog")
    serve = tmp_path / "serve"
    serve.mkdir()
    shutil.copy2(program.program, serve / program.program.name)
    empty = tmp_path / "empty"
    empty.mkdir()
    obj = oracle.debug_file(program.debug_dir, spot.build_id)
    frames = oracle.code(obj, [spot.relative])[spot.relative]
    with ElfutilsServer(serve, tmp_path / "server", wait_for=[spot.build_id]) as server:
        configuration = {
            "debugFileDirectories": [str(empty)],
            "debuginfodUrls": [server.url],
            "cacheDir": str(tmp_path / "cache"),
            "sourcePathMap": {str(SOURCES): str(tmp_path / "gone")},
        }
        async with Session(tmp_path / "xdg", configuration=configuration) as session:
            uri = session.open(path)
            await session.diagnostics(uri, until=lambda d: any(x.code == "no-symbols" for x in d))
            hover = await session.hover_text(uri, spot.line, spot.column + 3)
            assert hover is not None and hover_chain(hover) == expected_chain(frames)
            assert str(tmp_path / "cache" / "debuginfod") in hover  # symbols from the download
            links = await session.definition(uri, spot.line, spot.column + 3)
            assert links and isinstance(links[0], types.LocationLink)
            fetched = Path(unquote(urlparse(links[0].target_uri).path))
            assert fetched.is_relative_to(tmp_path / "cache" / "debuginfod")
            assert fetched.read_bytes() == Path(frames[0].file).read_bytes()
            assert links[0].target_range.start.line == frames[0].line - 1
        assert server.requests("source") >= 1


# -- hexdict, and answers while long work runs --------------------------------------------


async def test_hexdict_values_in_modules(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["pie"]
    text = log_path(program).read_text()
    frames = [s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog"]
    raw = [re.search(r"0x[0-9a-f]+", s.text) for s in frames[:2]]
    assert all(raw)
    addresses = [m.group() for m in raw if m]
    dump = (
        f"registers {{{{{{hexdict:\n  pc: {addresses[0]} sp: 0x7ffc0000\n"
        f"  lr: {addresses[1]}\n}}}}}}"
    )
    path = tmp_path / "hexdict.log"
    path.write_text(text + dump + "\n")
    obj = oracle.debug_file(program.debug_dir, frames[0].build_id)
    # hexdict values are looked up as they are (no -1): ask llvm for exactly those
    relative = [
        frames[i].relative + (0 if frames[i].text.endswith(":pc}}}") else 1) for i in (0, 1)
    ]
    answers = oracle.code(obj, relative)
    async with borrow(shared) as session:
        uri = session.open(path)
        await session.diagnostics(uri)
        first = len(text.splitlines())
        for line, column in ((first, 12), (first + 1, 3), (first + 3, 1)):  # all over it
            hover = await session.hover_text(uri, line, column)
            assert hover is not None and hover.startswith("### hexdict"), line
            for value, address in zip(addresses, relative, strict=True):
                inner = answers[address][0]
                assert f"`{value}` → `{inner.function}` `{inner.location}`" in hover
            assert "0x7ffc0000" not in hover  # in no module


async def test_requests_are_answered_while_the_view_renders(
    programs: dict[str, ProgramLog], shared: Session, tmp_path: Path
) -> None:
    program = programs["pie"]
    text = log_path(program).read_text()
    lines = text.splitlines()
    context = [line for line in lines if line.startswith("{{{")]
    frames = [line for line in lines if "{{{bt:" in line]
    big = tmp_path / "big.log"
    big.write_text("\n".join(context + frames * 1500) + "\n")  # ~40,000 frames to symbolize
    spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog")
    async with borrow(shared) as session:
        uri = session.open(big)
        await session.diagnostics(uri)
        line = len(context) + frames.index(lines[spot.line])
        view = asyncio.ensure_future(session.command("stackmark.symbolizedText", uri))
        await asyncio.sleep(0)  # the command goes out first: the render starts before the hovers

        async def hover_while_rendering() -> bool:
            hover = await session.hover_text(uri, line, spot.column + 3)
            assert hover is not None and "frame #" in hover
            return not view.done()

        answered = await asyncio.gather(*(hover_while_rendering() for _ in range(5)))
        assert all(answered)  # five hovers answered while one view of 40,000 frames renders
        result = await view
        assert result["text"].count("\n") > len(frames) * 1500


# -- a client with few capabilities ----------------------------------------------------


# Neovim 0.7 answers workspace/configuration without advertising it: the server asks anyway.
@pytest.mark.filterwarnings("ignore:Client does not support 'workspace/configuration'")
async def test_a_client_like_neovim_0_7(programs: dict[str, ProgramLog], tmp_path: Path) -> None:
    """Neovim 0.7's capabilities (no virtual documents, no `workspace.configuration`
    advertised, yet it answers): settings still arrive, and the symbolize command hands
    the text over instead of opening a view; a plain-text, Location-only client gets those."""
    import pytest_lsp

    program = programs["pie"]
    path = log_path(program)
    text = path.read_text()
    spot = next(s for s in oracle.spots(text) if s.tag == "bt" and s.module_name == "markup_prog")
    neovim = pytest_lsp.client_capabilities("neovim@v0.7.0")
    async with Session(
        tmp_path / "xdg", configuration=settings(program, tmp_path), client_capabilities=neovim
    ) as session:
        uri = session.open(path)
        await session.diagnostics(uri)
        assert session.registrations == []
        hover = await session.hover_text(uri, spot.line, spot.column + 3)
        assert hover is not None and "### frame #" in hover  # the configured debug directory
        result = await session.command("stackmark.symbolize", uri, spot.line)
        assert "text" in result and session.client.shown_documents == []
    plain = capabilities(markdown=False, links=False)
    async with Session(
        tmp_path / "xdg2", configuration=settings(program, tmp_path), client_capabilities=plain
    ) as session:
        uri = session.open(path)
        await session.diagnostics(uri)
        found = await session.hover(uri, spot.line, spot.column + 3)
        assert found is not None and isinstance(found.contents, types.MarkupContent)
        assert found.contents.kind == types.MarkupKind.PlainText
        assert "`" not in found.contents.value and "frame #" in found.contents.value
        links = await session.definition(uri, spot.line, spot.column + 3)
        assert links and all(isinstance(link, types.Location) for link in links)
