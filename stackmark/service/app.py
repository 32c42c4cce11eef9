"""The Starlette application of `stackmark serve` (one instance per worker process).

    POST /symbolicate/v5     Mozilla's Symbolication API v5 (JSON in, JSON out)
    POST /symbolize          a markup log in; what `stackmark symbolize` prints out
                             (`?format=json`: its JSON records, one per line)
    GET  /__heartbeat__      200 when the sources and the cache can be used, else 500
    GET  /__lbheartbeat__    200 while the process answers (for load balancers)
    GET  /metrics            Prometheus text format, all workers summed

Every request is treated as hostile: the body is read up to
`max_body_bytes` (413 past it), v5 requests are checked and limited
(400), everything but the heartbeats needs the bearer token when one is
configured (401), and the work runs by the request's deadline (answers
cut short say so: `"partial": true`, or the `X-Stackmark-Partial: 1`
header). Errors are JSON: `{"title": "..."}`, as the reference service
gives them. The CPU work runs on the worker's request thread
(`WorkerState.cpu`), so the event loop keeps answering heartbeats.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from stackmark.service import metrics
from stackmark.service.settings import ServiceSettings
from stackmark.service.symbolication_v5 import RequestError
from stackmark.service.worker import LookupCounts, WorkerState, error_body
from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES

T = TypeVar("T")

GRACE_SECONDS = 5.0
"""How long past its deadline a request may run before the answer is a 503
(the work stops at the deadline; this covers one slow lookup in an open module)."""


class BodyTooLarge(Exception):
    pass


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(error_body(message), status, headers, media_type="application/json")


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refusing more than `limit` bytes before reading them all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(settings: ServiceSettings | None = None) -> Starlette:
    """The application (uvicorn calls this in each worker: `--factory`)."""
    settings = settings or ServiceSettings.from_environment()
    state = WorkerState(settings)
    token = _read_token(settings.token_file)

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip(), token)

    Handler = Callable[[Request], Awaitable[Response]]

    def endpoint(name: str, *, public: bool = False) -> Callable[[Handler], Handler]:
        """Wraps a handler: authentication, body limit, metrics."""

        def wrap(handler: Handler) -> Handler:
            async def run(request: Request) -> Response:
                started = time.perf_counter()
                if not public and not authorized(request):
                    response = _error(
                        401, "a valid bearer token is required", {"WWW-Authenticate": "Bearer"}
                    )
                else:
                    try:
                        response = await handler(request)
                    except BodyTooLarge:
                        response = _error(
                            413, f"request body larger than {settings.max_body_bytes} bytes"
                        )
                metrics.REQUESTS.labels(name, str(response.status_code)).inc()
                metrics.LATENCY.labels(name).observe(time.perf_counter() - started)
                return response

            return run

        return wrap

    async def in_worker_thread(work: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(state.cpu, work)
        return await asyncio.wait_for(future, settings.deadline_seconds + GRACE_SECONDS)

    def count(counts: LookupCounts) -> None:
        if counts.hits:
            metrics.LOOKUPS.labels("hit").inc(counts.hits)
        if counts.misses:
            metrics.LOOKUPS.labels("miss").inc(counts.misses)

    @endpoint("symbolicate_v5")
    async def symbolicate_v5(request: Request) -> Response:
        body = await _read_body(request, settings.max_body_bytes)
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return _error(400, "Payload is not valid JSON")
        deadline = state.deadline()
        counts = LookupCounts()
        try:
            answer = await in_worker_thread(lambda: state.symbolicate_v5(payload, deadline, counts))
        except RequestError as exc:
            return _error(400, str(exc))
        except TimeoutError:
            return _error(503, "the request took too long")
        finally:
            count(counts)
        if answer.get("partial"):
            metrics.PARTIAL.labels("symbolicate_v5").inc()
        return JSONResponse(answer)

    @endpoint("symbolize")
    async def symbolize(request: Request) -> Response:
        form = request.query_params.get("format", "text")
        if form not in ("text", "json"):
            return _error(400, f"format must be text or json, not {form[:40]!r}")
        body = await _read_body(request, settings.max_body_bytes)
        deadline = state.deadline()
        counts = LookupCounts()
        try:
            answer = await in_worker_thread(
                lambda: state.symbolize(body, form == "json", deadline, counts)
            )
        except TimeoutError:
            return _error(503, "the request took too long")
        finally:
            count(counts)
        headers = {"X-Stackmark-Status": str(answer.status)}
        if answer.partial:
            headers["X-Stackmark-Partial"] = "1"
            metrics.PARTIAL.labels("symbolize").inc()
        media = "application/x-ndjson" if form == "json" else "text/plain; charset=utf-8"
        return Response(answer.body, 200, headers, media_type=media)

    @endpoint("heartbeat", public=True)
    async def heartbeat(request: Request) -> Response:
        problems = _problems(settings)
        status = 500 if problems else 200
        return JSONResponse({"status": "error" if problems else "ok", "problems": problems}, status)

    @endpoint("lbheartbeat", public=True)
    async def lbheartbeat(request: Request) -> Response:
        return JSONResponse({})

    @endpoint("metrics")
    async def metrics_page(request: Request) -> Response:
        return Response(metrics.render(), 200, media_type=metrics.CONTENT_TYPE)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "no such endpoint")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, "method not allowed")

    routes = [
        Route("/symbolicate/v5", symbolicate_v5, methods=["POST"]),
        Route("/symbolize", symbolize, methods=["POST"]),
        Route("/__heartbeat__", heartbeat, methods=["GET"]),
        Route("/__lbheartbeat__", lbheartbeat, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})


def _read_token(path: str | None) -> str | None:
    if path is None:
        return None
    token = Path(path).read_text(encoding="utf-8").strip()
    return token or None


def _problems(settings: ServiceSettings) -> list[str]:
    """What stops the service from answering well: unreadable sources, no cache."""
    problems = []
    symbols = settings.symbols
    for key in ("debug_file_directories", "symbol_paths", "gsym_paths"):
        listed = symbols.get(key)
        for directory in listed if isinstance(listed, list) else []:
            if directory in DEFAULT_DEBUG_FILE_DIRECTORIES:
                continue  # looked in when there, as by `stackmark symbolize`
            if not os.path.isdir(directory):
                problems.append(f"{key}: {directory} is not a directory")
    for store in settings.breakpad_stores:
        if not store.startswith(("http://", "https://")) and not os.path.isdir(store):
            problems.append(f"breakpad store {store} is not a directory")
    if not os.access(settings.cache_dir, os.W_OK):
        problems.append(f"cache directory {settings.cache_dir} is not writable")
    return problems
