"""Symbolization for the server: the core `Symbolizer`, off the event loop, one answer at a time.

Lookups run in worker threads; the server awaits them, so a slow lookup
never stalls other requests. The core `Symbolizer` is not made for
threads, so each lookup holds `lock` (lookups are short once a module is
indexed). Once a module answers from its GSYM cache entry, a lookup is a
binary search and runs on the event loop itself, unless a worker holds the
lock (`SymbolService.code_of`). Finding a module's files (which may download from debuginfod)
happens outside that lock, once per build ID.

Modules are indexed lazily, on their first lookup: the DWARF source opens
at once and answers; if the module has DWARF and no GSYM cache entry yet,
the GSYM entry is built in the background (one at a time, with progress),
and the module's answers switch to it when it is ready. Entries built
earlier are used right away. That is the core's "background" GSYM cache
mode (`stackmark.symbols.gsym_background`).

The settings become the core's `SymbolSettings`, as `stackmark symbolize`
turns its options into them, and `build_symbolizer` assembles the
symbolizer, so the symbolized view shows what the command prints.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from stackmark.errors import StackmarkError
from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, Failure, ModuleResolution, Reason
from stackmark.symbols.gsym_background import BackgroundGsymBuilds, UpgradableSource
from stackmark.symbols.setup import SymbolSettings, build_symbolizer
from stackmark.symbols.source import ModuleFiles
from stackmark.symbols.symbolizer import ANSWERS_KEPT
from stackmark_lsp.settings import Settings

if TYPE_CHECKING:
    from stackmark.symbols.debuginfod import DebuginfodClient, DownloadProgress

_T = TypeVar("_T")
_ANSWERS = 4096  # answers remembered for the event loop


class ProgressSink(Protocol):
    """Work-done progress towards the client; callable from any thread."""

    def begin(self, title: str) -> object: ...

    def report(self, handle: object, message: str, percentage: int | None = None) -> None: ...

    def end(self, handle: object) -> None: ...


class Titles(Protocol):
    def __call__(self, message_id: str, /, **values: object) -> str: ...


class _ConversionProgress:
    """The GSYM converter's progress (label, done, total) as LSP progress."""

    def __init__(self, sink: ProgressSink, handle: object) -> None:
        self.sink = sink
        self.handle = handle
        self._last = -1

    def update(self, label: str, done: int, total: int) -> None:
        percentage = int(100 * done / total) if total else None
        if percentage != self._last:
            self._last = percentage if percentage is not None else -1
            self.sink.report(self.handle, label, percentage)

    def finish(self) -> None:
        """Nothing to do: the service ends the progress itself."""


