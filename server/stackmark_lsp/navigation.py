"""Go-to-definition and document links: from markup to source files and back.

Definitions:
* `pc`/`bt`: the source location of every frame of the inline chain,
  innermost first (an editor shows several targets as a list);
* `data`: where the variable is declared (variables.py);
* `symbol`: where the function of that linkage name is declared, in a
  module of the process (stackmark.dwarf.declarations); failing that, the first line
  of the code at its symbol;
* the module ID of an `mmap`: the `module` element that declared it.

Source paths go through the `sourcePathMap` prefix map; a file that is not
on this machine is fetched from debuginfod (by the module's build ID) when
servers are configured.

Links: a `dumpfile` element to the dump next to the log, and source
locations written in the log text (`/path/file.c:12[:3]`) to that line.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from pathlib import PurePosixPath

from lsprotocol import types

from stackmark.dwarf.declarations import DeclarationIndex
from stackmark.elf import ElfFile
from stackmark.errors import StackmarkError
from stackmark.markup.context import Placement
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    MmapElement,
    PcElement,
    SymbolElement,
)
from stackmark.model import Module, SourceFrame
from stackmark.symbols.symtab import SymbolTable
from stackmark_lsp.hover import dump_path
from stackmark_lsp.index import F_DUMPFILE
from stackmark_lsp.logs import OpenLog, Target
from stackmark_lsp.messages import Messages
from stackmark_lsp.settings import Settings
from stackmark_lsp.symbolization import SymbolService

# A source location written in a log: an absolute path with an extension, a line,
# maybe a column ("/src/a.c:12:3", "at /src/a.c:12", "[/src/a.c:12]").
_SOURCE_LOCATION = re.compile(
    r"(?<![\w./-])(/[^\s:'\"()\[\]{}<>,;]+\.[A-Za-z0-9+]+):(\d+)(?::(\d+))?"
)


def file_uri(path: str) -> str:
    """The `file:` URI of an absolute path (spelled as pathlib spells it)."""
    return PurePosixPath(os.path.abspath(path)).as_uri()


class SourceFinder:
    """Source files of a build, here or through debuginfod (thread-safe, remembered)."""

    def __init__(self, settings: Settings, service: SymbolService) -> None:
        self.settings = settings
        self.service = service
        self._found: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def local(self, path: str) -> str | None:
        mapped = self.settings.map_source(path)
        return mapped if os.path.isfile(mapped) else None

    def find(self, path: str, build_id: str) -> str | None:
        """A readable copy of source file `path` of build `build_id` (may download)."""
        local = self.local(path)
        if local is not None:
            return local
        key = (build_id, path)
        with self._lock:
            if key in self._found:
                return self._found[key]
        found: str | None = None
        client = self.service.debuginfod
        if client is not None and build_id and os.path.isabs(path):
            result = client.find_source(build_id, path)
            found = str(result.path) if result.path is not None else None
        with self._lock:
            self._found[key] = found
        return found


class Navigator:
    """Definitions for one request (see the module docstring)."""

    def __init__(
        self,
        log: OpenLog,
        service: SymbolService,
        sources: SourceFinder,
        symbols: SymbolTables,
        declarations: Declarations,
    ) -> None:
        self.log = log
        self.service = service
        self.sources = sources
        self.symbols = symbols
        self.declarations = declarations

    async def definition(self, target: Target, line: int, column: int) -> list[types.LocationLink]:
        typed = target.typed
        origin = self.log.element_range(target.element)
        if isinstance(typed, BtElement | PcElement) and typed.ok:
            placement = target.placement()
            if placement is None:
                return []
            lookup = await self.service.code_of(placement.module, placement.module_relative)
            return await self._frames(lookup.frames, placement.module, origin)
        if isinstance(typed, DataElement) and typed.ok:
            placement = target.placement()
            if placement is None:
                return []
            return await self._variable(placement, origin)
        if isinstance(typed, SymbolElement) and typed.ok:
            return await self._symbol(target, typed.name, origin)
        if isinstance(typed, MmapElement) and typed.ok:
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
        found = await self.service.run(self.sources.find, path, module.build_id)
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
        lookup = await self.service.data_of(module, placement.module_relative)
        binary = lookup.resolution.binary
        if lookup.symbol is None or binary is None:
            return []
        start = lookup.symbol.start
        place = await self.service.run(
            self.declarations.variable, binary, start, lookup.symbol.name
        )
        if place is None:
            if "x" not in placement.segment.mode:
                return []
            code = await self.service.run(self.service.code, module, start)
            return await self._frames(code.frames[-1:], module, origin)
        link = await self._link(place[0], place[1], 0, module, origin)
        return [link] if link is not None else []

    async def _symbol(
        self, target: Target, name: str, origin: types.Range
    ) -> list[types.LocationLink]:
        context = target.epoch.context
        for module_id in sorted(context.modules):
            module = target.epoch.module(module_id, target.where)
            if module is None:
                continue
            resolution = await self.service.run(self.service.resolve, module)
            if resolution.binary is None:
                continue
            place = await self.service.run(self.declarations.function, resolution.binary, name)
            if place is not None:
                link = await self._link(place[0], place[1], 0, module, origin)
                return [link] if link is not None else []
            address = await self.service.run(self.symbols.address, resolution.binary, name)
            if address is None:
                continue
            lookup = await self.service.run(self.service.code, module, address)
            return await self._frames(lookup.frames[-1:], module, origin)
        return []


class SymbolTables:
    """Function addresses by linkage name, per file (read once, in a worker thread)."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def address(self, path: str, name: str) -> int | None:
        with self._lock:
            table = self._tables.get(path)
            if table is None:
                table = self._tables[path] = self._read(path)
        return table.get(name)

    @staticmethod
    def _read(path: str) -> dict[str, int]:
        try:
            with ElfFile.open(path) as elf:
                return {entry.name: entry.address for entry in SymbolTable(elf).entries}
        except (StackmarkError, OSError):
            return {}


class Declarations:
    """Declaration indexes per file (built once, in a worker thread)."""

    def __init__(self) -> None:
        self._indexes: dict[str, DeclarationIndex | None] = {}
        self._lock = threading.Lock()

    def _index(self, path: str) -> DeclarationIndex | None:
        with self._lock:
            if path not in self._indexes:
                try:
                    self._indexes[path] = DeclarationIndex(path)
                except (StackmarkError, OSError):
                    self._indexes[path] = None
            return self._indexes[path]

    def variable(self, path: str, address: int, name: str) -> tuple[str, int] | None:
        index = self._index(path)
        return index.variable(address, name) if index is not None else None

    def function(self, path: str, name: str) -> tuple[str, int] | None:
        index = self._index(path)
        return index.function(name) if index is not None else None


# -- document links ------------------------------------------------------------------


def links(
    log: OpenLog, sources: SourceFinder, t: Messages, tooltips: bool = True
) -> list[types.DocumentLink]:
    """Links for dumpfile elements and for source locations written in the log."""
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
        local = sources.local(path)
        if local is None:
            continue
        fragment = f"#L{number}" + (f",{column}" if column else "")
        found.append(
            types.DocumentLink(
                range=log.range(line, start, line, end),
                target=file_uri(local) + fragment,
                tooltip=t("link.source", path=f"{local}:{number}") if tooltips else None,
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
