"""Names from the ELF symbol table, chosen the way llvm-symbolizer chooses them.

llvm (SymbolizableObjectFile) keeps the symbols of `.symtab`, or of
`.dynsym` when there is no `.symtab`, that

* are defined in a real section (not undefined, absolute or common),
* have type NOTYPE, FUNC, OBJECT or GNU_IFUNC (so no TLS, section or
  file symbols), and are not the null symbol or an ARM/AArch64/RISC-V
  mapping symbol (`$x`, `$d`, ...) or RISC-V's fake label `.L0 `;

sorts them by address then size (stably, so symbol-table order breaks
ties) and keeps, for each address, the last one: the largest. An address
then belongs to the closest symbol at or below it, if that symbol's size
reaches it, or if its size is 0 (a zero-size symbol covers everything up
to the next symbol). STT_FILE symbols name the source file of the local
symbols that follow them.

Data lookups use the same table (objects, vtables and typeinfo are
STT_OBJECT). TLS symbols (STT_TLS) hold offsets into the TLS template,
not addresses, so llvm never names them; `tls_at` names an address in
the initial image of initialized TLS data (.tdata), where llvm can only
offer the zero-size symbol before it.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections.abc import MutableSequence

from stackmark.elf import (
    EM_AARCH64,
    EM_ARM,
    EM_RISCV,
    PT_TLS,
    SHT_DYNSYM,
    SHT_SYMTAB,
    STB_LOCAL,
    STT_FILE,
    STT_FUNC,
    STT_GNU_IFUNC,
    STT_NOTYPE,
    STT_OBJECT,
    STT_TLS,
    SYM,
    ElfFile,
    Section,
)
from stackmark.errors import FormatError

_KEPT_TYPES = frozenset({STT_NOTYPE, STT_FUNC, STT_OBJECT, STT_GNU_IFUNC})
_SHN_LORESERVE = 0xFF00
_MAPPING_MACHINES = frozenset({EM_ARM, EM_AARCH64, EM_RISCV})
_PICK_SYMBOL = {
    is_64: layout.picker("st_name", "st_info", "st_shndx", "st_value", "st_size")
    for is_64, layout in SYM.items()
}


class SymbolEntry:
    """One kept symbol: start address, size (0 = up to the next symbol), raw name."""

    __slots__ = ("address", "file", "name", "size")

    def __init__(self, address: int, size: int, name: str, file: str | None):
        self.address = address
        self.size = size
        self.name = name
        self.file = file  # STT_FILE name for local symbols, when known

    def __repr__(self) -> str:
        return f"<SymbolEntry {self.name} 0x{self.address:x}+{self.size}>"


def _column(words: memoryview) -> array[int]:
    """A strided view of 64-bit words as an array (copied at C speed)."""
    column = array("Q")
    column.frombytes(words.tobytes())
    return column


def _is_mapping_symbol(name: str) -> bool:
    return name.startswith("$") and (len(name) == 2 or name[2] == ".")


RISCV_FAKE_LABEL = ".L0 "
"""The label RISC-V assemblers keep in an object's symbol table as the anchor
of relocated label differences; llvm (ELFObjectFile::getSymbolFlags) marks it
format-specific, and the symbolizer skips it like a mapping symbol."""


class SymbolTable:
    """llvm's view of a file's symbol table (see the module docstring).

    Why columns: a large program has tens of thousands of symbols, and
    building a sorted table costs tens of milliseconds in Python, more than
    a first answer may take. The raw table is read as three columns (value,
    size, packed name/info/section) at C speed; the first few lookups scan
    the columns, and a sorted index is built once lookups keep coming.
    Names are decoded only for symbols that answer.
    """

    _SCANS_BEFORE_INDEX = 4

    def __init__(self, elf: ElfFile):
        self._elf = elf
        section = elf.section(".symtab")
        if section is None or section.type != SHT_SYMTAB:
            section = elf.section(".dynsym")
        self._values: MutableSequence[int] = []
        self._sizes: MutableSequence[int] = []
        # name offset | info << 32 | section index << 48, one per symbol
        self._packed: MutableSequence[int] = []
        self._strtab = b""
        if section is not None and section.type in (SHT_SYMTAB, SHT_DYNSYM):
            self._read_columns(elf, section)
        self._mapping = elf.machine in _MAPPING_MACHINES
        self._riscv = elf.machine == EM_RISCV
        self._scans = 0
        self._kept: list[int] | None = None  # symbol indexes, sorted, one per address
        self._kept_addresses: list[int] = []
        self._file_indexes: list[int] | None = None
        self._entries: dict[int, SymbolEntry] = {}
        self._by_name: dict[str, int] | None = None
        tls = next((s for s in elf.segments if s.type == PT_TLS), None)
        self.tls_base = tls.vaddr if tls is not None else None
        self.tls_image_size = tls.filesz if tls is not None else 0

    def _read_columns(self, elf: ElfFile, section: Section) -> None:
        fmt = SYM[elf.is_64].compiled(elf.endian)
        entsize = section.entsize or fmt.size
        if entsize != fmt.size:
            raise FormatError(
                f"{section.name} entry size {entsize} is not {fmt.size}",
                offset=section.offset,
                source=elf.name,
            )
        data = elf.section_data(section)
        data = data[: len(data) - len(data) % fmt.size]
        if 0 < section.link < len(elf.sections):
            self._strtab = elf.section_data(elf.sections[section.link])
        if elf.endian == "<" and sys.byteorder == "little":
            # Elf64_Sym / Elf32_Sym (stackmark.elf) as words of their widest fields.
            if elf.is_64:  # st_name|st_info|st_other|st_shndx, st_value, st_size
                words = memoryview(data).cast("Q")
                # Columns as arrays (memory copies): lists would make 70,000
                # int objects for a large program before the first lookup.
                self._packed = _column(words[0::3])
                self._values = _column(words[1::3])
                self._sizes = _column(words[2::3])
            else:  # st_name, st_value, st_size, st_info|st_other|st_shndx
                words = memoryview(data).cast("I")
                names = words[0::4].tolist()
                self._values = words[1::4].tolist()
                self._sizes = words[2::4].tolist()
                tails = words[3::4].tolist()
                self._packed = [
                    n | (t & 0xFF) << 32 | (t >> 16) << 48
                    for n, t in zip(names, tails, strict=True)
                ]
            return
        pick = _PICK_SYMBOL[elf.is_64]
        for fields in fmt.iter_unpack(data):
            name, info, shndx, value, size = pick(fields)
            self._packed.append(name | info << 32 | shndx << 48)
            self._values.append(value)
            self._sizes.append(size)

    def __len__(self) -> int:
        return len(self._build_index())

    def _name(self, offset: int) -> str:
        strtab = self._strtab
        if offset >= len(strtab):
            return ""
        end = strtab.find(b"\0", offset)
        return strtab[offset : end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape")

    def _is_kept(self, index: int) -> bool:
        word = self._packed[index]
        if index == 0 or not 0 < word >> 48 < _SHN_LORESERVE:
            return False
        if (word >> 32) & 0xF not in _KEPT_TYPES:
            return False
        if not self._mapping:
            return True
        name = self._name(word & 0xFFFFFFFF)
        return not (_is_mapping_symbol(name) or (self._riscv and name == RISCV_FAKE_LABEL))

    def _build_index(self) -> list[int]:
        if self._kept is None:
            values, sizes = self._values, self._sizes
            if self._mapping:
                kept = [i for i in range(len(values)) if self._is_kept(i)]
            else:  # `_is_kept` without a call per symbol (tens of thousands of them)
                kept = [
                    i
                    for i, word in enumerate(self._packed)
                    if i and 0 < word >> 48 < _SHN_LORESERVE and (word >> 32) & 0xF in _KEPT_TYPES
                ]
            # By (address, size, index): one integer key per symbol, sorted in C.
            low = max(len(values), 1).bit_length()
            wide = low + max((sizes[i] for i in kept), default=0).bit_length()
            keys = [values[i] << wide | sizes[i] << low | i for i in kept]
            keys.sort()
            mask = (1 << low) - 1
            order = [key & mask for key in keys]
            # The last (largest) symbol at an address wins: a dict keeps the last
            # value per key, and its keys in ascending order.
            by_address = dict(zip([values[i] for i in order], order, strict=True))
            self._kept_addresses = list(by_address)
            self._kept = list(by_address.values())  # last: it is what other threads test
        return self._kept

    def _best_at_or_below(self, address: int) -> int | None:
        """The symbol llvm picks for `address` before its size check (index), by scanning."""
        values = self._values
        limit = address
        while True:
            best = max(filter(limit.__ge__, values), default=None)  # v <= limit, in C
            if best is None:
                return None
            candidates = []
            i = values.index(best)
            while True:
                if self._is_kept(i):
                    candidates.append(i)
                try:
                    i = values.index(best, i + 1)
                except ValueError:
                    break
            if candidates:
                sizes = self._sizes
                return max(candidates, key=lambda i: (sizes[i], i))
            if best == 0:
                return None
            limit = best - 1

    def _file_of(self, index: int) -> str | None:
        if (self._packed[index] >> 36) & 0xF != STB_LOCAL:
            return None
        if self._file_indexes is None:
            self._file_indexes = [
                i for i, word in enumerate(self._packed) if (word >> 32) & 0xF == STT_FILE
            ]
        i = bisect_right(self._file_indexes, index)
        if i == 0:
            return None
        return self._name(self._packed[self._file_indexes[i - 1]] & 0xFFFFFFFF)

    def _entry(self, index: int) -> SymbolEntry:
        """The entry of symbol `index`, made once (many addresses fall in one symbol)."""
        entry = self._entries.get(index)
        if entry is None:
            entry = self._entries[index] = SymbolEntry(
                self._values[index],
                self._sizes[index],
                self._name(self._packed[index] & 0xFFFFFFFF),
                self._file_of(index),
            )
        return entry

    @property
    def entries(self) -> list[SymbolEntry]:
        """Every kept symbol, by address."""
        return [self._entry(i) for i in self._build_index()]

    def at(self, address: int) -> SymbolEntry | None:
        """The symbol covering `address` by llvm's rule, or None."""
        if self._kept is None and self._scans < self._SCANS_BEFORE_INDEX:
            self._scans += 1
            found = self._best_at_or_below(address)
        else:
            kept = self._build_index()
            n = bisect_right(self._kept_addresses, address) - 1
            found = kept[n] if n >= 0 else None
        if found is None:
            return None
        size = self._sizes[found]
        if size and self._values[found] + size <= address:
            return None
        return self._entry(found)

    def address_of(self, name: str) -> int | None:
        """The address of the kept symbol named `name` (raw, as the table spells it), or
        None; of a name kept at several addresses, the highest. The index by name is built
        on the first question."""
        by_name = self._by_name
        if by_name is None:
            packed, values = self._packed, self._values
            by_name = {self._name(packed[i] & 0xFFFFFFFF): values[i] for i in self._build_index()}
            self._by_name = by_name  # whole: it is what other threads test
        return by_name.get(name)

    def tls_at(self, address: int) -> tuple[str, int, int] | None:
        """(name, start address, size) of the initialized TLS variable whose initial
        image (.tdata) holds `address`, or None. (.tbss has no addresses of its own:
        its range overlaps the sections after it.)"""
        if self.tls_base is None or not 0 <= address - self.tls_base < self.tls_image_size:
            return None
        offset = address - self.tls_base
        best: int | None = None
        for i, word in enumerate(self._packed):
            if (word >> 32) & 0xF != STT_TLS or not 0 < word >> 48 < _SHN_LORESERVE:
                continue
            start, size = self._values[i], self._sizes[i]
            if start <= offset < start + max(size, 1) and (
                best is None or start > self._values[best]
            ):
                best = i
        if best is None:
            return None
        name = self._name(self._packed[best] & 0xFFFFFFFF)
        return name, self.tls_base + self._values[best], self._sizes[best]
