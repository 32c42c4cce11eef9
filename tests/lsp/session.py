"""A language-server session for tests: the real server over stdio, driven by pytest-lsp's client.

`Session` starts `python -m stackmark lsp` with a private cache directory,
initializes it with the capabilities of a capable editor (markdown
hovers, location links, work-done progress, configuration, virtual
documents) and offers small helpers for the requests the tests make.
Waiting is on conditions (a diagnostics notification with the expected
content), with a deadline, never on fixed sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp.client import LanguageClient, make_test_lsp_client

from tests.support.build import REPO

DEADLINE = 60.0  # seconds for anything the server does in the background


def capabilities(*, markdown: bool = True, links: bool = True) -> types.ClientCapabilities:
    formats = [types.MarkupKind.Markdown, types.MarkupKind.PlainText]
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(
            work_done_progress=True,
            show_document=types.ShowDocumentClientCapabilities(support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=formats if markdown else [types.MarkupKind.PlainText]
            ),
            definition=types.DefinitionClientCapabilities(link_support=links),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
            document_link=types.DocumentLinkClientCapabilities(tooltip_support=True),
        ),
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            text_document_content=types.TextDocumentContentClientCapabilities(
                dynamic_registration=True
            ),
        ),
    )


class _Recording(dict[str, list[types.Diagnostic]]):
    """The client's diagnostics by URI, noting every publication as it is stored."""

    def __init__(self, log: list[tuple[str, list[types.Diagnostic]]]) -> None:
        super().__init__()
        self.log = log

    def __setitem__(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self.log.append((uri, diagnostics))
        super().__setitem__(uri, diagnostics)


class Session:
    """One server process and its client (use `async with`)."""

    def __init__(
        self,
        cache: Path,
        *,
        configuration: dict[str, Any] | None = None,
        initialization_options: dict[str, Any] | None = None,
        locale: str | None = None,
        client_capabilities: types.ClientCapabilities | None = None,
    ) -> None:
        self.cache = cache
        self.configuration = configuration
        self.initialization_options = initialization_options
        self.locale = locale
        self.client_capabilities = client_capabilities or capabilities()
        self.client: LanguageClient = make_test_lsp_client()
        self.registrations: list[types.Registration] = []
        self.refreshed: list[str] = []
        # Every publication, in order (pytest-lsp's client keeps the last one per URI).
        self.publications: list[tuple[str, list[types.Diagnostic]]] = []
        self.client.diagnostics = _Recording(self.publications)

    async def __aenter__(self) -> Session:
        client = self.client

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @client.feature(types.WORKSPACE_TEXT_DOCUMENT_CONTENT_REFRESH)
        def refresh(params: types.TextDocumentContentRefreshParams) -> None:
            self.refreshed.append(params.uri)

        env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
        env["XDG_CACHE_HOME"] = str(self.cache)
        await client.start_io(sys.executable, "-m", "stackmark", "lsp", cwd=REPO, env=env)
        if self.configuration is not None:
            client.set_configuration(self.configuration, section="stackmark")
        await client.initialize_session(
            types.InitializeParams(
                capabilities=self.client_capabilities,
                initialization_options=self.initialization_options,
                locale=self.locale,
                root_uri=REPO.as_uri(),
            )
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.shutdown_session()
        await self.client.stop()

    # -- documents -------------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        uri = path.as_uri()
        if text is None:
            text = path.read_bytes().decode("utf-8", "surrogateescape")
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="log", version=version, text=text
                )
            )
        )
        return uri

    def edit(
        self, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str
    ) -> None:
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=start[0], character=start[1]),
                end=types.Position(line=end[0], character=end[1]),
            ),
            text=text,
        )
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change],
            )
        )

    async def diagnostics(
        self,
        uri: str,
        until: Callable[[list[types.Diagnostic]], bool] = lambda found: True,
    ) -> list[types.Diagnostic]:
        """The diagnostics published for `uri` once `until` holds for them."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while True:
            found = self.client.diagnostics.get(uri)
            if found is not None and until(found):
                return found
            if loop.time() > deadline:
                raise AssertionError(f"diagnostics for {uri} never satisfied the test: {found}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self.client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS),
                    timeout=max(deadline - loop.time(), 0.1),
                )

    # -- requests ------------------------------------------------------------------------

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )

    async def hover_text(self, uri: str, line: int, character: int) -> str | None:
        found = await self.hover(uri, line, character)
        if found is None:
            return None
        contents = found.contents
        assert isinstance(contents, types.MarkupContent)
        return contents.value

    async def definition(
        self, uri: str, line: int, character: int
    ) -> list[types.LocationLink] | list[types.Location]:
        found = await self.client.text_document_definition_async(
            types.DefinitionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            )
        )
        if found is None:
            return []
        return list(found) if isinstance(found, list | tuple) else [found]  # type: ignore[list-item]

    async def inlay_hints(self, uri: str, first: int, last: int) -> list[types.InlayHint]:
        found = await self.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=first, character=0),
                    end=types.Position(line=last, character=0),
                ),
            )
        )
        return list(found or [])

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    def configure(self, configuration: dict[str, Any]) -> None:
        """New settings, and the notification a client sends when they change."""
        self.client.set_configuration(configuration, section="stackmark")
        self.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=None)
        )
