"""When the cyclic garbage collector runs: not while an index is built, and never over
the index's objects once they are built.

An index of a large log is millions of long-lived objects; collections
that walk them cost seconds while a log opens and stall requests later.
So the server builds and edits an index with the collector off
(`quiet_gc`) and freezes what it made (`gc.freeze`: frozen objects are
never walked); closing a log lets its objects go (`release_closed`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """No cyclic garbage collection while an index is built, and the objects it made
    frozen afterwards (see the module docstring)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


def release_closed() -> None:
    """After a log is closed: its objects can go; the others are frozen again."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
