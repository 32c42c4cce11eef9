"""A status line on stderr for long work: downloads, batches.

Shown only when stderr is a terminal, rewritten in place (carriage return
and erase-line), at most ten times a second, and erased when the work is
done, so logs and pipes never see it. Safe to call from several threads
(debuginfod downloads run in parallel).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the client (and urllib) is imported only when used
    from stackmark.symbols.debuginfod import DownloadProgress

SMALL_DOWNLOAD_BYTES = 1 << 20
"""Downloads smaller than this, known in advance, are not worth a status line."""


class StatusLine:
    """One line of status text at the bottom of a terminal."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        interval: float = 0.1,
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.interval = interval
        self._lock = threading.Lock()
        self._shown = ""
        self._last = 0.0
        self._downloads: dict[tuple[str, str], DownloadProgress] = {}

    def show(self, text: str, *, force: bool = False) -> None:
        """Replace the status with `text` (skipped if the last update was too recent)."""
        if not self.enabled:
            return
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self.interval:
                return
            self._last = now
            self._write(text)

    def clear(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._write("")

    def print(self, text: str) -> None:
        """Print a permanent line on the stream, keeping the status below it."""
        with self._lock:
            shown = self._shown
            if self.enabled and shown:
                self._write("")
            buffer = getattr(self.stream, "buffer", None)
            if buffer is not None:
                # Diagnostics quote log lines that may not be UTF-8: their bytes
                # go out as they came (surrogateescape), as `stackmark symbolize FILE` does.
                self.stream.flush()
                buffer.write((text + "\n").encode("utf-8", "surrogateescape"))
                buffer.flush()
            else:
                self.stream.write(text + "\n")
                self.stream.flush()
            if self.enabled and shown:
                self._write(shown)

    def download(self, progress: DownloadProgress) -> None:
        """A `DebuginfodClient` progress callback: one status for all downloads."""
        if not self.enabled:
            return
        key = (progress.build_id, progress.artifact)
        with self._lock:
            if progress.done:
                self._downloads.pop(key, None)
            else:
                self._downloads[key] = progress
            active = [
                p
                for p in self._downloads.values()
                if p.total is None or p.total >= SMALL_DOWNLOAD_BYTES
            ]
        if not active:
            if progress.done:
                self.clear()
            return
        first = active[0]
        text = f"downloading {first.artifact} {first.build_id[:12]}: {_amount(first)}"
        if len(active) > 1:
            text += f" (+{len(active) - 1} more)"
        self.show(text, force=progress.done)

    def _write(self, text: str) -> None:
        width = _width(self.stream)
        if text and len(text) > width - 1:
            text = text[: width - 2] + "…"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self._shown = text


def _amount(progress: DownloadProgress) -> str:
    done = _mib(progress.received)
    if progress.total:
        return (
            f"{done} of {_mib(progress.total)} MiB ({100 * progress.received // progress.total}%)"
        )
    return f"{done} MiB"


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _width(stream: TextIO) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
    return columns if columns > 0 else 80  # a terminal that does not say (a bare pty)
