"""The server's commands (`workspace/executeCommand`): the symbolized view of a log.

Both take [log URI, log line?] and answer {"uri": the view's URI, "line":
the view line where that log line's output starts}:

* `stackmark.symbolize` (the code lens over each backtrace, outline.py)
  opens the view at that line, with `window/showDocument`, when the client
  reads views itself (views.py registered their scheme) and can be asked
  to show a document; the answer carries the view's text too when the
  client cannot read views, for the client to show it;
* `stackmark.symbolizedText` always answers with the text (the clients'
  own view commands: editors/vscode's "Show Symbolized Log", editors/nvim's
  `:StackmarkSymbolize`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from lsprotocol import types

from stackmark_lsp import capabilities, view
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.views import Views

SYMBOLIZE = "stackmark.symbolize"
SYMBOLIZED_TEXT = "stackmark.symbolizedText"


class CommandsHost(Protocol):
    """What the commands ask of the server."""

    @property
    def logs(self) -> dict[str, OpenLog]: ...

    @property
    def views(self) -> Views: ...

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    async def window_show_document_async(
        self, params: types.ShowDocumentParams
    ) -> types.ShowDocumentResult: ...


def arguments(given: tuple[Any, ...]) -> tuple[str, int]:
    """(log URI, log line) from a command's arguments; the line is 0 unless given."""
    if not given or not isinstance(given[0], str):
        raise ValueError("expected the log's URI as the first argument")
    line = given[1] if len(given) > 1 and isinstance(given[1], int) else 0
    return given[0], line


async def symbolize(host: CommandsHost, uri: str, line: int) -> dict[str, Any]:
    """`stackmark.symbolize`: show the view at `line` (see the module docstring)."""
    result = await symbolized(host.logs, host.views, uri, line, with_text=False)
    if host.views.registered and capabilities.show_document(host.client_capabilities):
        host.views.refresh_now(uri)  # an edit still waiting to be announced: before showing
        position = types.Position(line=result["line"], character=0)
        await host.window_show_document_async(
            types.ShowDocumentParams(
                uri=result["uri"],
                take_focus=True,
                selection=types.Range(start=position, end=position),
            )
        )
    return result


async def symbolized(
    logs: Mapping[str, OpenLog], views: Views, uri: str, line: int, *, with_text: bool
) -> dict[str, Any]:
    """The answer of both commands: where log line `line` is in the log's view, and the
    view's text if asked for, or if the client cannot read views itself."""
    log = logs.get(uri)
    if log is None:
        raise ValueError(f"{uri} is not open")
    shown = await views.view_of(log)
    target = view.view_uri(uri)
    views.handed_out[target] = uri
    result: dict[str, Any] = {"uri": target, "line": shown.line_for(line)}
    if with_text or not views.registered:
        result["text"] = shown.large_text()
    return result
