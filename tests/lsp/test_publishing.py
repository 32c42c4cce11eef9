"""When diagnostics go out, without a server: `Publisher` over a plain host.

The host records each publication; the symbol service is the real one, with
no place to look in, so every module's binary is missing (found missing in
the background, as in the server).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from lsprotocol import types
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.head import Head
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages
from stackmark_lsp.publishing import Publisher
from stackmark_lsp.settings import Settings
from stackmark_lsp.symbolization import SymbolService

from tests.lsp.silent_progress import SilentProgress

URI = "file:///logs/crash.log"
LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
)


class Host:
    def __init__(self, cache: Path, capabilities: types.ClientCapabilities) -> None:
        self.ready = asyncio.Event()
        self.ready.set()
        self.logs: dict[str, OpenLog] = {}
        self.messages = Messages()
        self.codec = PositionCodec()
        service = SymbolService(Settings(cache_dir=str(cache)), SilentProgress(), self.messages)
        self.configuration = SimpleNamespace(service=service)
        self.client_capabilities = capabilities
        self.sent: list[tuple[str, int | None, list[str]]] = []  # (uri, version, codes)
        self.refreshed: list[str] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        codes = [str(diagnostic.code) for diagnostic in params.diagnostics]
        self.sent.append((params.uri, params.version, codes))

    def workspace_inlay_hint_refresh(self, params: None) -> None:
        self.refreshed.append("inlay_hint")

    def workspace_code_lens_refresh(self, params: None) -> None:
        self.refreshed.append("code_lens")

    def open(self, text: str, version: int = 1) -> OpenLog:
        log = self.logs[URI] = OpenLog(URI, text, version, self.codec)
        return log


async def searches_done(publisher: Publisher) -> None:
    while publisher.tasks:
        await asyncio.gather(*list(publisher.tasks))


def test_a_log_is_published_again_once_its_modules_were_looked_for(tmp_path: Path) -> None:
    host = Host(tmp_path, types.ClientCapabilities())
    publisher = Publisher(host)  # type: ignore[arg-type]

    async def main() -> None:
        publisher.publish(host.open(LOG))
        publisher.publish(host.logs[URI])
        assert host.sent == [(URI, 1, [])] * 2  # not looked for yet: no warning
        assert len(publisher.tasks) == 1  # one search under way for the module
        await searches_done(publisher)
        assert host.sent[2] == (URI, 1, ["no-symbols"])
        publisher.publish(host.logs[URI])  # looked for once per build ID
        assert not publisher.tasks and host.sent[3] == (URI, 1, ["no-symbols"])
        host.configuration.service.close()

    asyncio.run(main())


def test_nothing_is_published_before_the_settings_are_known(tmp_path: Path) -> None:
    host = Host(tmp_path, types.ClientCapabilities())
    host.ready.clear()
    publisher = Publisher(host)  # type: ignore[arg-type]
    publisher.publish(host.open(LOG))
    publisher.publish_head(Head("file:///logs/other.log", 1, LOG))
    assert host.sent == [] and not publisher.outdated(host.logs[URI])
    host.configuration.service.close()


def test_only_a_log_still_arriving_gets_its_first_crash_reports_published(
    tmp_path: Path,
) -> None:
    host = Host(tmp_path, types.ClientCapabilities())
    publisher = Publisher(host)  # type: ignore[arg-type]

    async def main() -> None:
        arriving = "file:///logs/arriving.log"
        publisher.publish_head(Head(arriving, 3, LOG + "{{{bt:1:0x9}}}\n"))
        assert host.sent == [(arriving, 3, ["no-mmap"])]
        publisher.publish_head(Head(arriving, 4, LOG + "{{{hexdict:\n"))  # open at the cut
        host.open(LOG)
        publisher.publish_head(Head(URI, 2, LOG))  # the whole log is in already
        assert len(host.sent) == 1
        await searches_done(publisher)
        host.configuration.service.close()

    asyncio.run(main())


def test_an_edited_log_is_outdated_until_published_again(tmp_path: Path) -> None:
    host = Host(tmp_path, types.ClientCapabilities())
    publisher = Publisher(host)  # type: ignore[arg-type]

    async def main() -> None:
        log = host.open(LOG)
        publisher.publish(log)
        await searches_done(publisher)
        assert not publisher.outdated(log)
        log.change(types.TextDocumentContentChangeWholeDocument(text=LOG + "{{{bt:1:0x9}}}\n"), 2)
        assert publisher.outdated(log)
        publisher.publish(log)
        assert not publisher.outdated(log)
        publisher.closed(URI)
        assert host.sent[-1] == (URI, None, [])
        host.configuration.service.close()

    asyncio.run(main())


def test_new_settings_publish_every_log_and_refresh_what_the_client_can(tmp_path: Path) -> None:
    workspace = types.WorkspaceClientCapabilities(
        inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True),
        code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=False),
    )
    host = Host(tmp_path, types.ClientCapabilities(workspace=workspace))
    publisher = Publisher(host)  # type: ignore[arg-type]

    async def main() -> None:
        host.open(LOG)
        publisher.republish_all()
        assert [uri for uri, _, _ in host.sent] == [URI]
        assert host.refreshed == ["inlay_hint"]
        await searches_done(publisher)
        host.configuration.service.close()

    asyncio.run(main())
