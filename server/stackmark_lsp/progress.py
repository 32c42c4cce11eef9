"""Work-done progress towards the client, callable from any thread.

The symbolizer's worker threads report while they download, index or
convert; LSP wants each token created (`window/workDoneProgress/create`,
a request the client answers) before `begin`, and `begin` before any
`report`. Everything is therefore funnelled onto the event loop and
queued per token until its `create` has been answered. Clients that do
not support server-initiated progress get nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)


class _Token:
    __slots__ = ("queue", "started", "title")

    def __init__(self, title: str) -> None:
        self.title = title
        self.started = False
        self.queue: list[types.WorkDoneProgressReport | types.WorkDoneProgressEnd] = []


class ClientProgress:
    """`ProgressSink` (see symbolization.py) over the client's work-done progress."""

    def __init__(
        self,
        server: LanguageServer,
        loop: asyncio.AbstractEventLoop,
        enabled: bool,
        done_message: str = "done",
    ) -> None:
        self.server = server
        self.loop = loop
        self.enabled = enabled
        self.done_message = done_message
        self._tokens: dict[str, _Token] = {}
        self._tasks: set[asyncio.Future[None]] = set()
        self._numbers = itertools.count(1)

    def begin(self, title: str) -> object:
        token = f"stackmark/{next(self._numbers)}"
        if self.enabled:
            self._soon(self._begin, token, title)
        return token

    def report(self, handle: object, message: str, percentage: int | None = None) -> None:
        if self.enabled:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage)
            self._soon(self._send, str(handle), value)

    def end(self, handle: object) -> None:
        if self.enabled:
            self._soon(
                self._send, str(handle), types.WorkDoneProgressEnd(message=self.done_message)
            )

    # -- on the event loop ---------------------------------------------------------------

    def _soon(self, function: Callable[..., object], *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: the server is going away
            self.loop.call_soon_threadsafe(function, *args)

    def _begin(self, token: str, title: str) -> None:
        self._tokens[token] = _Token(title)
        task = asyncio.ensure_future(self._create(token))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _create(self, token: str) -> None:
        state = self._tokens[token]
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception:  # the client refused: keep quiet about this token
            logger.debug("progress token %s refused", token, exc_info=True)
            del self._tokens[token]
            return
        self.server.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=state.title, percentage=0)
        )
        state.started = True
        for value in state.queue:
            self._deliver(token, value)
        state.queue.clear()

    def _send(
        self, token: str, value: types.WorkDoneProgressReport | types.WorkDoneProgressEnd
    ) -> None:
        state = self._tokens.get(token)
        if state is None:
            return
        if not state.started:
            state.queue.append(value)
            return
        self._deliver(token, value)

    def _deliver(
        self, token: str, value: types.WorkDoneProgressReport | types.WorkDoneProgressEnd
    ) -> None:
        if isinstance(value, types.WorkDoneProgressEnd):
            self.server.work_done_progress.end(token, value)
            self._tokens.pop(token, None)
        else:
            self.server.work_done_progress.report(token, value)
