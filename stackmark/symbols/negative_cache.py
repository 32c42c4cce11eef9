"""Remembered failures: "no server had this", kept on disk for a while.

A log can mention the same missing module thousands of times, and a batch
runs several processes: without this, each of them would ask every server
again for a file they do not have. A miss is a small JSON file next to
where the download would go; it is trusted for `ttl` seconds and only for
the same list of servers (adding a server makes old misses irrelevant).

Only definite answers ("not found" from every server) are written here;
timeouts and server errors are remembered in memory for one run only, so a
server that was briefly down is asked again next time.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TTL_SECONDS = 600.0
"""The same default as elfutils' `cache_miss_s` (ten minutes)."""

MISS_SUFFIX = ".missing"


@dataclass(frozen=True, slots=True)
class Miss:
    """A remembered failure: why, and when it was recorded (UNIX time)."""

    reason: str
    recorded_at: float


class NegativeCache:
    """Misses stored as `<path>.missing` files beside the artifact they stand for.

    `servers` is the server list the misses are about; a miss recorded for
    another list is ignored. All writes are atomic (temp file + rename), so
    concurrent processes see either the old miss, the new one, or none.
    """

    def __init__(self, servers: Sequence[str], ttl: float = DEFAULT_TTL_SECONDS):
        self.servers = list(servers)
        self.ttl = ttl

    @staticmethod
    def marker_for(artifact: Path) -> Path:
        """Where the miss for `artifact` is kept."""
        return artifact.with_name(artifact.name + MISS_SUFFIX)

    def lookup(self, artifact: Path, now: float | None = None) -> Miss | None:
        """The live miss recorded for `artifact`, or None (none, expired or other servers)."""
        if self.ttl <= 0:
            return None
        marker = self.marker_for(artifact)
        try:
            raw = marker.read_text(encoding="utf-8")
            record = json.loads(raw)
        except (OSError, ValueError):
            return None  # absent, or unreadable: treat as no miss
        if not isinstance(record, dict):
            return None
        recorded_at = record.get("time")
        reason = record.get("reason")
        servers = record.get("servers")
        if not isinstance(recorded_at, (int, float)) or not isinstance(reason, str):
            return None
        if servers != self.servers:
            return None
        current = time.time() if now is None else now
        if not 0 <= current - recorded_at < self.ttl:
            return None
        return Miss(reason, float(recorded_at))

    def remember(self, artifact: Path, reason: str) -> None:
        """Record that every server said `artifact` does not exist."""
        if self.ttl <= 0:
            return
        marker = self.marker_for(artifact)
        record = {"reason": reason, "time": time.time(), "servers": self.servers}
        tmp = marker.with_name(f".{marker.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(record), encoding="utf-8")
            os.replace(tmp, marker)
        except OSError:
            # A read-only or full cache only costs a repeated query later.
            with contextlib.suppress(OSError):
                tmp.unlink()

    def forget(self, artifact: Path) -> None:
        """Drop the miss for `artifact` (it was found after all)."""
        with contextlib.suppress(OSError):
            self.marker_for(artifact).unlink()
