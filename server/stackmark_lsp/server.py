"""`stackmark lsp`: the language server's handlers, its state, and `serve()`.

A handler finds the open log, asks the module that knows, and converts the
answer for LSP (the shape of jedi-language-server's server.py). Where each
thing is known:

    the log         logs.py (`OpenLog`: text, index, positions, edits) over
                    document.py (chunks), index.py and scan.py (what each line
                    holds), epochs.py (each crash report's modules and mappings)
    opening it      opening.py (`open_log`: one pass, or two halves at once,
                    split.py; the entries left out filled in later), head.py
                    (the first crash reports of a didOpen still arriving)
    diagnostics     problems.py makes them; publishing.py (`Publisher`) sends
                    them, and again once modules were looked for
    settings        settings.py parses them; configuration.py (`Configuration`)
                    keeps them and the symbol services made from them
    symbols         symbolization.py (`SymbolService`, worker threads, so that
                    requests are answered while a binary is indexed),
                    navigation_service.py; the features ask lookups.py's protocols
    features        hover.py, navigation.py (definitions, links), hints.py,
                    tokens.py, outline.py (symbols, code lenses)
    the view        view.py (one view's text), views.py (`Views`: kept per log,
                    refreshed in the client), commands.py (the symbolize commands)
    the client      capabilities.py (what it can do), progress.py (work-done
                    progress), messages.py (English and Japanese)
    plumbing        transport.py (how messages travel: document sync, large
                    answers, the stdin pipe), memory.py (when the GC runs),
                    command.py (the command line that calls `serve`)
"""

from __future__ import annotations

import asyncio
import functools
import io
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from stackmark.demangle import demangle, demangle_symbol
from stackmark.markup.naming import NameOptions, Naming
from stackmark_lsp import (
    __version__,
    capabilities,
    commands,
    navigation,
    opening,
    outline,
    tokens,
)
from stackmark_lsp.configuration import Configuration
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.head import parse_head
from stackmark_lsp.hints import inlay_hints
from stackmark_lsp.hover import HoverBuilder
from stackmark_lsp.logs import OpenLog, uri_to_path
from stackmark_lsp.memory import release_closed
from stackmark_lsp.messages import Messages
from stackmark_lsp.progress import ClientProgress
from stackmark_lsp.publishing import Publisher
from stackmark_lsp.transport import HeadFirstInput, StackmarkProtocol, widen_pipe
from stackmark_lsp.views import Views

logger = logging.getLogger("stackmark_lsp")

_Handler = TypeVar("_Handler", bound=Callable[..., Awaitable[Any]])


