"""Opening a log: reading it (on two cores when large), its first diagnostics, then the rest.

`open_log` runs for `didOpen`, where a client waits for the first
diagnostics (docs/benchmarks.md measures it on a 1M-line log):

1. with the garbage collector quiet (memory.py), the text is cut into the
   log's document and read into its index, in one pass, or in two halves
   at once when it is large (split.py: a child process reads the second
   half while this one reads the first);
2. the log is added to the open ones and its diagnostics are published,
   from the halves' `Preview` when the child's half can be used;
3. then this process reads the second half itself, so that the index is
   whole, and publishes again only if the index disagrees with the preview;
4. one log line says how long each step took.

The opening pass leaves the entries of plain frame lines out (index.py);
`complete_in_background` fills them in a few chunks at a time once the
first requests have been answered, and stops when the log is closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from lsprotocol import types

from stackmark_lsp import split
from stackmark_lsp.document import PositionCodec
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.memory import quiet_gc

logger = logging.getLogger("stackmark_lsp")  # the server's log lines keep one name
# Background filling of the entries left out on open: chunks per turn (~0.4 ms each),
# the pause between turns, and the wait before the first (the first hovers come then).
COMPLETED_PER_TURN = 8
COMPLETION_PAUSE = 0.005
COMPLETION_DELAY = 1.0


class Publication(Protocol):
    """Where a log's diagnostics go (`Publisher`, publishing.py)."""

    def publish(self, log: OpenLog, preview: split.Preview | None = None) -> None: ...

    def outdated(self, log: OpenLog) -> bool: ...


def open_log(
    item: types.TextDocumentItem,
    codec: PositionCodec,
    logs: dict[str, OpenLog],
    publication: Publication,
) -> OpenLog:
    """Read the log `item` brings, add it to `logs` and publish its diagnostics (see the
    module docstring)."""
    started = time.perf_counter()
    with quiet_gc():
        halves = split.fork_second_half(item.uri, item.text)
        stop = halves.offset if halves is not None else None
        log = OpenLog(item.uri, item.text, item.version, codec, read=False, stop=stop)
        cut = time.perf_counter()
        preview = None
        if halves is None:
            log.index.rebuild()
        elif (preview := halves.read_first_half(log.index)) is None:
            halves.read_second_half(log.index)  # the child's half is not to be used
    logs[item.uri] = log
    indexed = time.perf_counter()
    publication.publish(log, preview)
    if halves is not None and preview is not None:  # the child read the second half
        with quiet_gc():
            halves.read_second_half(log.index)
        if publication.outdated(log):
            logger.warning("%s: the halves' diagnostics differ from the index's", log.uri)
            publication.publish(log)
    published = time.perf_counter()
    logger.info(
        "opened %s: %d lines cut into chunks in %.3f s, indexed in %.3f s%s, "
        "diagnostics published in %.3f s",
        item.uri,
        len(log.document),
        cut - started,
        indexed - cut,
        " (two processes)" if preview is not None else "",
        published - indexed,
    )
    return log


def complete_in_background(log: OpenLog, logs: dict[str, OpenLog]) -> None:
    """Fill in the entries the opening pass left out, starting `COMPLETION_DELAY` from now
    (see `complete_later`)."""
    asyncio.get_running_loop().call_later(COMPLETION_DELAY, complete_later, log, logs)


def complete_later(log: OpenLog, logs: dict[str, OpenLog]) -> None:
    """Fill in the entries the opening pass left out (index.py), a few chunks at a
    time with pauses between, so that requests and the worker threads (a hover's
    lookup, the search for binaries) are not kept waiting meanwhile; whatever a
    request needs before that is filled in on the spot."""
    if logs.get(log.uri) is not log:
        return  # closed, or opened again
    with quiet_gc():
        more = log.index.complete(COMPLETED_PER_TURN)
    if more:
        asyncio.get_running_loop().call_later(COMPLETION_PAUSE, complete_later, log, logs)
