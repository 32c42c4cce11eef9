"""The server's symbol service: where a lookup runs, and that it answers as llvm does.

Once a module's GSYM cache entry is open, `SymbolService.code_of` answers on
the event loop (a binary search) instead of handing the lookup to a worker
thread; the first lookup, which opens the module, and any lookup while a
worker holds the symbolizer still go to the workers. The answers are checked
against llvm-symbolizer-19 on a C++ program compiled at test time.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stackmark_lsp.settings import Settings
from stackmark_lsp.symbolization import SymbolService

from stackmark.model import Module
from stackmark.symbols.cache import GsymCache
from stackmark.symbols.gsym_source import GsymSource
from tests.conftest import require_tool
from tests.lsp import oracle
from tests.support.gsymutil import llvm_convert, llvm_lookup_blocks
from tests.support.markup_programs import ProgramLog, program_log


class _Silent:
    """A progress sink that drops everything (no client here)."""

    def begin(self, title: str) -> object:
        return object()

    def report(self, handle: object, message: str, percentage: int | None = None) -> None:
        return None

    def end(self, handle: object) -> None:
        return None


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> ProgramLog:
    require_tool("llvm-symbolizer-19")
    return program_log("cpp", tmp_path_factory.mktemp("symbolization"))


def _service(program: ProgramLog, cache: Path) -> SymbolService:
    settings = Settings(debug_file_directories=(str(program.debug_dir),), cache_dir=str(cache))
    return SymbolService(settings, _Silent(), lambda message_id, **values: message_id)


def _spots(program: ProgramLog) -> list[oracle.Spot]:
    spots = [s for s in oracle.spots(program.log.decode()) if s.tag in ("pc", "bt")]
    assert len({s.relative for s in spots}) >= 4, "too few addresses in the fixture log"
    return spots


class _Counted:
    """Wraps `SymbolService.run` to count the lookups handed to worker threads."""

    def __init__(self, service: SymbolService) -> None:
        self.calls = 0
        self._run: Callable[..., Any] = service.run

    async def __call__(self, function: Callable[..., Any], *args: object) -> Any:
        self.calls += 1
        return await self._run(function, *args)


def test_gsym_lookups_run_on_the_event_loop_and_agree_with_llvm(
    program: ProgramLog, tmp_path: Path
) -> None:
    spots = _spots(program)
    build_id = spots[0].build_id
    debug_file = oracle.debug_file(program.debug_dir, build_id)
    GsymCache(tmp_path).get_or_build(build_id, str(debug_file))  # a warm cache
    expected = oracle.code(debug_file, sorted({s.relative for s in spots}))
    service = _service(program, tmp_path)
    counted = _Counted(service)
    service.run = counted  # type: ignore[method-assign]
    module = Module(0, spots[0].module_name, build_id, [])

    async def ask() -> dict[int, list[tuple[str, int, int]]]:
        answers = {}
        for address in expected:
            lookup = await service.code_of(module, address)
            answers[address] = [(f.file or "", f.line, f.column) for f in lookup.frames]
        return answers

    try:
        answers = asyncio.run(ask())
        assert isinstance(service.symbolizer.opened_source(module), GsymSource)
    finally:
        service.close()
    # Only the first lookup (which finds the files and opens the entry) went to a worker.
    assert counted.calls == 1
    for address, frames in expected.items():
        assert answers[address] == [(f.file, f.line, f.column) for f in frames], hex(address)


def test_a_lookup_waits_for_a_worker_while_the_symbolizer_is_busy(
    program: ProgramLog, tmp_path: Path
) -> None:
    spots = _spots(program)
    build_id = spots[0].build_id
    debug_file = oracle.debug_file(program.debug_dir, build_id)
    GsymCache(tmp_path).get_or_build(build_id, str(debug_file))
    service = _service(program, tmp_path)
    module = Module(0, spots[0].module_name, build_id, [])
    first, second = sorted({s.relative for s in spots})[:2]
    expected = oracle.code(debug_file, [second])[second]

    async def ask() -> tuple[int, list[tuple[str, int, int]]]:
        await service.code_of(module, first)  # opens the entry
        counted = _Counted(service)
        service.run = counted  # type: ignore[method-assign]
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with service.lock:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(10)
        asking = asyncio.ensure_future(service.code_of(module, second))
        await asyncio.sleep(0.1)
        assert not asking.done(), "answered on the loop while a worker held the symbolizer"
        release.set()
        lookup = await asking
        holder.join()
        return counted.calls, [(f.file or "", f.line, f.column) for f in lookup.frames]

    try:
        calls, frames = asyncio.run(ask())
    finally:
        service.close()
    assert calls == 1
    assert frames == [(f.file, f.line, f.column) for f in expected]


def test_gsym_paths_answer_a_module_without_debug_files(
    program: ProgramLog, tmp_path: Path
) -> None:
    """With only a GSYM file of the program (settings' `gsymPaths`), lookups give
    llvm-gsymutil-19's files and lines for every frame, and no columns."""
    spots = _spots(program)
    build_id = spots[0].build_id
    debug_file = oracle.debug_file(program.debug_dir, build_id)
    gsym = llvm_convert(debug_file, tmp_path / "gsyms" / "p.gsym")
    addresses = sorted({s.relative for s in spots})
    expected = [
        [(path, int(line)) for path, line in re.findall(r" @ (\S+):(\d+)", block)]
        for block in llvm_lookup_blocks(gsym, addresses)
    ]
    settings = Settings(
        debug_file_directories=(str(tmp_path / "nothing"),),
        gsym_paths=(str(gsym.parent),),
        cache_dir=str(tmp_path / "cache"),
    )
    service = SymbolService(settings, _Silent(), lambda message_id, **values: message_id)
    module = Module(0, "not-on-disk", build_id, [])

    async def ask() -> list[list[tuple[str | None, int, int]]]:
        return [
            [(f.file, f.line, f.column) for f in (await service.code_of(module, a)).frames]
            for a in addresses
        ]

    try:
        answers = asyncio.run(ask())
    finally:
        service.close()
    assert any(expected), "llvm-gsymutil answered none of the addresses"
    for address, frames, wanted in zip(addresses, answers, expected, strict=True):
        assert [(f, ln) for f, ln, _ in frames if f is not None] == wanted, hex(address)
        assert all(column == 0 for *_, column in frames)
