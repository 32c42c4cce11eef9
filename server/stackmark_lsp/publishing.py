"""Publishing diagnostics: when, for which text, and again once modules are found.

Diagnostics are pushed (`textDocument/publishDiagnostics`), never pulled.
problems.py makes them; the `Publisher` decides when they go out:

* nothing before the client's settings are known (`ready`): `initialized`
  publishes every open log then;
* a log's, after it is opened or edited: from the index, or from the
  halves' `Preview` while a large log's second half is still being read
  (split.py), and again only if the whole index disagrees (`outdated`);
* the first crash reports of a large log whose `didOpen` is still arriving
  (head.py, `publish_head`): the whole log's replace them;
* every open log's, again, once the binaries of modules that were not
  looked for yet have been looked for in the background, and after new
  settings (`republish_all`, which also asks the client to refresh its
  inlay hints, code lenses and semantic tokens when it can).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from lsprotocol import types

from stackmark.model import Module
from stackmark_lsp import capabilities, problems
from stackmark_lsp.configuration import Configuration
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.head import Head
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages
from stackmark_lsp.split import Preview
from stackmark_lsp.symbolization import SymbolService

logger = logging.getLogger("stackmark_lsp")  # the server's log lines keep one name
REFRESHED = ("inlay_hint", "code_lens", "semantic_tokens")
"""What the client is asked to refresh after new settings (when it can be)."""


class PublishingHost(Protocol):
    """What the publisher asks of the server."""

    @property
    def ready(self) -> asyncio.Event: ...

    @property
    def logs(self) -> dict[str, OpenLog]: ...

    @property
    def messages(self) -> Messages: ...

    @property
    def codec(self) -> PositionCodec: ...

    @property
    def configuration(self) -> Configuration: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...


class Publisher:
    """The diagnostics of the open logs (see the module docstring)."""

    def __init__(self, host: PublishingHost) -> None:
        self.host = host
        self.records: dict[str, problems.ModuleRecords] = {}
        self.published: dict[str, list[types.Diagnostic]] = {}  # the last, per log
        self.resolving: set[str] = set()  # build IDs being looked for
        self.tasks: set[asyncio.Future[None]] = set()  # the searches, kept alive

    def diagnostics_of(
        self, log: OpenLog, preview: Preview | None = None
    ) -> tuple[list[types.Diagnostic], list[Module]]:
        """(the log's diagnostics, modules whose binary was not looked for yet)."""
        service = self.host.configuration.service
        assert service is not None
        found = problems.markup_diagnostics(log, self.host.messages, preview)
        records = self.records.setdefault(log.uri, problems.ModuleRecords())
        missing, unknown = problems.module_diagnostics(
            log, records, service, self.host.messages, preview
        )
        return found + missing, unknown

    def publish(self, log: OpenLog, preview: Preview | None = None) -> None:
        """Publish the log's diagnostics (from `preview` while its index is being read)."""
        if not self.host.ready.is_set():
            return  # `initialized` publishes every open log once the settings are known
        service = self.host.configuration.service
        assert service is not None
        diagnostics, unknown = self.diagnostics_of(log, preview)
        self.published[log.uri] = diagnostics
        self.host.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=log.uri, diagnostics=diagnostics, version=log.version
            )
        )
        self._look_for(unknown, service)

    def outdated(self, log: OpenLog) -> bool:
        """Whether the diagnostics published last for `log` are not its index's (after a
        publication from a preview)."""
        if not self.host.ready.is_set():
            return False
        return self.diagnostics_of(log)[0] != self.published.get(log.uri)

    def publish_head(self, head: Head) -> None:
        """Publish the diagnostics of the first crash reports of a large log whose
        `didOpen` is still arriving (head.py); the whole log's replace them. Its modules
        start being looked for now."""
        if not self.host.ready.is_set() or head.uri in self.host.logs:
            return
        service = self.host.configuration.service
        assert service is not None
        started = time.perf_counter()
        log = OpenLog(head.uri, head.text, head.version, self.host.codec)
        lines = len(log.document) - 1
        if not log.index.opens_cleanly(lines):
            return  # a multi-line element runs on past the cut
        found = problems.markup_diagnostics(log, self.host.messages)
        missing, unknown = problems.module_diagnostics(
            log, problems.ModuleRecords(), service, self.host.messages
        )
        logger.info(
            "%s: diagnostics of the first %d lines made in %.3f s, published before the "
            "rest of the didOpen message",
            head.uri,
            lines,
            time.perf_counter() - started,
        )
        self.host.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=head.uri, diagnostics=found + missing, version=head.version
            )
        )
        self._look_for(unknown, service)

    def _look_for(self, unknown: list[Module], service: SymbolService) -> None:
        """Look for the binaries of `unknown` modules in the background, then publish the
        diagnostics of every open log again."""
        pending = [m for m in unknown if m.build_id not in self.resolving]
        if pending:
            self.resolving.update(m.build_id for m in pending)
            task = asyncio.ensure_future(self._resolve_then_publish(pending, service))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _resolve_then_publish(self, modules: list[Module], service: SymbolService) -> None:
        await asyncio.gather(*(service.run(service.resolve, m) for m in modules))
        if service is not self.host.configuration.service:
            return  # the settings changed meanwhile; the new service starts over
        for log in list(self.host.logs.values()):
            self.publish(log)

    def republish_all(self) -> None:
        """Publish every open log again and have the client refresh what it shows."""
        for log in self.host.logs.values():
            self.publish(log)
        for name in REFRESHED:
            if capabilities.refreshes(self.host.client_capabilities, name):
                request = getattr(self.host, f"workspace_{name}_refresh")
                request(None)

    def forget_lookups(self) -> None:
        """New services: the modules being looked for will be looked for again."""
        self.resolving.clear()

    def closed(self, uri: str) -> None:
        """The log is closed: forget it, and clear its diagnostics in the client."""
        self.records.pop(uri, None)
        self.published.pop(uri, None)
        self.host.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )
