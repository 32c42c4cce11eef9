"""A `ProgressSink` (symbolization.py) that shows nothing: for the server's parts tested
without a client."""

from __future__ import annotations


class SilentProgress:
    def begin(self, title: str) -> object:
        return title

    def report(self, handle: object, message: str, percentage: int | None = None) -> None:
        pass

    def end(self, handle: object) -> None:
        pass
