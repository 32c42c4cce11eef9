"""The symbol source over ELF files: DWARF when there is some, the symbol table always.

Code addresses are answered the way llvm-symbolizer 19 answers them
(DWARFContext::getInliningInfoForAddress, then SymbolizableObjectFile):

1. the compile unit comes from .debug_aranges (merged with unit ranges);
2. the chain is the innermost subroutine DIE containing the address and
   its enclosing inlined subroutines, up to the subprogram;
3. the innermost frame takes file/line/column from the line table (in a
   relocatable object, from the sequences of the first code section holding
   the address: llvm's section index); each outer frame takes them from the
   DW_AT_call_* of the frame inside it;
4. with no subroutine DIE, the line table alone gives one nameless frame;
5. finally the outermost frame's raw name is replaced by the symbol-table
   symbol covering the address, when there is one (so a hot/cold split
   reads `main.cold`), and a frame without a file takes the STT_FILE name
   of a local symbol.

With `relative_paths`, files are named as llvm's `--relativenames` names
them: without the compilation directory.

`frame_starts` gives, frame for frame, what llvm's JSON output adds to each
(DILineInfo's StartAddress, StartFileName, StartLine and Discriminator): the
subroutine's DW_AT_low_pc (the symbol's start for the outermost frame when
the symbol table has one), its DW_AT_decl_file and DW_AT_decl_line, and the
line-table row's discriminator for the innermost frame, the inlined call's
for the others.

The symbol table is the *binary's* (llvm reads it from the object it was
asked about, and DWARF from the debug file next to it); `.dynsym` stands
in when `.symtab` was stripped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stackmark.elf import ET_REL, ElfFile
from stackmark.elf_relocations import code_section_at
from stackmark.model import DataSymbol, SourceFrame
from stackmark.plain import Record
from stackmark.symbols.source import ModuleFiles
from stackmark.symbols.symtab import SymbolTable

if TYPE_CHECKING:
    from stackmark.dwarf.functions import Function
    from stackmark.dwarf.lines import LineRow, LineTable
    from stackmark.dwarf.reader import DwarfReader


class FrameStart(Record):
    """Where a frame's subroutine starts, and its discriminator (see the module docstring).

    `address` and `file` are None when unknown, `line` and `discriminator` 0."""

    __slots__ = _fields = __match_args__ = ("address", "file", "line", "discriminator")
    address: int | None
    file: str | None
    line: int
    discriminator: int

    def __init__(self, address: int | None, file: str | None, line: int, discriminator: int):
        self.address = address
        self.file = file
        self.line = line
        self.discriminator = discriminator


class ElfSymbolSource:
    """DWARF + symbol table answers for one module (see the module docstring)."""

    def __init__(
        self, files: ModuleFiles, *, relative_paths: bool = False, dwarf_on_first_use: bool = False
    ):
        """`dwarf_on_first_use`: open the DWARF reader when an answer needs it, not
        here (where a damaged or hostile DWARF section is reported at once, as the
        module's error)."""
        self.files = files
        self._relative = relative_paths
        self._binary = ElfFile.open(files.binary)
        self._debug = ElfFile.open(files.debug) if files.debug else None
        self._dwarf_elf = self._debug or self._binary
        self._has_dwarf = self._dwarf_elf.has_dwarf
        # The GSYM cache answers through this source's symbol table and needs
        # DWARF only for rare addresses (importing the reader alone costs a warm
        # start about 13 ms): it asks for the reader on first use.
        self._dwarf: DwarfReader | None = None
        self._symtab: SymbolTable | None = None
        if not dwarf_on_first_use:
            self._open_dwarf()

    @property
    def description(self) -> str:
        if self.has_debug_info:
            return f"DWARF in {self.files.dwarf_file}"
        return f"symbol table of {self.files.binary}"

    @property
    def has_debug_info(self) -> bool:
        return self._has_dwarf

    @property
    def dwarf(self) -> DwarfReader | None:
        if self._dwarf is None:
            self._open_dwarf()
        return self._dwarf

    def _open_dwarf(self) -> None:
        if self._has_dwarf:
            from stackmark.dwarf.reader import DwarfReader

            files = self.files
            self._dwarf = DwarfReader(
                self._dwarf_elf,
                load_supplementary=files.load_supplementary,
                load_split=files.load_split,
            )

    @property
    def symtab(self) -> SymbolTable:
        if self._symtab is None:
            self._symtab = SymbolTable(self._binary)
        return self._symtab

    def frames_at(self, address: int) -> list[SourceFrame]:
        frames = self._dwarf_frames(address) if self._has_dwarf else []
        symbol = self.symtab.at(address)
        if symbol is None:
            return frames
        if not frames:
            return [SourceFrame(symbol.name, None, symbol.file, 0, 0)]
        last = frames[-1]
        frames[-1] = SourceFrame(
            symbol.name,
            last.name,
            last.file if last.file is not None else symbol.file,
            last.line,
            last.column,
        )
        return frames

    def _located(self, address: int) -> tuple[list[Function], LineTable | None, LineRow | None]:
        """The inline chain at `address` (innermost first), its unit's line table and
        the row there: what `_dwarf_frames` and `_dwarf_starts` read (llvm's
        getInliningInfoForAddress fills both at once). No chain and no row when no
        unit covers the address."""
        dwarf = self.dwarf
        assert dwarf is not None
        unit = dwarf.unit_for_address(address)
        if unit is None:
            return [], None, None
        chain = unit.code_unit.inline_chain(address)
        table = unit.line_table()
        section = code_section_at(self._binary, address) if self._binary.e_type == ET_REL else None
        return chain, table, table.lookup(address, section) if table is not None else None

    def _dwarf_frames(self, address: int) -> list[SourceFrame]:
        chain, table, row = self._located(address)
        if not chain:
            if row is None or table is None or not table.has_file(row.file):
                return []
            path = table.file_name(row.file, relative=self._relative)
            return [SourceFrame(None, None, path, row.line, row.column)]
        frames: list[SourceFrame] = []
        call_file = call_line = call_column = 0
        for i, function in enumerate(chain):
            file: str | None = None
            line = column = 0
            if i == 0:
                if row is not None and table is not None and table.has_file(row.file):
                    file = table.file_name(row.file, relative=self._relative)
                    line, column = row.line, row.column
            else:
                if table is not None:
                    file = table.file_name(call_file, relative=self._relative)
                line, column = call_line, call_column
            frames.append(SourceFrame(function.linkage_name, function.name, file, line, column))
            call_file, call_line, call_column = (
                function.call_file,
                function.call_line,
                function.call_column,
            )
        return frames

    def frame_starts(self, address: int, *, inlines: bool = True) -> list[FrameStart]:
        """One `FrameStart` per frame of `frames_at(address)`, in the same order; without
        `inlines`, the one start of llvm's --no-inlines frame (the innermost
        subroutine's, with the symbol's start when there is a symbol)."""
        starts = self._dwarf_starts(address) if self._has_dwarf else []
        if not inlines:
            starts = starts[:1]
        symbol = self.symtab.at(address)
        if symbol is None:
            return starts
        if not starts:
            return [FrameStart(symbol.address, None, 0, 0)]
        last = starts[-1]
        starts[-1] = FrameStart(symbol.address, last.file, last.line, last.discriminator)
        return starts

    def _dwarf_starts(self, address: int) -> list[FrameStart]:
        """The chain `_dwarf_frames` walks, read for its starts."""
        chain, table, row = self._located(address)
        found = row is not None and table is not None and table.has_file(row.file)
        discriminator = row.discriminator if row is not None and found else 0
        if not chain:
            return [FrameStart(None, None, 0, discriminator)] if found else []
        starts: list[FrameStart] = []
        for function in chain:
            file = function.start_file(relative=self._relative)
            starts.append(FrameStart(function.low_pc, file, function.decl_line, discriminator))
            discriminator = function.call_discriminator
        return starts

    def data_at(self, address: int) -> DataSymbol | None:
        """llvm's answer, except that an initialized TLS variable's image is named
        where llvm only has a zero-size symbol (or nothing) to offer."""
        symbol = self.symtab.at(address)
        if symbol is None or symbol.size == 0:
            tls = self.symtab.tls_at(address)
            if tls is not None:
                return DataSymbol(*tls)
        if symbol is not None:
            return DataSymbol(symbol.name, symbol.address, symbol.size)
        return None

    def address_of(self, name: str) -> int | None:
        """From the binary's symbol table (the one that names frames)."""
        return self.symtab.address_of(name)

    def close(self) -> None:
        self._binary.close()
        if self._debug is not None:
            self._debug.close()


def elf_source_factory(files: ModuleFiles) -> ElfSymbolSource:
    """The default factory: always able to answer from an ELF file."""
    return ElfSymbolSource(files)


def relative_elf_source_factory(files: ModuleFiles) -> ElfSymbolSource:
    """For `--relativenames`: files named without the compilation directory.

    Always DWARF, never a GSYM cache entry: GSYM keeps only the absolute path."""
    return ElfSymbolSource(files, relative_paths=True)
