"""GSYM cache entries built in the background while DWARF answers (the `background` mode).

A long-running front end (the language server) cannot make a lookup wait
the tens of seconds a large module's GSYM conversion takes, nor block the
request that asked. `BackgroundGsymBuilds.factory(cache_dir)` is a
`SourceFactory` that answers at once:

- from the module's GSYM cache entry, when one is built and sound;
- else from the module's DWARF (`elf_source_factory`), wrapped in an
  `UpgradableSource`; if the module has a build ID and debug info, its
  GSYM entry is then built in a background thread (one build at a time),
  and the module's answers switch to it once it is ready. A build that
  fails leaves the DWARF source answering.

    builds = BackgroundGsymBuilds(lock=lookup_lock, watch=progress_for)
    settings = SymbolSettings(gsym_cache="background", gsym_cache_dir=cache_dir)
    symbolizer = build_symbolizer(settings, builds=builds)
    ...
    builds.wait()           # (if need be) until the entries asked for are built
    builds.close()          # no new builds; a build under way is left to finish

`lock` is the lock the caller's lookups hold: the switch happens under it,
so that no lookup is reading the DWARF source when it is closed. `watch`
is given each build's `ModuleFiles` and returns a context manager, entered
for the build, that yields where the conversion's progress goes (the
language server shows it as work-done progress).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any

from stackmark.errors import StackmarkError
from stackmark.model import DataSymbol, SourceFrame

if TYPE_CHECKING:
    from stackmark.formats.gsym.convert import ProgressSink
    from stackmark.symbols.cache import GsymCache
    from stackmark.symbols.source import ModuleFiles, SourceFactory, SymbolSource

BuildWatch = Callable[["ModuleFiles"], AbstractContextManager["ProgressSink | None"]]
"""A module's files -> a context manager held for its build, yielding where the
conversion's progress goes (None: nowhere)."""


def _unwatched(files: ModuleFiles) -> AbstractContextManager[ProgressSink | None]:
    return contextlib.nullcontext(None)


def _nothing() -> None:
    return None


class UpgradableSource:
    """A module's source that starts as DWARF and switches to a GSYM entry once built.

    `current` is the source answering now."""

    def __init__(self, first: SymbolSource) -> None:
        self.current = first

    @property
    def description(self) -> str:
        return self.current.description

    @property
    def has_debug_info(self) -> bool:
        return self.current.has_debug_info

    def frames_at(self, address: int) -> list[SourceFrame]:
        return self.current.frames_at(address)

    def data_at(self, address: int) -> DataSymbol | None:
        return self.current.data_at(address)

    def address_of(self, name: str) -> int | None:
        return self.current.address_of(name)

    def close(self) -> None:
        self.current.close()


class BackgroundGsymBuilds:
    """The `background` GSYM cache mode's source factory and its build thread
    (see the module docstring)."""

    def __init__(
        self,
        *,
        lock: AbstractContextManager[Any] | None = None,
        watch: BuildWatch = _unwatched,
    ) -> None:
        self.lock: AbstractContextManager[Any] = lock if lock is not None else threading.RLock()
        self.watch = watch
        self._closed = False
        self._builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stackmark-gsym")

    def factory(self, cache_dir: str | None) -> SourceFactory:
        """The `SourceFactory` over the GSYM cache in `cache_dir` (None: the default)."""
        return partial(self.source, cache_dir)

    def source(self, cache_dir: str | None, files: ModuleFiles) -> SymbolSource:
        """The module's GSYM entry if one is built, else DWARF at once and a GSYM entry
        built in the background."""
        from stackmark.symbols.cache import GsymCache
        from stackmark.symbols.elf_source import elf_source_factory
        from stackmark.symbols.gsym_source import GsymSource

        cache = GsymCache(cache_dir)
        if files.build_id:
            try:
                entry = cache.validate(files.build_id)
                if entry is not None:
                    return GsymSource(str(entry.gsym), str(entry.extras), files, entry.identity)
            except (StackmarkError, OSError):
                pass
        first = elf_source_factory(files)
        if not files.build_id or not first.has_debug_info or self._closed:
            return first
        source = UpgradableSource(first)
        self._builder.submit(self._build, cache, files, source)
        return source

    def _build(self, cache: GsymCache, files: ModuleFiles, source: UpgradableSource) -> None:
        """Build the module's GSYM entry (background thread), then answer from it."""
        from stackmark.symbols.gsym_source import GsymSource

        if self._closed:
            return
        with self.watch(files) as progress:
            try:
                entry = cache.get_or_build(
                    files.build_id,
                    files.dwarf_file,
                    progress,
                    load_supplementary=files.load_supplementary,
                    load_split=files.load_split,
                )
                gsym = GsymSource(str(entry.gsym), str(entry.extras), files, entry.identity)
            except (StackmarkError, OSError):
                return  # the DWARF source keeps answering
        with self.lock:
            old, source.current = source.current, gsym
        old.close()

    def wait(self) -> None:
        """Return once every build asked for so far has ended (before `close`; for a
        front end that wants its entries before it exits). Builds run one at a time,
        in order, so a task queued now runs after them."""
        self._builder.submit(_nothing).result()

    def close(self) -> None:
        """Start no more builds (those queued are dropped; one under way finishes)."""
        self._closed = True
        self._builder.shutdown(wait=False, cancel_futures=True)
