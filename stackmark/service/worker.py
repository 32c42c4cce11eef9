"""What one service worker process keeps between requests, and the work of a request.

One `Symbolizer` per process (its open modules are its warm state), one
`DebugIdModules` over it for v5 requests, a `Background` pool where module
lookups run past a request's deadline, and a single thread that runs the
requests' CPU work: symbolizing is pure Python, so more threads would only
share one core; worker processes are the way to use more cores.
Everything here is framework-free: `app.py` calls it from its handlers.
"""

from __future__ import annotations

import io
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from stackmark.markup.naming import NameOptions
from stackmark.markup.stream import FilterSettings, filter_streams, make_naming
from stackmark.service.settings import ServiceSettings
from stackmark.service.symbolication_v5 import V5Limits, parse_request, symbolicate
from stackmark.symbols.breakpad_store import BreakpadStore
from stackmark.symbols.cache import default_cache_dir
from stackmark.symbols.deadline import Background, Deadline, DeadlineSymbolizer
from stackmark.symbols.debug_id_modules import DebugIdModules
from stackmark.symbols.setup import SymbolSettings, build_symbolizer

if TYPE_CHECKING:
    from stackmark.symbols.debuginfod import DebuginfodClient


class LookupCounts:
    """Module lookups a request answered from this process' memory, and the others."""

    __slots__ = ("hits", "misses")

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0


class SymbolizeAnswer:
    """What `/symbolize` returns: the output, the exit status, whether cut short."""

    __slots__ = ("body", "partial", "status")

    def __init__(self, body: bytes, status: int, partial: bool) -> None:
        self.body = body
        self.status = status
        self.partial = partial


class WorkerState:
    """The per-process state of a service worker (see the module doc)."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        symbol_settings = SymbolSettings.from_dict(dict(settings.symbols))
        self.symbolizer = build_symbolizer(symbol_settings, self._debuginfod(settings))
        self.naming = make_naming(NameOptions(**settings.names))  # type: ignore[arg-type]
        cache_root = symbol_settings.gsym_cache_dir or str(default_cache_dir())
        breakpad = (
            BreakpadStore(settings.breakpad_stores, cache_root)
            if settings.breakpad_stores
            else None
        )
        self.modules = DebugIdModules(self.symbolizer, breakpad)
        self.background = Background(settings.lookup_threads)
        self.cpu = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stackmark-request")
        self.limits = V5Limits(settings.max_jobs, settings.max_modules, settings.max_frames)

    @staticmethod
    def _debuginfod(settings: ServiceSettings) -> DebuginfodClient | None:
        from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings

        if settings.no_debuginfod:
            return None
        client_settings = DebuginfodSettings.from_environment(
            urls=settings.debuginfod_urls,
            timeout=settings.debuginfod_timeout,
            cache_path=settings.debuginfod_cache,
            offline=settings.offline,
        )
        if not client_settings.urls and not settings.offline:
            return None

        def report(message: str) -> None:
            print(f"stackmark serve: {message}", file=sys.stderr, flush=True)

        return DebuginfodClient(client_settings, report=report, report_failures=True)

    def deadline(self) -> Deadline:
        return Deadline(self.settings.deadline_seconds)

    def symbolicate_v5(
        self, payload: object, deadline: Deadline, counts: LookupCounts
    ) -> dict[str, Any]:
        """The v5 answer (RequestError for a request it refuses)."""
        jobs = parse_request(payload, self.limits)
        for memory_map, _stacks in jobs:
            for name, debug_id in memory_map:
                known, _ = self.modules.known(name, debug_id)
                if known:
                    counts.hits += 1
                elif name and debug_id:
                    counts.misses += 1
        return symbolicate(jobs, self.modules, self.naming, self.background, deadline)

    def symbolize(
        self, log: bytes, json_records: bool, deadline: Deadline, counts: LookupCounts
    ) -> SymbolizeAnswer:
        """What `stackmark symbolize` prints for `log` with the service's options."""
        symbolizer = DeadlineSymbolizer(self.symbolizer, self.background, deadline)
        out = io.BytesIO()
        settings = FilterSettings(json=json_records, color="never")
        status = filter_streams(
            [("<stdin>", io.BytesIO(log))],
            out,
            lambda _text: None,  # diagnostics are the CLI's stderr: not part of the answer
            settings,
            symbolizer,
            self.naming,
        )
        counts.hits += symbolizer.hits
        counts.misses += symbolizer.misses
        return SymbolizeAnswer(out.getvalue(), status, symbolizer.partial)


def error_body(message: str) -> bytes:
    """A JSON error, in the reference service's shape (`{"title": ...}`)."""
    return json.dumps({"title": message}).encode()
