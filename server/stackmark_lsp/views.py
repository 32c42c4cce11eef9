"""The symbolized views handed out to the client, and keeping them current.

view.py makes one view (the text and its line map) and names its URI;
`Views` keeps, for the open logs, the views made (one per log, until the
log changes), renders them one at a time in a worker thread of its own,
with work-done progress, so that a request for a view that is being
rendered waits for that rendering rather than starting another. It
remembers which view URIs the client was given, and tells the client
when one of those is out of date (`workspace/textDocumentContent/refresh`):
half a second after the last edit of its log, at once when the view is
about to be shown, and when its log is opened again. The view's scheme is
registered with the client at `initialized`, when the client can take it
(`register_scheme`): without that, the views go out as text in the
commands' answers (commands.py).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from lsprotocol import types

from stackmark.markup.naming import Naming
from stackmark_lsp import capabilities, view
from stackmark_lsp.configuration import Configuration
from stackmark_lsp.logs import OpenLog, uri_to_path
from stackmark_lsp.messages import Messages
from stackmark_lsp.symbolization import ProgressSink

logger = logging.getLogger("stackmark_lsp")  # the server's log lines keep one name
REFRESH_DELAY = 0.5  # seconds after an edit before the client is told the view changed
REGISTRATION_ID = "stackmark-symbolized-view"


class ViewsHost(Protocol):
    """What the views ask of the server."""

    @property
    def logs(self) -> dict[str, OpenLog]: ...

    @property
    def messages(self) -> Messages: ...

    @property
    def naming(self) -> Naming: ...

    @property
    def reporter(self) -> ProgressSink | None: ...

    @property
    def configuration(self) -> Configuration: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    async def client_register_capability_async(self, params: types.RegistrationParams) -> None: ...

    def workspace_text_document_content_refresh(
        self, params: types.TextDocumentContentRefreshParams
    ) -> object: ...


class Views:
    """The views of the open logs (see the module docstring)."""

    def __init__(self, host: ViewsHost) -> None:
        self.host = host
        self.registered = False  # the client takes `workspace/textDocumentContent`
        self.made: dict[str, view.View] = {}  # log URI -> its view, while current
        self.rendering: dict[str, tuple[int, asyncio.Future[view.View]]] = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stackmark-view")
        self.handed_out: dict[str, str] = {}  # view URI -> log URI, for the views handed out
        self._refreshes: dict[str, asyncio.TimerHandle] = {}  # log URI -> pending refresh

    async def register_scheme(self) -> None:
        """Have the client ask for the views' text (`workspace/textDocumentContent`), when
        it can take the registration (pygls does not announce the capability itself)."""
        if not capabilities.content_registration(self.host.client_capabilities):
            return
        try:
            await self.host.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id=REGISTRATION_ID,
                            method=types.WORKSPACE_TEXT_DOCUMENT_CONTENT,
                            register_options=types.TextDocumentContentRegistrationOptions(
                                schemes=[view.SCHEME]
                            ),
                        )
                    ]
                )
            )
            self.registered = True
        except Exception:
            logger.warning("the client refused the symbolized view's scheme", exc_info=True)

    # -- making views ------------------------------------------------------------------

    async def view_of(self, log: OpenLog) -> view.View:
        """The log's view: the one made for its version, or the rendering under way."""
        known = self.made.get(log.uri)
        if known is not None and known.version == log.version:
            return known
        version, running = self.rendering.get(log.uri, (None, None))
        if running is None or version != log.version or running.done():
            running = asyncio.ensure_future(self._render(log))
            self.rendering[log.uri] = (log.version, running)
        return await asyncio.shield(running)

    async def _render(self, log: OpenLog) -> view.View:
        service, progress = self.host.configuration.service, self.host.reporter
        assert service is not None and progress is not None
        messages = self.host.messages
        pieces, version = [chunk.text for chunk in log.document.chunks], log.version
        handle = progress.begin(messages("progress.symbolize", name=log.name))

        def report(done: int, total: int) -> None:
            message = messages("progress.lines", done=done, total=total)
            progress.report(handle, message, int(100 * done / max(total, 1)))

        try:
            loop = asyncio.get_running_loop()
            rendered = await loop.run_in_executor(
                self.pool,
                functools.partial(view.render, pieces, version, service, self.host.naming, report),
            )
        finally:
            progress.end(handle)
        if log.version == version and self.host.logs.get(log.uri) is log:
            self.made[log.uri] = rendered
        return rendered

    async def content(self, uri: str) -> view.View:
        """The view at view URI `uri`, for the client that asks for its text."""
        log = self.log_for(uri)
        if log is None:
            raise ValueError(f"no open log for {uri}")
        self.handed_out[uri] = log.uri
        return await self.view_of(log)

    def log_for(self, uri: str) -> OpenLog | None:
        """The open log a view URI shows (the file may be spelled another way)."""
        original = self.handed_out.get(uri) or view.log_uri(uri)
        if original is None:
            return None
        found = self.host.logs.get(original)
        if found is not None:
            return found
        wanted = uri_to_path(original)
        for log in self.host.logs.values():  # the same file, spelled differently
            if wanted is not None and log.path == wanted:
                return log
        return None

    # -- keeping the client's copy current ------------------------------------------------

    def changed(self, log: OpenLog) -> None:
        """After an edit: the view is stale; tell a client showing it, once things settle."""
        self.made.pop(log.uri, None)
        uri = view.view_uri(log.uri)
        if uri not in self.handed_out or not self.registered:
            return
        handle = self._refreshes.pop(log.uri, None)
        if handle is not None:
            handle.cancel()
        self._refreshes[log.uri] = asyncio.get_running_loop().call_later(
            REFRESH_DELAY, self.refresh_now, log.uri
        )

    def refresh_now(self, log_uri: str) -> None:
        """Send the refresh `changed` scheduled for the log's view, now (the timer's end,
        or the view is about to be shown: a client that still holds the old text would
        show it, one edit behind)."""
        handle = self._refreshes.pop(log_uri, None)
        if handle is None:
            return  # nothing pending: the client was told, or nothing changed
        handle.cancel()
        self.host.workspace_text_document_content_refresh(
            types.TextDocumentContentRefreshParams(uri=view.view_uri(log_uri))
        )

    def opened(self, log_uri: str) -> None:
        """The log is open (again): a client may hold its view from before it was closed
        (or a request for it failed while it was closed): have it read the view again."""
        shown = view.view_uri(log_uri)
        if self.registered and shown in self.handed_out:
            self.host.workspace_text_document_content_refresh(
                types.TextDocumentContentRefreshParams(uri=shown)
            )

    def closed(self, log_uri: str) -> None:
        self.made.pop(log_uri, None)

    def forget_all(self) -> None:
        """New services: the views made by the old ones are made again when asked."""
        self.made.clear()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
