"""A symbol source that answers from the GSYM cache instead of parsing DWARF.

It gives the answers the DWARF source (`stackmark.symbols.elf_source`,
llvm-symbolizer's rules) gives, from three pieces:

- the GSYM file: which function holds the address, the line row there and
  the inline calls around it (files, lines, call sites);
- the extras file: the linkage and short names of each function and
  inlined call, the column of the DWARF line row, call-site columns;
- the binary's symbol table, through the DWARF source's own code: it names
  the outermost frame (`main.cold`), gives symbol-only frames, answers
  data addresses and gives a function's address by its name. Reading a
  symbol table is cheap; parsing DWARF is not.

Where the GSYM has no function from DWARF at an address (padding between
functions, assembler, functions known from the symbol table alone), the
DWARF source itself answers: those addresses are rare and cost it one
unit's line table at most.
"""

from __future__ import annotations

import contextlib
import mmap
from pathlib import Path
from typing import TYPE_CHECKING

from stackmark._native import load
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.gsym.extras import NO_STATE, Extras
from stackmark.formats.gsym.lookup import join_path
from stackmark.formats.gsym.reader import GsymReader
from stackmark.model import DataSymbol, SourceFrame
from stackmark.symbols.cache import GsymCache, open_pair

if TYPE_CHECKING:
    from stackmark.formats.gsym.convert import ProgressSink
    from stackmark.symbols.elf_source import ElfSymbolSource
    from stackmark.symbols.source import ModuleFiles, SourceFactory


_native = load("_gsym_lookup")  # the compiled `ExtrasIndex.frames`, or None

STATES_KEPT = 4096
"""Chains kept per extras state (addresses in one line row share a state;
callers keep answers per address)."""


