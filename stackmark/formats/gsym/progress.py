"""Progress on stderr for long conversions: "label: done/total", redrawn in place.

Only drawn when the stream is a terminal (a log file or a pipe stays clean),
and at most ten times a second.
"""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    """Call `update(label, done, total)` as work proceeds, `finish()` at the end."""

    def __init__(self, stream: TextIO, *, force: bool = False, interval: float = 0.1):
        isatty = getattr(stream, "isatty", None)
        self.enabled = force or bool(isatty and isatty())
        self.stream = stream
        self.interval = interval
        self._last = 0.0
        self._drawn = False

    def update(self, label: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self.interval and done < total:
            return
        self._last = now
        self.stream.write(f"\r{label}: {done}/{total}\x1b[K")
        self.stream.flush()
        self._drawn = True

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False
