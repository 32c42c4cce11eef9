"""The symbolized views without a server: `Views` over a plain host.

The views are rendered for real (view.render, the core's markup filter), with
the in-memory symbolizer of tests/support/fake_symbolizer.py standing in for
the server's symbol service; the host records what would go to the client.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from lsprotocol import types
from stackmark_lsp import view
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages
from stackmark_lsp.views import Views

from stackmark.demangle import demangle, demangle_symbol
from stackmark.markup.naming import NameOptions, Naming
from stackmark.model import SourceFrame
from tests.lsp.silent_progress import SilentProgress
from tests.support.fake_symbolizer import FakeBinary, FakeSymbolizer

URI = "file:///logs/crash+1.log"
LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
)
CAPABLE = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        text_document_content=types.TextDocumentContentClientCapabilities(dynamic_registration=True)
    )
)


class CountingProgress(SilentProgress):
    def __init__(self) -> None:
        self.titles: list[str] = []

    def begin(self, title: str) -> object:
        self.titles.append(title)
        return title


class Host:
    def __init__(self, capabilities: types.ClientCapabilities = CAPABLE) -> None:
        self.logs: dict[str, OpenLog] = {}
        self.messages = Messages()
        self.naming = Naming(NameOptions(), demangle_name=demangle_symbol, demangle_symbol=demangle)
        self.reporter = CountingProgress()
        binary = FakeBinary("/bin/libcrash.so", code=[(0x1000, 0x1100, [FRAME])])
        self.configuration = SimpleNamespace(service=FakeSymbolizer({"abcd": binary}))
        self.client_capabilities = capabilities
        self.registered: list[list[str]] = []
        self.refreshed: list[str] = []

    async def client_register_capability_async(self, params: types.RegistrationParams) -> None:
        for registration in params.registrations:
            options = registration.register_options
            assert isinstance(options, types.TextDocumentContentRegistrationOptions)
            self.registered.append(list(options.schemes))

    def workspace_text_document_content_refresh(
        self, params: types.TextDocumentContentRefreshParams
    ) -> None:
        self.refreshed.append(params.uri)

    def open(self, text: str = LOG, version: int = 1) -> OpenLog:
        log = self.logs[URI] = OpenLog(URI, text, version, PositionCodec())
        return log


FRAME = SourceFrame(None, "crash_here", "/src/crash.c", 12, 5)


def test_a_view_is_rendered_once_per_version_of_its_log() -> None:
    host = Host()
    views = Views(host)  # type: ignore[arg-type]

    async def main() -> None:
        log = host.open()
        first, again = await asyncio.gather(views.view_of(log), views.view_of(log))
        assert first is again and len(host.reporter.titles) == 1  # one rendering, shared
        assert "crash_here" in first.text and "/src/crash.c:12:5" in first.text
        assert await views.view_of(log) is first  # kept
        log.change(types.TextDocumentContentChangeWholeDocument(text=LOG + "more\n"), 2)
        views.changed(log)
        second = await views.view_of(log)
        assert second is not first and second.version == 2 and second.text.endswith("more\n")
        views.forget_all()  # new settings
        assert await views.view_of(log) is not second
        assert len(host.reporter.titles) == 3
        views.close()

    asyncio.run(main())


def test_a_view_uri_finds_its_log_however_the_file_is_spelled() -> None:
    host = Host()
    views = Views(host)  # type: ignore[arg-type]
    log = host.open()
    shown = view.view_uri(URI)
    assert view.log_uri(shown) != URI  # "+" comes back escaped...
    assert views.log_for(shown) is log  # ...and the log is still found by its path
    assert views.log_for(view.view_uri("file:///logs/other.log")) is None
    assert views.log_for(URI) is None  # not a view
    views.close()


def test_the_client_is_told_of_a_changed_view_it_was_given_once() -> None:
    host = Host()
    views = Views(host)  # type: ignore[arg-type]

    async def main() -> None:
        await views.register_scheme()
        assert host.registered == [[view.SCHEME]] and views.registered
        log = host.open()
        shown = view.view_uri(URI)
        views.changed(log)  # not handed out yet: nothing to tell
        views.refresh_now(URI)
        assert host.refreshed == []
        await views.content(shown)
        views.changed(log)
        views.refresh_now(URI)  # the view is about to be shown: at once, not later
        views.refresh_now(URI)
        assert host.refreshed == [shown]
        views.opened(URI)  # opened again: the client may hold an old copy
        assert host.refreshed == [shown, shown]
        views.close()

    asyncio.run(main())


def test_a_client_that_cannot_register_the_scheme_is_never_asked_to_refresh() -> None:
    host = Host(types.ClientCapabilities())
    views = Views(host)  # type: ignore[arg-type]

    async def main() -> None:
        await views.register_scheme()
        assert host.registered == [] and not views.registered
        log = host.open()
        await views.content(view.view_uri(URI))
        views.changed(log)
        views.opened(URI)
        views.refresh_now(URI)
        assert host.refreshed == []
        views.close()

    asyncio.run(main())
