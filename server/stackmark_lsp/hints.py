"""Inlay hints: the function after each `pc` and `bt` element of the requested range.

Only the lines of the range are symbolized (an editor asks for what is on
screen), in one trip to the worker threads. The hint names the innermost
function at the address; when that function was inlined, the function it
was inlined into follows in parentheses. The tooltip gives file:line:column.
"""

from __future__ import annotations

from lsprotocol import types

from stackmark.markup.elements import BtElement, PcElement
from stackmark.markup.naming import Naming
from stackmark.model import Module
from stackmark_lsp.index import F_BT, F_PC, flags_of
from stackmark_lsp.logs import OpenLog, Target
from stackmark_lsp.lookups import Lookups


async def inlay_hints(
    log: OpenLog, service: Lookups, naming: Naming, first: int, stop: int
) -> list[types.InlayHint]:
    places: list[tuple[int, int, Module, int]] = []  # line, column, module, address
    for line, entry in log.index.entries(first, stop):
        if not flags_of(entry) & (F_BT | F_PC):
            continue
        for element, typed in log.index.elements(line).elements:
            if not isinstance(typed, BtElement | PcElement) or not typed.ok:
                continue
            if element.end_line != line:
                continue
            target = Target(element, typed, log.index.epoch_at(line, element.start))
            placement = target.placement()
            if placement is not None:
                places.append((line, element.end, placement.module, placement.module_relative))
    if not places:
        return []
    lookups = await service.codes_of([(p[2], p[3]) for p in places])
    hints: list[types.InlayHint] = []
    for (line, column, _, _), lookup in zip(places, lookups, strict=True):
        if not lookup.frames:
            continue
        inner, outer = lookup.frames[0], lookup.frames[-1]
        label = naming.function(inner) or inner.name or "??"
        if len(lookup.frames) > 1:
            label += f" ({naming.function(outer) or '??'})"
        tooltip = None
        file = naming.file(inner)
        if file is not None:
            tooltip = f"{file}:{inner.line}" + (f":{inner.column}" if inner.column else "")
        hints.append(
            types.InlayHint(
                position=log.position(line, column),
                label="→ " + label,
                padding_left=True,
                tooltip=tooltip,
            )
        )
    return hints
