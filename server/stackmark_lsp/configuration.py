"""The client's settings over the server's life, and the symbol services made from them.

Settings come in layers (settings.py parses them): `initializationOptions`
at `initialize`, then the `stackmark` section of `workspace/configuration`,
asked at `initialized` and whenever the client says the configuration
changed (older clients push the section along with the notification).
Each time, `Configuration.apply` parses them again; when they differ from
the settings in force, the symbol services are made anew from them
(`SymbolService`, `SourceFinder`, `NavigationService`), whatever kept the
old service's answers is told (`rebuilt`: the symbolized views, the
modules being looked for), and the old service is closed. Problems found
in the settings, and warnings the services give later from their worker
threads, are shown to the user (`window/showMessage`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from lsprotocol import types

from stackmark_lsp.messages import Messages
from stackmark_lsp.navigation_service import NavigationService, SourceFinder
from stackmark_lsp.settings import Problem, Settings, parse
from stackmark_lsp.symbolization import ProgressSink, SymbolService

logger = logging.getLogger("stackmark_lsp")  # the server's log lines keep one name
PULL_TIMEOUT = 10.0  # seconds a client gets to answer `workspace/configuration`


class ConfigurationHost(Protocol):
    """What the configuration asks of the server."""

    @property
    def messages(self) -> Messages: ...

    @property
    def reporter(self) -> ProgressSink | None: ...

    def window_show_message(self, params: types.ShowMessageParams) -> None: ...

    async def workspace_configuration_async(
        self, params: types.ConfigurationParams
    ) -> Sequence[Any]: ...

    def loop_call(self, function: Callable[..., object], *args: object) -> None: ...


class Configuration:
    """The settings in force and the services made from them (see the module docstring)."""

    def __init__(self, host: ConfigurationHost) -> None:
        self.host = host
        self.initialization_options: object = None
        self.section: object = None  # the client's `stackmark` section
        self.root: str | None = None  # relative paths in the settings are taken from it
        self.settings = Settings()
        self.service: SymbolService | None = None
        self.sources: SourceFinder | None = None
        self.navigation: NavigationService | None = None
        # Called when the services are made anew: caches of the old service's answers.
        self.rebuilt: list[Callable[[], None]] = []

    def apply(self) -> bool:
        """(Re)make the services if the settings changed, then show the problems found
        in the settings; whether the services were made anew."""
        settings, found = parse([self.initialization_options, self.section], self.root)
        rebuilt = self.service is None or settings != self.settings
        if rebuilt:
            self._rebuild(settings)
        self._show_problems(found)
        return rebuilt

    def _rebuild(self, settings: Settings) -> None:
        self.settings = settings
        old = self.service
        assert self.host.reporter is not None
        self.service = SymbolService(
            settings, self.host.reporter, self.host.messages, report=self.show_warning
        )
        self.sources = SourceFinder(settings, self.service)
        self.navigation = NavigationService(self.service, self.sources)
        for forget in self.rebuilt:
            forget()
        if old is not None:
            old.close()

    def _show_problems(self, found: list[Problem]) -> None:
        for problem in found:
            self.host.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=self.host.messages(f"settings.{problem.reason}", key=problem.key),
                )
            )

    def show_warning(self, message: str) -> None:
        """A warning of the services for the user, from any thread."""
        text = self.host.messages("settings.debuginfod", reason=message)
        self.host.loop_call(
            self.host.window_show_message,
            types.ShowMessageParams(type=types.MessageType.Warning, message=text),
        )

    def take_pushed(self, settings: object) -> None:
        """Take the `stackmark` section from a `didChangeConfiguration` that carries it."""
        if isinstance(settings, dict) and isinstance(settings.get("stackmark"), dict):
            self.section = settings["stackmark"]

    async def pull(self) -> None:
        """Ask the client for the `stackmark` section (clients that cannot answer are fine)."""
        try:
            answer = await asyncio.wait_for(
                self.host.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="stackmark")])
                ),
                timeout=PULL_TIMEOUT,
            )
        except Exception:  # no configuration support, or an error: keep what we have
            logger.debug("workspace/configuration failed", exc_info=True)
            return
        if answer:
            self.section = answer[0]

    def close(self) -> None:
        if self.service is not None:
            self.service.close()
