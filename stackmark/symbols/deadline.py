"""Answers by a deadline: slow module lookups go on in the background.

A service must answer each request in bounded time, even when a symbol
server is slow or a large module's GSYM entry is being built. Finding and
opening a module (local search, debuginfod download, GSYM build) is the
only slow step; it runs on a `Background` thread, and a request waits for
it only until its `Deadline`. When time is up the request is answered
without that module (its frames unsymbolized, the answer marked partial)
while the work goes on: the next request that needs the module finds it
ready. Lookups in an open module are quick and run in the caller's
thread, until the deadline; after it, every answer is empty, so that a
request's CPU time is bounded too.

    background = Background(threads=4)
    symbolizer = DeadlineSymbolizer(build_symbolizer(settings), background, Deadline(5.0))
    ... symbolizer.code(module, address) ...
    if symbolizer.partial: ...   # some answers were cut short
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from stackmark.model import Module
from stackmark.symbols.api import CodeLookup, DataLookup, Failure, ModuleResolution, Reason
from stackmark.symbols.symbolizer import Symbolizer

T = TypeVar("T")

TIMED_OUT = Failure(Reason.STILL_LOADING)
"""The resolution failure of a module not ready by the deadline."""
DEADLINE_PASSED = Failure(Reason.DEADLINE_PASSED)


class Deadline:
    """A point in time (monotonic clock) a request must be answered by."""

    __slots__ = ("end",)

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def passed(self) -> bool:
        return time.monotonic() >= self.end


class Background:
    """Slow work keyed by what it makes: one run per key at a time, however many
    requests wait for it (the first starts it, the others wait on the same run).

    The threads are daemon threads: a process that is told to stop does not wait
    for a download from a server that hangs."""

    def __init__(self, threads: int = 4) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[object], Callable[[], object]]] = (
            queue.SimpleQueue()
        )
        self._running: dict[Hashable, Future[object]] = {}
        self._lock = threading.Lock()
        for number in range(threads):
            name = f"stackmark-lookup-{number}"
            threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            future, work = self._queue.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to the waiting requests
                future.set_exception(exc)

    def wait(
        self, key: Hashable, work: Callable[[], T], deadline: Deadline
    ) -> tuple[bool, T | None]:
        """(True, result) when `work` for `key` is done by the deadline; (False, None)
        when it is still running then (it goes on). Exceptions from `work` propagate."""
        with self._lock:
            future = self._running.get(key)
            if future is None:
                future = Future()
                self._running[key] = future
                self._queue.put((future, work))
                future.add_done_callback(lambda _f, key=key: self._forget(key))  # type: ignore[misc]
        try:
            return True, future.result(timeout=deadline.remaining())  # type: ignore[return-value]
        except FutureTimeout:
            return False, None

    def _forget(self, key: Hashable) -> None:
        # The result lives on in the caller's caches (the Symbolizer keeps its modules).
        with self._lock:
            self._running.pop(key, None)


class DeadlineSymbolizer:
    """A `SymbolizerAPI` over a `Symbolizer` that answers by `deadline` (module doc).

    `partial` is True once some answer was cut short; `timed_out` names the
    modules (build IDs) that were not ready in time. `hits` counts the modules
    that were open already when first asked for, `misses` the others."""

    def __init__(self, symbolizer: Symbolizer, background: Background, deadline: Deadline) -> None:
        self.symbolizer = symbolizer
        self.background = background
        self.deadline = deadline
        self.timed_out: set[str] = set()
        self.partial = False
        self.hits = self.misses = 0
        self._seen: set[tuple[str, str | None]] = set()

    def _ready(self, module: Module) -> Failure | None:
        """None when `module` can be asked now; else why not."""
        if self.deadline.passed():
            self.partial = True
            return DEADLINE_PASSED
        name = (module.build_id.lower(), None if module.build_id else module.path)
        opened = self.symbolizer.opened_source(module) is not None
        if name not in self._seen:
            self._seen.add(name)
            if opened:
                self.hits += 1
            else:
                self.misses += 1
        if opened:
            return None
        key = ("module", *name)
        done, _ = self.background.wait(key, lambda: self.symbolizer.source(module), self.deadline)
        if done:
            return None
        self.partial = True
        self.timed_out.add(module.build_id.lower() or (module.path or module.name))
        return TIMED_OUT

    def _unanswered(self, module: Module, why: Failure) -> ModuleResolution:
        return ModuleResolution(module.build_id.lower(), None, why)

    def resolve(self, module: Module) -> ModuleResolution:
        why = self._ready(module)
        return self.symbolizer.resolve(module) if why is None else self._unanswered(module, why)

    def code(self, module: Module, address: int) -> CodeLookup:
        why = self._ready(module)
        if why is None:
            return self.symbolizer.code(module, address)
        return CodeLookup(self._unanswered(module, why), address, [])

    def data(self, module: Module, address: int) -> DataLookup:
        why = self._ready(module)
        if why is None:
            return self.symbolizer.data(module, address)
        return DataLookup(self._unanswered(module, why), address, None)