class SymbolService:
    """The server's symbolizer (see the module docstring); the `Lookups` of lookups.py."""

    def __init__(
        self,
        settings: Settings,
        progress: ProgressSink,
        titles: Titles,
        report: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.settings = settings
        self.progress = progress
        self.titles = titles
        self.lock = threading.RLock()
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="stackmark-symbols")
        self._resolving: dict[str, Future[ModuleResolution]] = {}
        self._resolved: dict[str, ModuleResolution] = {}
        self._meta = threading.Lock()
        self._downloads: dict[str, object] = {}
        self._names: dict[str, str] = {}  # build ID -> a module name the log gives it
        # Recent answers, so that a repeated question is answered on the event loop.
        self._answers: OrderedDict[tuple[str, str, int], CodeLookup | DataLookup] = OrderedDict()
        self.debuginfod = self._debuginfod_client(report)
        self.gsym_builds = BackgroundGsymBuilds(lock=self.lock, watch=self._conversion)
        self.symbolizer = build_symbolizer(
            symbol_settings(settings), self.debuginfod, builds=self.gsym_builds
        )

    # -- set-up -----------------------------------------------------------------------

    def _debuginfod_client(self, report: Callable[[str], None]) -> DebuginfodClient | None:
        """A debuginfod client when servers are configured (settings, else DEBUGINFOD_URLS),
        or offline mode asks for the downloads already made."""
        urls = self.settings.debuginfod_urls
        offline = self.settings.debuginfod_offline
        if not urls and not offline and not os.environ.get("DEBUGINFOD_URLS", "").strip():
            return None
        from stackmark.symbols.debuginfod import (
            DebuginfodClient,
            DebuginfodConfigError,
            DebuginfodSettings,
        )

        cache: Path | None = None
        if self.settings.debuginfod_cache_path:
            cache = Path(self.settings.debuginfod_cache_path)
        elif self.settings.cache_dir:
            cache = Path(self.settings.cache_dir) / "debuginfod"
        try:
            settings = DebuginfodSettings.from_environment(
                urls=list(urls) or None,
                cache_path=cache,
                timeout=self.settings.debuginfod_timeout,  # 0: no timeout, as DEBUGINFOD_TIMEOUT=0
                offline=offline,
            )
        except DebuginfodConfigError as exc:
            report(str(exc))
            return None
        return DebuginfodClient(settings, progress=self._download_progress, report=report)

    def _download_progress(self, status: DownloadProgress) -> None:
        key = f"{status.build_id} {status.artifact}"
        with self._meta:
            handle = self._downloads.get(key)
            if handle is None and not status.done:
                name = status.artifact + " " + status.build_id[:12]
                handle = self._downloads[key] = self.progress.begin(
                    self.titles("progress.download", name=name)
                )
            elif status.done:
                self._downloads.pop(key, None)
        if handle is None:
            return
        if status.done:
            self.progress.end(handle)
            return
        percentage = int(100 * status.received / status.total) if status.total else None
        self.progress.report(handle, f"{status.received // 1024} KiB", percentage)

    @contextmanager
    def _conversion(self, files: ModuleFiles) -> Iterator[_ConversionProgress]:
        """Work-done progress for the background build of `files`' GSYM entry, named as
        the log names the module."""
        name = self._names.get(files.build_id) or os.path.basename(files.binary)
        handle = self.progress.begin(self.titles("progress.convert", name=name))
        try:
            yield _ConversionProgress(self.progress, handle)
        finally:
            self.progress.end(handle)

    # -- lookups (worker threads) ------------------------------------------------------

    def resolve(self, module: Module) -> ModuleResolution:
        """Where `module`'s symbols are (finding them once per build ID; thread-safe)."""
        key = module.build_id.lower() or f"path:{module.path}"
        with self._meta:
            known = self._resolved.get(key)
            if known is not None:
                return known
            self._names.setdefault(key, module.name)
            future = self._resolving.get(key)
            mine = future is None
            if future is None:
                future = self._resolving[key] = Future()
        if not mine:
            return future.result()
        try:
            resolution = self.symbolizer.resolve(module)
            if resolution.binary is None and resolution.failure is None:
                resolution.failure = Failure(Reason.NOT_FOUND)
        except (StackmarkError, OSError) as exc:
            resolution = ModuleResolution(
                module.build_id, None, Failure(Reason.RESOLVE_ERROR, str(exc))
            )
        with self._meta:
            self._resolved[key] = resolution
            self._resolving.pop(key, None)
        future.set_result(resolution)
        return resolution

    def resolved(self, module: Module) -> ModuleResolution | None:
        """The resolution of `module` if it is known already (never blocks)."""
        key = module.build_id.lower() or f"path:{module.path}"
        with self._meta:
            return self._resolved.get(key)

    def resolved_build_id(self, build_id: str) -> ModuleResolution | None:
        """The resolution of the modules with `build_id`, if known already (never blocks)."""
        with self._meta:
            return self._resolved.get(build_id.lower())

    def code(self, module: Module, address: int) -> CodeLookup:
        """The inline chain at module-relative `address` (thread-safe)."""
        resolution = self.resolve(module)
        if resolution.binary is None:
            return CodeLookup(resolution, address)
        with self.lock:
            try:
                found = self.symbolizer.code(module, address)
            except (StackmarkError, OSError) as exc:
                return CodeLookup(resolution, address, [], Failure(Reason.LOOKUP_ERROR, str(exc)))
        self._remember("code", module, address, found)
        return found

    def data(self, module: Module, address: int) -> DataLookup:
        """The data symbol covering module-relative `address` (thread-safe)."""
        resolution = self.resolve(module)
        if resolution.binary is None:
            return DataLookup(resolution, address)
        with self.lock:
            try:
                found = self.symbolizer.data(module, address)
            except (StackmarkError, OSError) as exc:
                return DataLookup(resolution, address, None, Failure(Reason.LOOKUP_ERROR, str(exc)))
        self._remember("data", module, address, found)
        return found

    def _remember(
        self, kind: str, module: Module, address: int, answer: CodeLookup | DataLookup
    ) -> None:
        with self._meta:
            self._answers[(kind, module.build_id, address)] = answer
            if len(self._answers) > _ANSWERS:
                self._answers.popitem(last=False)

    async def code_of(self, module: Module, address: int) -> CodeLookup:
        """`code`, from the event loop: a remembered answer or a GSYM lookup at once, else
        a worker's."""
        with self._meta:
            known = self._answers.get(("code", module.build_id, address))
        if isinstance(known, CodeLookup) and module.build_id:
            return known
        if self._quick(module) and self.lock.acquire(blocking=False):
            try:
                return self.code(module, address)
            finally:
                self.lock.release()
        return await self.run(self.code, module, address)

    async def resolution_of(self, module: Module) -> ModuleResolution:
        """`resolve`, from the event loop (in a worker: it may search and download)."""
        return await self.run(self.resolve, module)

    async def codes_of(self, places: Sequence[tuple[Module, int]]) -> list[CodeLookup]:
        """`code` for each (module, address), in one trip to the worker threads."""
        return await self.run(self._codes, places)

    def _codes(self, places: Sequence[tuple[Module, int]]) -> list[CodeLookup]:
        return [self.code(module, address) for module, address in places]

    async def data_of(self, module: Module, address: int) -> DataLookup:
        """`data`, from the event loop: a remembered answer at once, else a worker's."""
        with self._meta:
            known = self._answers.get(("data", module.build_id, address))
        if isinstance(known, DataLookup) and module.build_id:
            return known
        return await self.run(self.data, module, address)

    def _quick(self, module: Module) -> bool:
        """Whether a lookup in `module` can run on the event loop: its files are found and
        its symbols are a GSYM cache entry already open, whose lookups are a binary search
        (tens of microseconds). Handing those to a worker thread cost more than the lookup:
        the answer waited for the interpreter lock to change hands, twice, while the loop
        was busy (the hover's p95 on a large log was 10-25 ms for a 1 ms answer)."""
        from stackmark.symbols.gsym_source import GsymSource

        resolution = self.resolved(module)
        if resolution is None or resolution.binary is None:
            return False
        source = self.symbolizer.opened_source(module)
        if isinstance(source, UpgradableSource):
            source = source.current
        return isinstance(source, GsymSource) and not source.extras_damaged

    def description(self, module: Module) -> str | None:
        """What answers for `module` (e.g. "DWARF in ..."), once its source is open."""
        with self.lock:
            try:
                source = self.symbolizer.source(module)
            except (StackmarkError, OSError):
                return None
            return source.description if source is not None else None

    # -- from the event loop -----------------------------------------------------------

    async def run(self, function: Callable[..., _T], *args: object) -> _T:
        """Run a lookup in the worker threads and wait for it without blocking the loop."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, function, *args)

    def close(self) -> None:
        self.gsym_builds.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        with self.lock:
            self.symbolizer.close()


def symbol_settings(settings: Settings) -> SymbolSettings:
    """The core's settings for the server's: where to look as `stackmark symbolize`
    looks with the same options, GSYM cache entries built in the background, a
    module's name in the log taken as a path worth looking at, and answers kept
    (`_answers` only holds those the event loop may give at once)."""
    return SymbolSettings(
        debug_file_directories=list(settings.debug_file_directories),
        objects=list(settings.objects),
        symbol_paths=list(settings.symbol_paths),
        gsym_paths=list(settings.gsym_paths),
        gsym_cache="background",
        gsym_cache_dir=settings.cache_dir,
        module_names=True,
        cache_size=ANSWERS_KEPT,
    )


class ThreadSafeSymbolizer:
    """`SymbolizerAPI` over a `SymbolService`, for core code run in a worker thread
    (the markup filter that renders the symbolized view)."""

    def __init__(self, service: SymbolService) -> None:
        self.service = service

    def resolve(self, module: Module) -> ModuleResolution:
        return self.service.resolve(module)

    def code(self, module: Module, address: int) -> CodeLookup:
        return self.service.code(module, address)

    def data(self, module: Module, address: int) -> DataLookup:
        return self.service.data(module, address)
