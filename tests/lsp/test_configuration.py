"""The settings' life cycle without a server: `Configuration` over a plain host.

The host records what would be shown to the user and answers
`workspace/configuration` with what a test gives it; the symbol services
are the real ones, made from settings that point at a temporary cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from stackmark_lsp.configuration import Configuration
from stackmark_lsp.messages import Messages

from tests.lsp.silent_progress import SilentProgress


class Host:
    def __init__(self, answer: Sequence[Any] | Exception = ()) -> None:
        self.messages = Messages()
        self.reporter = SilentProgress()
        self.shown: list[str] = []
        self.answer = answer

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.shown.append(params.message)

    async def workspace_configuration_async(self, params: types.ConfigurationParams) -> Any:
        assert [item.section for item in params.items] == ["stackmark"]
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    def loop_call(self, function: Callable[..., object], *args: object) -> None:
        function(*args)


def configured(host: Host, cache: Path) -> Configuration:
    configuration = Configuration(host)
    configuration.initialization_options = {"cacheDir": str(cache)}
    return configuration


def test_the_services_are_made_anew_only_when_the_settings_change(tmp_path: Path) -> None:
    configuration = configured(Host(), tmp_path)
    told: list[str] = []
    configuration.rebuilt.append(lambda: told.append("rebuilt"))

    assert configuration.apply()
    first = configuration.service
    assert first is not None and told == ["rebuilt"]
    assert configuration.navigation is not None and configuration.navigation.service is first
    assert configuration.sources is not None and configuration.sources.service is first

    assert not configuration.apply()  # the same settings: the same services
    assert configuration.service is first and told == ["rebuilt"]

    configuration.section = {"symbolPaths": [str(tmp_path)]}
    assert configuration.apply()
    assert configuration.service is not first and told == ["rebuilt", "rebuilt"]
    assert configuration.settings.symbol_paths == (str(tmp_path),)
    with pytest.raises(RuntimeError):  # the old service was closed
        first.pool.submit(print)
    configuration.close()


def test_problems_in_the_settings_are_shown_each_time_they_are_applied(tmp_path: Path) -> None:
    host = Host()
    configuration = configured(host, tmp_path)
    configuration.section = {"objects": 3, "colour": "red"}
    configuration.apply()
    configuration.apply()
    expected = [
        "stackmark: unknown setting “colour”; ignored",
        "stackmark: setting “objects” must be a list of strings; ignored",
    ]
    assert host.shown == expected * 2
    configuration.show_warning("no server")
    assert host.shown[-1] == "stackmark: debuginfod is not usable: no server"
    configuration.close()


def test_the_pulled_section_replaces_the_pushed_one_and_a_failed_pull_keeps_it() -> None:
    host = Host()
    configuration = Configuration(host)
    configuration.take_pushed({"stackmark": {"objects": ["/a"]}})
    assert configuration.section == {"objects": ["/a"]}
    configuration.take_pushed({"other": {"objects": ["/b"]}})  # nothing of ours: kept
    assert configuration.section == {"objects": ["/a"]}

    host.answer = [{"objects": ["/c"]}]
    asyncio.run(configuration.pull())
    assert configuration.section == {"objects": ["/c"]}
    host.answer = RuntimeError("no configuration support")
    asyncio.run(configuration.pull())
    assert configuration.section == {"objects": ["/c"]}
    host.answer = []  # an empty answer: kept too
    asyncio.run(configuration.pull())
    assert configuration.section == {"objects": ["/c"]}
