"""Connect handlers to GDB events once, however often the plugin is loaded.

GDB raises when asked to disconnect a handler that is not connected, and
connecting twice calls the handler twice; sourcing the loader again must
do neither.
"""

from __future__ import annotations

from collections.abc import Callable

import gdb

_connected: set[tuple[int, int]] = set()


def connect_once(handler: Callable[[object], None], *registries: gdb.EventRegistry) -> None:
    for registry in registries:
        key = (id(registry), id(handler))
        if key not in _connected:
            registry.connect(handler)
            _connected.add(key)
