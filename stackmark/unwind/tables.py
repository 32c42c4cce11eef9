"""Where unwind rows come from: one stack-trace table per module, loaded once.

The unwinder asks "the row for this module-relative pc" (`UnwindTable`).
A `TableCache` loads a module's table on first use with a loader (by
default: the `.sframe` section of the module's file) and keeps it, or
remembers that the module has none (and why), so each module's file is
opened at most once per unwinder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from stackmark.elf import ElfFile
from stackmark.errors import StackmarkError
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.memory import read_sframe_from_image
from stackmark.formats.sframe.reader import read_elf_sframe
from stackmark.model import Module
from stackmark.unwind_rules import UnwindRow


class UnwindTable(Protocol):
    """Unwind rows of one module, addressed by module-relative pc (ELF vaddr)."""

    def row(self, pc: int) -> UnwindRow | None:
        """The row covering `pc`, or None when no entry covers it."""
        ...


@dataclass(frozen=True, slots=True)
class NoTable:
    """Why a module has no table (shown in the notes of frame-pointer frames)."""

    reason: str


TableLoader = Callable[[Module], "UnwindTable | NoTable"]
"""Loads the table of a module, or says why there is none; may raise
`StackmarkError` for a malformed table (the cache records it as NoTable)."""


class TableCache:
    """One table per module, loaded on first use; rows remembered per pc.

    Backtraces revisit the same return addresses (recursion, threads,
    repeated captures), so each table's answers are memoized by pc
    (`memoize=False` turns that off, e.g. to measure raw lookups).
    """

    def __init__(self, loader: TableLoader, *, memoize: bool = True):
        self._loader = loader
        self._memoize = memoize
        self._tables: dict[tuple[str, str, int], UnwindTable | NoTable] = {}
        self._by_module: dict[int, tuple[Module, UnwindTable | NoTable]] = {}

    def table_for(self, module: Module) -> UnwindTable | NoTable:
        known = self._by_module.get(id(module))
        if known is not None and known[0] is module:
            return known[1]
        key = (module.path or module.name, module.build_id, module.load_bias)
        table = self._tables.get(key)
        if table is None:
            try:
                table = self._loader(module)
            except StackmarkError as exc:
                table = NoTable(f"unreadable unwind table: {exc}")
            if self._memoize and not isinstance(table, NoTable):
                table = MemoizedTable(table)
            self._tables[key] = table
        self._by_module[id(module)] = (module, table)
        return table


class MemoizedTable:
    """A table whose rows are remembered by pc (up to `limit` pcs)."""

    def __init__(self, table: UnwindTable, limit: int = 1 << 16):
        self.table = table
        self.limit = limit
        self._rows: dict[int, UnwindRow | None] = {}

    def row(self, pc: int) -> UnwindRow | None:
        rows = self._rows
        if pc in rows:
            return rows[pc]
        if len(rows) >= self.limit:
            rows.clear()
        row = rows[pc] = self.table.row(pc)
        return row


class SFrameTables:
    """The default loader: a module's SFrame table from its file, else from memory.

    The file is the module's path (mapped through `path_map`, e.g. under a
    sysroot); its `.sframe` section (or PT_GNU_SFRAME) is read. Without a
    usable file, `read_memory` (the target's) reads the PT_GNU_SFRAME
    segment of the image mapped at the module's lowest address.
    """

    def __init__(
        self,
        *,
        read_memory: Callable[[int, int], bytes] | None = None,
        path_map: Callable[[str], str] | None = None,
    ):
        self.read_memory = read_memory
        self.path_map = path_map

    def __call__(self, module: Module) -> UnwindTable | NoTable:
        reasons = []
        if module.path:
            path = self.path_map(module.path) if self.path_map else module.path
            if os.path.exists(path):
                with ElfFile.open(path) as elf:
                    if module.build_id and elf.build_id and elf.build_id != module.build_id:
                        reasons.append(f"{path} has another build ID")
                    else:
                        section = read_elf_sframe(elf, lazy=True)
                        if section is not None:
                            return SFrameTable(section)
                        return NoTable("no .sframe section")
            else:
                reasons.append(f"{path} not found")
        if self.read_memory is not None and module.segments:
            base = min(s.start for s in module.segments)
            loaded = read_sframe_from_image(self.read_memory, base)
            if loaded is not None:
                return _RelocatedTable(loaded.table, loaded.load_bias - module.load_bias)
            reasons.append("no PT_GNU_SFRAME in memory")
        return NoTable("; ".join(reasons) or "no file to read")


@dataclass(frozen=True, slots=True)
class _RelocatedTable:
    """A table read from memory, whose addresses may be off from the module's
    own by `shift` (when the module's segments were not described from the
    same ELF headers)."""

    table: SFrameTable
    shift: int

    def row(self, pc: int) -> UnwindRow | None:
        return self.table.row(pc - self.shift)
