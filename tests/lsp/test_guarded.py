"""Requests caught by a settings change: `guarded` asks the new symbolizer once.

New settings close the old symbolizer, whose thread pool cancels the work it
had queued; a request awaiting that work saw CancelledError, and pygls sent
the client "request cancelled" for a request nobody cancelled (the flaky
`test_configuration_changes_take_effect`). The real pools and futures are used
here; only the server object is a stand-in with the one attribute `guarded`
reads.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from threading import Event
from typing import Any

import pytest
from stackmark_lsp.server import guarded


class FakeServer:
    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.ready.set()
        self.pool = ThreadPoolExecutor(max_workers=1)


def test_work_cancelled_by_a_closed_pool_is_asked_again() -> None:
    calls: list[int] = []

    async def handler(ls: FakeServer, params: Any) -> object:
        calls.append(1)
        if len(calls) == 1:
            blocker = Event()
            ls.pool.submit(blocker.wait)  # keeps the worker busy: the next job stays queued
            queued = asyncio.wrap_future(ls.pool.submit(lambda: "old"))
            ls.pool.shutdown(wait=False, cancel_futures=True)  # what new settings do
            blocker.set()
            ls.pool = ThreadPoolExecutor(max_workers=1)
            return await queued
        return await asyncio.wrap_future(ls.pool.submit(lambda: "new"))

    answer = asyncio.run(guarded(lambda: "default")(handler)(FakeServer(), None))  # type: ignore[arg-type]
    assert (answer, len(calls)) == ("new", 2)


def test_a_request_the_client_cancels_stays_cancelled() -> None:
    async def handler(ls: FakeServer, params: Any) -> object:
        await asyncio.sleep(10)
        return "late"

    async def main() -> None:
        task = asyncio.ensure_future(guarded(lambda: None)(handler)(FakeServer(), None))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
