"""The symbolized-view commands without a server (commands.py), over the fake symbolizer.

In the view of LOG the module is printed with the first line after its
contextual elements (log lines 1 and 2 print nothing of their own, and their
output starts where log line 3's does), and the backtrace frame takes two
view lines (an inlined call, then its caller):

    view 0  [[[reset]]]                            log 0
    view 1  [[[ELF module #0x0 "libcrash.so"; ...  log 3 (and 1, 2)
    view 2  crash #0     #0.1  ... check ...
    view 3      #0    ... main ...
    view 4  after                                  log 4
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from stackmark_lsp import commands, view
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.views import Views

from stackmark.model import SourceFrame
from tests.lsp.test_views import CAPABLE
from tests.lsp.test_views import Host as ViewsHost

URI = "file:///logs/crash.log"
LOG = (
    "{{{reset}}}\n"
    "{{{module:0:libcrash.so:elf:abcd}}}\n"
    "{{{mmap:0x7000:0x2000:load:0:rwx:0x1000}}}\n"
    "crash #0 {{{bt:0:0x7011}}}\n"
    "after\n"
)
CHAIN = [
    SourceFrame(None, "check", "/src/crash.c", 12, 5),
    SourceFrame(None, "main", "/src/crash.c", 30, 3),
]


class Host(ViewsHost):
    def __init__(self, capabilities: types.ClientCapabilities) -> None:
        super().__init__(capabilities)
        self.configuration.service.binaries["abcd"].code = [(0x1000, 0x1100, CHAIN)]
        self.logs[URI] = OpenLog(URI, LOG, 1, PositionCodec())
        self.views = Views(self)  # type: ignore[arg-type]
        self.shown: list[tuple[str, int]] = []
        self.events: list[str] = []

    async def window_show_document_async(
        self, params: types.ShowDocumentParams
    ) -> types.ShowDocumentResult:
        assert params.selection is not None and params.take_focus
        self.shown.append((params.uri, params.selection.start.line))
        self.events.append("show")
        return types.ShowDocumentResult(success=True)

    def workspace_text_document_content_refresh(
        self, params: types.TextDocumentContentRefreshParams
    ) -> None:
        super().workspace_text_document_content_refresh(params)
        self.events.append("refresh")


def test_the_arguments_are_the_log_and_an_optional_line() -> None:
    assert commands.arguments((URI,)) == (URI, 0)
    assert commands.arguments((URI, 3)) == (URI, 3)
    assert commands.arguments((URI, "3")) == (URI, 0)
    for wrong in [(), (3,), (None, 3)]:
        with pytest.raises(ValueError, match="the log's URI"):
            commands.arguments(wrong)


def symbolized(host: Host, line: int, *, with_text: bool) -> dict[str, Any]:
    return asyncio.run(commands.symbolized(host.logs, host.views, URI, line, with_text=with_text))


def test_the_answer_is_where_the_log_line_is_in_the_view() -> None:
    host = Host(CAPABLE)
    host.views.registered = True
    answer = symbolized(host, 4, with_text=False)
    assert answer == {"uri": view.view_uri(URI), "line": 4}
    assert host.views.handed_out == {view.view_uri(URI): URI}
    assert symbolized(host, 3, with_text=False)["line"] == 1
    assert symbolized(host, 2, with_text=False)["line"] == 1
    assert symbolized(host, 0, with_text=False)["line"] == 0
    with_text = symbolized(host, 3, with_text=True)
    assert str(with_text["text"]).splitlines()[3].split()[-3:-1] == ["main", "/src/crash.c:30:3"]
    with pytest.raises(ValueError, match="is not open"):
        asyncio.run(commands.symbolized({}, host.views, URI, 0, with_text=False))
    host.views.close()


def test_a_client_that_cannot_read_views_gets_the_text_in_the_answer() -> None:
    host = Host(types.ClientCapabilities())
    answer = asyncio.run(commands.symbolize(host, URI, 3))  # type: ignore[arg-type]
    assert answer["line"] == 1 and "check /src/crash.c:12:5" in str(answer["text"])
    assert host.shown == []
    host.views.close()


def test_symbolize_shows_the_view_at_the_line_after_an_edit_waiting_to_be_announced() -> None:
    capable = CAPABLE.workspace
    host = Host(
        types.ClientCapabilities(
            workspace=capable,
            window=types.WindowClientCapabilities(
                show_document=types.ShowDocumentClientCapabilities(support=True)
            ),
        )
    )

    async def main() -> dict[str, Any]:
        await host.views.register_scheme()
        await commands.symbolize(host, URI, 0)  # type: ignore[arg-type]
        host.views.changed(host.logs[URI])  # a refresh is pending...
        return await commands.symbolize(host, URI, 4)  # type: ignore[arg-type]

    answer = asyncio.run(main())
    assert "text" not in answer  # the client reads the view itself
    assert host.shown == [(view.view_uri(URI), 0), (view.view_uri(URI), 4)]
    assert host.events == ["show", "refresh", "show"]  # ...and is sent before showing
    host.views.close()
