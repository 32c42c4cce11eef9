"""Go-to-definition and document links: from markup to source files and back.

Definitions:
* `pc`/`bt`: the source location of every frame of the inline chain,
  innermost first (an editor shows several targets as a list);
* `data`: where the variable is declared; for an address in code, the first
  line of the function;
* `symbol`: where the function of that linkage name is declared, in a
  module of the process; failing that, the first line of the code at its
  symbol;
* the module ID of an `mmap`: the `module` element that declared it.

Declarations, symbol addresses and source files are questions of
`NavigationLookups` (lookups.py): the server answers them from the core
symbolizer (`Symbolizer.declaration_of`, `Symbolizer.address_of`) and
debuginfod (navigation_service.py), a test from an in-memory fake.

Links: a `dumpfile` element to the dump next to the log, and source
locations written in the log text (`/path/file.c:12[:3]`) to that line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import assert_never

from lsprotocol import types

from stackmark.markup.context import Placement
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    HexdictElement,
    MmapElement,
    ModuleElement,
    OtherElement,
    PcElement,
    ResetElement,
    SymbolElement,
)
from stackmark.model import Module, SourceFrame
from stackmark_lsp.hover import dump_path
from stackmark_lsp.index import F_DUMPFILE
from stackmark_lsp.logs import OpenLog, Target
from stackmark_lsp.lookups import NavigationLookups
from stackmark_lsp.messages import Messages

# A source location written in a log: an absolute path with an extension, a line,
# maybe a column ("/src/a.c:12:3", "at /src/a.c:12", "[/src/a.c:12]").
_SOURCE_LOCATION = re.compile(
    r"(?<![\w./-])(/[^\s:'\"()\[\]{}<>,;]+\.[A-Za-z0-9+]+):(\d+)(?::(\d+))?"
)


def file_uri(path: str) -> str:
    """The `file:` URI of an absolute path (spelled as pathlib spells it)."""
    return PurePosixPath(os.path.abspath(path)).as_uri()


class Navigator:
    """Definitions for one request (see the module docstring)."""

    def __init__(self, log: OpenLog, lookups: NavigationLookups) -> None:
        self.log = log
        self.lookups = lookups

    async def definition(self, target: Target, line: int, column: int) -> list[types.LocationLink]:
        typed = target.typed
        origin = self.log.element_range(target.element)
        match typed:
            case BtElement() | PcElement() if typed.ok:
                placement = target.placement()
                if placement is None:
                    return []
                lookup = await self.lookups.code_of(placement.module, placement.module_relative)
                return await self._frames(lookup.frames, placement.module, origin)
            case DataElement() if typed.ok:
                placement = target.placement()
                if placement is None:
                    return []
                return await self._variable(placement, origin)
            case SymbolElement() if typed.ok:
                return await self._symbol(target, typed.name, origin)
            case MmapElement() if typed.ok:
                return self._module_of(target, typed, line, column)
            case (
                BtElement()
                | PcElement()
                | DataElement()
                | SymbolElement()
                | MmapElement()
                | ResetElement()
                | ModuleElement()
                | HexdictElement()
                | DumpfileElement()
                | OtherElement()
            ):
                return []  # not decoded, or nothing to go to
            case _:
                assert_never(typed)

    def _module_of(
        self, target: Target, typed: MmapElement, line: int, column: int
    ) -> list[types.LocationLink]:
        """From the module ID of an `mmap` (under the cursor) to its `module` element."""
        field = target.element.fields[3]
        if not (field.line == line and field.start <= column <= field.end):
            return []
        where = target.epoch.module_position(typed.module_id)
        if where is None or target.epoch.module(typed.module_id, target.where) is None:
            return []
        info, start = where
        module_line = info.chunk.start + info.local
        for element, _ in self.log.index.elements(module_line).elements:
            if element.start == start:
                span = self.log.element_range(element)
                return [
                    types.LocationLink(
                        target_uri=self.log.uri,
                        target_range=span,
                        target_selection_range=span,
                        origin_selection_range=self.log.range(
                            field.line, field.start, field.line, field.end
                        ),
                    )
                ]
        return []

    async def _frames(
        self, frames: list[SourceFrame], module: Module, origin: types.Range
    ) -> list[types.LocationLink]:
        links: list[types.LocationLink] = []
        for frame in frames:  # innermost first
            if frame.file is None or frame.line <= 0:
                continue
            link = await self._link(frame.file, frame.line, frame.column, module, origin)
            if link is not None and link not in links:
                links.append(link)
        return links

    async def _link(
        self, path: str, line: int, column: int, module: Module, origin: types.Range
    ) -> types.LocationLink | None:
        found = await self.lookups.source_of(path, module.build_id)
        if found is None:
            return None
        position = types.Position(line=line - 1, character=max(column - 1, 0))
        span = types.Range(start=position, end=position)
        return types.LocationLink(
            target_uri=file_uri(found),
            target_range=span,
            target_selection_range=span,
            origin_selection_range=origin,
        )

    async def _variable(
        self, placement: Placement, origin: types.Range
    ) -> list[types.LocationLink]:
        """A variable's declaration; for an address in code, the function's first line."""
        module = placement.module
        lookup = await self.lookups.data_of(module, placement.module_relative)
        if lookup.symbol is None or lookup.resolution.binary is None:
            return []
        start = lookup.symbol.start
        place = await self.lookups.declaration_of(module, lookup.symbol.name, start)
        if place is None:
            if "x" not in placement.segment.mode:
                return []
            code = await self.lookups.code_of(module, start)
            return await self._frames(code.frames[-1:], module, origin)
        link = await self._link(place.file, place.line, 0, module, origin)
        return [link] if link is not None else []

    async def _symbol(
        self, target: Target, name: str, origin: types.Range
    ) -> list[types.LocationLink]:
        context = target.epoch.context
        for module_id in sorted(context.modules):
            module = target.epoch.module(module_id, target.where)
            if module is None:
                continue
            resolution = await self.lookups.resolution_of(module)
            if resolution.binary is None:
                continue
            place = await self.lookups.declaration_of(module, name)
            if place is not None:
                link = await self._link(place.file, place.line, 0, module, origin)
                return [link] if link is not None else []
            address = await self.lookups.address_of(module, name)
            if address is None:
                continue
            lookup = await self.lookups.code_of(module, address)
            return await self._frames(lookup.frames[-1:], module, origin)
        return []


# -- document links ------------------------------------------------------------------


def links(
    log: OpenLog, local: Callable[[str], str | None], t: Messages, tooltips: bool = True
) -> list[types.DocumentLink]:
    """Links for dumpfile elements and for source locations written in the log whose
    file `local` finds on this machine."""
    found: list[types.DocumentLink] = []
    for line, entry in log.index.entries():
        flags = entry if isinstance(entry, int) else entry.flags
        if not flags & F_DUMPFILE:
            continue
        for element, typed in log.index.elements(line).elements:
            if isinstance(typed, DumpfileElement) and len(element.fields) > 1:
                path = dump_path(log, typed.name)
                if path is not None:
                    field = element.fields[1]
                    found.append(
                        types.DocumentLink(
                            range=log.range(field.line, field.start, field.line, field.end),
                            target=file_uri(path),
                            tooltip=t("link.dump", path=path) if tooltips else None,
                        )
                    )
    for line, start, end, path, number, column in _source_locations(log):
        found_at = local(path)
        if found_at is None:
            continue
        fragment = f"#L{number}" + (f",{column}" if column else "")
        found.append(
            types.DocumentLink(
                range=log.range(line, start, line, end),
                target=file_uri(found_at) + fragment,
                tooltip=t("link.source", path=f"{found_at}:{number}") if tooltips else None,
            )
        )
    return found


def _source_locations(log: OpenLog) -> Iterator[tuple[int, int, int, str, int, int]]:
    """(line, start, end, path, line number, column) of each source location in the text."""
    document = log.document
    for chunk in document.chunks:
        if "/" not in chunk.text or ":" not in chunk.text:
            continue
        texts = document.chunk_lines(chunk)
        for local, text in enumerate(texts):
            if ":" not in text or "/" not in text:
                continue
            for match in _SOURCE_LOCATION.finditer(text):
                yield (
                    chunk.start + local,
                    match.start(),
                    match.end(),
                    match.group(1),
                    int(match.group(2)),
                    int(match.group(3) or 0),
                )