class StackmarkServer(LanguageServer):
    """The server's state: the open logs and the parts that know (see the module
    docstring), with what they share (the client's language, positions' encoding,
    the naming of frames, progress, whether the settings are known yet)."""

    def __init__(self) -> None:
        super().__init__(
            "stackmark",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=StackmarkProtocol,
        )
        self.logs: dict[str, OpenLog] = {}
        self.messages = Messages()
        self.codec = PositionCodec()
        self.naming = Naming(NameOptions(), demangle_name=demangle_symbol, demangle_symbol=demangle)
        self.reporter: ClientProgress | None = None  # made at `initialize`
        # Set once the client's configuration is known (requests wait for it, so that
        # nothing is answered with the defaults the settings are about to replace).
        self.ready = asyncio.Event()
        self.configuration = Configuration(self)
        self.publisher = Publisher(self)
        self.views = Views(self)
        self.configuration.rebuilt += [self.views.forget_all, self.publisher.forget_lookups]

    def loop_call(self, function: Callable[..., object], *args: object) -> None:
        """Call `function` on the event loop: now if this is its thread, else soon."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # another thread: no loop runs here
            self._loop.call_soon_threadsafe(function, *args)
            return
        function(*args)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        assert self.reporter is not None
        return self.reporter.loop


server = StackmarkServer()


def guarded(default: Callable[[], object]) -> Callable[[_Handler], _Handler]:
    """Answer `default()` instead of failing when a handler meets something unexpected
    (the traceback goes to the log): one odd log must not take the server down."""

    def wrap(handler: _Handler) -> _Handler:
        @functools.wraps(handler)
        async def run(ls: StackmarkServer, params: Any) -> object:
            await ls.ready.wait()
            for attempt in (1, 2):
                try:
                    return await handler(ls, params)
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is None or task.cancelling():
                        raise  # the client cancelled the request (or the server stops)
                    # New settings closed the symbolizer this request was waiting on
                    # (its pool cancels what it had queued): ask the new one, once.
                    if attempt == 2:
                        return default()
                except Exception:
                    logger.exception("%s failed", handler.__name__)
                    return default()
            return default()

        return cast(_Handler, run)

    return wrap


def _log(ls: StackmarkServer, uri: str) -> OpenLog | None:
    return ls.logs.get(uri)


# -- lifecycle -----------------------------------------------------------------------


@server.feature(types.INITIALIZE)
def initialize(ls: StackmarkServer, params: types.InitializeParams) -> None:
    ls.messages = Messages(params.locale)
    ls.configuration.initialization_options = params.initialization_options
    ls.configuration.root = uri_to_path(params.root_uri) if params.root_uri else params.root_path
    ls.reporter = ClientProgress(
        ls,
        asyncio.get_event_loop(),
        capabilities.work_done_progress(params.capabilities),
        ls.messages("progress.done"),
    )
    ls.configuration.apply()
    # A client that never says `initialized` still gets answers, with these settings.
    asyncio.get_event_loop().call_later(30, ls.ready.set)


@server.feature(types.INITIALIZED)
async def initialized(ls: StackmarkServer, params: types.InitializedParams) -> None:
    encoding = ls.workspace.position_encoding
    ls.codec.encoding = str(getattr(encoding, "value", encoding) or "utf-16")
    await ls.views.register_scheme()
    await ls.configuration.pull()
    ls.configuration.apply()
    ls.ready.set()
    ls.publisher.republish_all()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def configuration_changed(
    ls: StackmarkServer, params: types.DidChangeConfigurationParams
) -> None:
    ls.configuration.take_pushed(params.settings)  # older clients push the section along
    await ls.configuration.pull()
    if ls.configuration.apply():
        ls.publisher.republish_all()


@server.feature(types.SHUTDOWN)
def shutdown(ls: StackmarkServer, params: None) -> None:
    ls.configuration.close()
    ls.views.close()


# -- documents -------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: StackmarkServer, params: types.DidOpenTextDocumentParams) -> None:
    log = opening.open_log(params.text_document, ls.codec, ls.logs, ls.publisher)
    opening.complete_in_background(log, ls.logs)
    ls.views.opened(log.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: StackmarkServer, params: types.DidChangeTextDocumentParams) -> None:
    log = ls.logs.get(params.text_document.uri)
    if log is None:
        return
    log.edit(params.content_changes, params.text_document.version)
    ls.views.changed(log)
    ls.publisher.publish(log)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: StackmarkServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.logs.pop(uri, None)
    ls.views.closed(uri)
    ls.publisher.closed(uri)
    release_closed()


# -- features ------------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_HOVER)
@guarded(lambda: None)
async def hover(ls: StackmarkServer, params: types.HoverParams) -> types.Hover | None:
    log, service = _log(ls, params.text_document.uri), ls.configuration.service
    if log is None or service is None:
        return None
    target = log.target(params.position)
    if target is None:
        return None
    settings = ls.configuration.settings
    built = await HoverBuilder(log, service, ls.naming, ls.messages, settings).build(target)
    if capabilities.markdown_hovers(ls.client_capabilities):
        contents = types.MarkupContent(kind=types.MarkupKind.Markdown, value=built.markdown())
    else:
        contents = types.MarkupContent(kind=types.MarkupKind.PlainText, value=built.plaintext())
    return types.Hover(contents=contents, range=log.element_range(target.element))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
@guarded(lambda: None)
async def definition(
    ls: StackmarkServer, params: types.DefinitionParams
) -> list[types.LocationLink] | list[types.Location] | None:
    log, lookups = _log(ls, params.text_document.uri), ls.configuration.navigation
    if log is None or lookups is None:
        return None
    target = log.target(params.position)
    if target is None:
        return None
    line, column = log.to_index(params.position)
    found = await navigation.Navigator(log, lookups).definition(target, line, column)
    if capabilities.location_links(ls.client_capabilities):
        return found
    return [
        types.Location(uri=link.target_uri, range=link.target_selection_range) for link in found
    ]


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
@guarded(lambda: [])
async def inlay_hint(ls: StackmarkServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    log, service = _log(ls, params.text_document.uri), ls.configuration.service
    if log is None or service is None:
        return []
    first, stop = params.range.start.line, params.range.end.line + 1
    return await inlay_hints(log, service, ls.naming, first, stop)


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, tokens.LEGEND)
@guarded(lambda: types.SemanticTokens(data=[]))
async def semantic_tokens_full(
    ls: StackmarkServer, params: types.SemanticTokensParams
) -> types.SemanticTokens:
    log = _log(ls, params.text_document.uri)
    if log is None:
        return types.SemanticTokens(data=[])
    return types.SemanticTokens(data=tokens.encode(log, 0, len(log.document)))


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, tokens.LEGEND)
@guarded(lambda: types.SemanticTokens(data=[]))
async def semantic_tokens_range(
    ls: StackmarkServer, params: types.SemanticTokensRangeParams
) -> types.SemanticTokens:
    log = _log(ls, params.text_document.uri)
    if log is None:
        return types.SemanticTokens(data=[])
    first, stop = params.range.start.line, params.range.end.line + 1
    return types.SemanticTokens(data=tokens.encode(log, first, stop))


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
@guarded(lambda: [])
async def document_symbol(
    ls: StackmarkServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    log = _log(ls, params.text_document.uri)
    return outline.document_symbols(log, ls.messages) if log is not None else []


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
@guarded(lambda: [])
async def document_link(
    ls: StackmarkServer, params: types.DocumentLinkParams
) -> list[types.DocumentLink]:
    log, sources = _log(ls, params.text_document.uri), ls.configuration.sources
    if log is None or sources is None:
        return []
    tooltips = capabilities.link_tooltips(ls.client_capabilities)
    return navigation.links(log, sources.local, ls.messages, tooltips)


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
@guarded(lambda: [])
async def code_lens(ls: StackmarkServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    log = _log(ls, params.text_document.uri)
    if log is None:
        return []
    return outline.code_lenses(log, ls.messages, commands.SYMBOLIZE)


@server.feature(types.WORKSPACE_TEXT_DOCUMENT_CONTENT)
async def text_document_content(
    ls: StackmarkServer, params: types.TextDocumentContentParams
) -> dict[str, object]:
    await ls.ready.wait()
    shown = await ls.views.content(params.uri)
    # TextDocumentContentResult's shape, as a plain object: its text is written out
    # piece by piece when the answer is sent (`StackmarkProtocol._send_data`).
    return {"text": shown.large_text()}


@server.command(commands.SYMBOLIZE)
async def symbolize_command(ls: StackmarkServer, *arguments: Any) -> dict[str, Any]:
    """Open the symbolized view (at the backtrace of `line`): [uri, line?]."""
    await ls.ready.wait()
    return await commands.symbolize(ls, *commands.arguments(arguments))


@server.command(commands.SYMBOLIZED_TEXT)
async def symbolized_text_command(ls: StackmarkServer, *arguments: Any) -> dict[str, Any]:
    """The symbolized text of a log, for clients without virtual documents: [uri, line?]."""
    await ls.ready.wait()
    uri, line = commands.arguments(arguments)
    return await commands.symbolized(ls.logs, ls.views, uri, line, with_text=True)


def serve() -> None:
    """Serve over stdio until the client says exit."""
    widen_pipe(sys.stdin)
    stdin = HeadFirstInput(cast(io.BufferedIOBase, sys.stdin.buffer), _head_arrived)
    server.start_io(stdin=cast(Any, stdin))


def _head_arrived(start: bytes) -> None:
    """The first bytes of a large message (on the reading thread): if it opens a log,
    have the loop publish its first crash reports' diagnostics."""
    if server.ready.is_set() and (head := parse_head(start)) is not None:
        server.loop_call(server.publisher.publish_head, head)