class GsymSource:
    """Frames from a cached GSYM + extras; symbols from the binary (see module doc)."""

    def __init__(self, gsym_path: str, extras_path: str, files: ModuleFiles, identity: str = ""):
        """`identity`: the pair's as the cache checked it (`CacheEntry.identity`); when the
        files opened here still have it, their CRC-32s are not computed again."""
        from stackmark.symbols.elf_source import ElfSymbolSource

        self.files = files
        self.gsym_path = gsym_path
        # Kept open: the extras' tables are views into their mapping.
        gsym_map, self._extras_map, opened = open_pair(Path(gsym_path), Path(extras_path))
        self.reader = GsymReader(gsym_map, gsym_path)
        try:
            checksums = not identity or identity != opened
            self.extras = Extras(
                self._extras_map, self.reader.data, extras_path, checksums=checksums
            )
        except BaseException:
            self._extras_map.close()
            self.reader.close()
            raise
        self._elf: ElfSymbolSource = ElfSymbolSource(files, dwarf_on_first_use=True)
        # Opening checked every byte of both files (CRC-32s), which made them
        # resident; a lookup needs a few pages of each.
        self._drop_pages()
        self._paths: dict[int, str | None] = {}
        self._states: dict[int, list[SourceFrame]] = {}
        self.extras_damaged = False
        # The compiled twin of `_gsym_frames` holds views of the extras' tables.
        self._index = (
            _native.ExtrasIndex(*self.extras.lookup_tables()) if _native is not None else None
        )

    @property
    def description(self) -> str:
        return f"GSYM cache {self.gsym_path} (for {self.files.dwarf_file})"

    @property
    def has_debug_info(self) -> bool:
        return True

    def _path(self, file_index: int) -> str | None:
        if file_index in self._paths:
            return self._paths[file_index]
        names = self.reader.file_strings(file_index)
        path = None if names is None or names == ("", "") else join_path(*names)
        self._paths[file_index] = path
        return path

    def _drop_pages(self) -> None:
        """Unmap the pages of the GSYM and extras files from this process.

        They stay in the page cache (a lookup maps what it touches again, at
        the cost of a minor fault), and no longer count in the process'
        resident memory: a log with a few frames keeps ~50 MB less resident
        for a 100 MB binary. (Lookups spread over the whole binary map most
        of the extras again: the kernel may map a large folio per fault.)"""
        advice = getattr(mmap, "MADV_DONTNEED", None)
        if advice is None:
            return
        for data in (self._extras_map, self.reader.data):
            if isinstance(data, mmap.mmap):
                with contextlib.suppress(OSError, ValueError):
                    data.madvise(advice)

    def gsym_frames(self, address: int) -> list[SourceFrame] | None:
        try:
            return self._gsym_frames(address)
        except (FormatError, IndexError):
            # A damaged entry: answer from DWARF from now on (the next run
            # rebuilds it, as validation fails or the index points nowhere).
            self.extras_damaged = True
            return None

    def _node_names(self, node: int) -> tuple[str | None, str | None]:
        """(linkage name, short name) of extras node `node` (the extras keep
        each string decoded once)."""
        extras = self.extras
        return extras.string(extras.linkage[node]), extras.string(extras.name[node])

    def _gsym_frames(self, address: int) -> list[SourceFrame] | None:
        """What the DWARF answers at `address`, innermost first; None when no
        function from DWARF holds it in the GSYM (one binary search in the
        extras' address index; answers are shared per index state).

        The hot path of a warm lookup: it reads the extras' arrays directly
        and its decoded strings, so a lookup makes only its frames."""
        if self.extras_damaged:
            return None
        if _native is not None and self._index is not None:
            chain = self._index.frames(
                address,
                self.extras.string_cache,
                self._paths,
                self._path,
                self._states,
                STATES_KEPT,
                SourceFrame,
            )
            if chain is not None:  # None: the reference below answers
                return chain or None  # False: no state holds `address`
        extras = self.extras
        state = extras.state_at(address)
        if state == NO_STATE:
            return None
        cached = self._states.get(state)
        if cached is not None:
            return cached
        first = extras.first_node[extras.state_function[state]]
        file_index = extras.state_file[state]
        if file_index == 0:
            file: str | None = None
            line = column = 0
        else:
            file = self._paths[file_index] if file_index in self._paths else self._path(file_index)
            line, column = extras.state_line[state], extras.state_column[state]
        path = extras.path(state)
        frames: list[SourceFrame] = []
        if not path:
            linkage, name = self._node_names(first)
            frames.append(SourceFrame(linkage, name, file, line, column))
        call_file, call_line, call_column = extras.call_file, extras.call_line, extras.call_column
        for index in reversed(path):
            node = first + index
            linkage, name = self._node_names(node)
            frames.append(SourceFrame(linkage, name, file, line, column))
            file = self._path(call_file[node])
            line, column = call_line[node], call_column[node]
        if len(self._states) > STATES_KEPT:
            self._states.clear()
        self._states[state] = frames
        return frames

    def frames_at(self, address: int) -> list[SourceFrame]:
        """The chain at `address` (not remembered here: the Symbolizer above
        keeps answers per address; states are shared between addresses)."""
        found = self.gsym_frames(address)
        if found is None:
            # No DWARF function here in the GSYM: padding, assembler, symbols
            # alone. Rare, and the DWARF source answers these cheaply (one
            # unit's line table at most).
            return self._elf.frames_at(address)
        symbol = self._elf.symtab.at(address)
        if symbol is None:
            frames = list(found)
        elif not found:
            frames = [SourceFrame(symbol.name, None, symbol.file, 0, 0)]
        else:
            # llvm names the outermost frame from the symbol table (`main.cold`).
            last = found[-1]
            frames = found[:-1]
            frames.append(
                SourceFrame(
                    symbol.name,
                    last.name,
                    last.file if last.file is not None else symbol.file,
                    last.line,
                    last.column,
                )
            )
        return frames

    def data_at(self, address: int) -> DataSymbol | None:
        return self._elf.data_at(address)

    def address_of(self, name: str) -> int | None:
        """From the binary's symbol table, as the DWARF source answers (the GSYM
        holds the same names, minus the data symbols)."""
        return self._elf.address_of(name)

    def close(self) -> None:
        if self._index is not None:
            self._index.release()
        self.extras.release()
        # A table slice still referenced somewhere keeps the mmap: it closes when that goes.
        with contextlib.suppress(BufferError):
            self._extras_map.close()
        self.reader.close()
        self._elf.close()


def gsym_source_factory(cache: GsymCache, progress: ProgressSink | None = None) -> SourceFactory:
    """A factory for `SymbolizerOptions.source_factories`: the cached GSYM of a
    module with DWARF, built on first use (`progress` hears how a build goes);
    None (the next factory answers) when the module has no build ID or no DWARF,
    or the cache cannot be used."""

    def factory(files: ModuleFiles) -> GsymSource | None:
        from stackmark.elf import ElfFile

        if not files.build_id:
            return None
        try:
            with ElfFile.open(files.dwarf_file) as elf:
                if not elf.has_dwarf:
                    return None
            entry = cache.get_or_build(
                files.build_id,
                files.dwarf_file,
                progress,
                load_supplementary=files.load_supplementary,
                load_split=files.load_split,
            )
            return GsymSource(str(entry.gsym), str(entry.extras), files, entry.identity)
        except (StackmarkError, OSError):
            return None

    return factory
