"""Where variables and functions are declared, from a module's DWARF.

The symbolizer answers a data address with the symbol covering it, which
has no source location, and a `{{{symbol}}}` element names a function
that may have been inlined everywhere (no symbol, no address). Front ends
(the language server's go to definition, llvm-symbolizer-stackmark's
declaration line of a `DATA` answer) ask `Symbolizer.declaration_of`
(stackmark/symbols/declarations.py), which builds this index from a
module's DWARF once, on the first such request for that module. It keeps:

* variables by address: every DW_TAG_variable whose location is a fixed
  address (DW_OP_addr or DW_OP_addrx), with its DW_AT_decl_file and
  DW_AT_decl_line;
* variables by name: file-scope declarations without a location (a
  program's copy of a shared library's variable has only its `extern`
  declaration in the program's DWARF);
* functions by linkage name (or plain name, for C): DW_TAG_subprogram
  entries anywhere in the tree.

A DIE without its own DW_AT_decl_* takes them from the DIE its
DW_AT_specification or DW_AT_abstract_origin names (C++ members defined
out of class, abstract instances of inlined functions), as llvm does.

Only the file's own DIEs are walked: the split units of split DWARF (in
.dwo files) are not read, so the reader is given no `load_split`.
"""

from __future__ import annotations

import bisect

from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Abbrev
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.dwarf.unit import Die, Unit
from stackmark.errors import StackmarkError

DW_OP_addr = 0x03
DW_OP_addrx = 0xA1
_FOLLOW = (C.DW_AT_specification, C.DW_AT_abstract_origin)
_MAX_HOPS = 8  # a reference chain longer than this is corrupt


class DeclarationIndex:
    """Declarations of the variables and functions in one file's DWARF."""

    def __init__(self, path: str, load_supplementary: SupplementaryLoad | None = None) -> None:
        """Read the DWARF of the file at `path` (a dwz supplementary file is asked of
        `load_supplementary`; None: not read)."""
        self._starts: list[int] = []
        self._places: list[tuple[str, int]] = []
        self._variables: dict[str, tuple[str, int]] = {}
        self._functions: dict[str, tuple[str, int]] = {}
        reader = DwarfReader.open(path, load_supplementary=load_supplementary)
        found: dict[int, tuple[str, int]] = {}
        for unit in reader.units():
            try:
                self._read_unit(unit, found)
            except StackmarkError:
                continue  # a damaged unit: the others still count
        for address in sorted(found):
            self._starts.append(address)
            self._places.append(found[address])

    def _read_unit(self, unit: Unit, found: dict[int, tuple[str, int]]) -> None:
        for die in unit.dies():
            if die.tag == C.DW_TAG_subprogram:
                name = _attribute(unit, die, "linkage") or _attribute(unit, die, "name")
                place = _place(unit, die)
                # A definition (with code) wins over a declaration.
                if (
                    isinstance(name, str)
                    and place is not None
                    and (name not in self._functions or C.DW_AT_low_pc in die.values)
                ):
                    self._functions[name] = place
                continue
            if die.tag != C.DW_TAG_variable:
                continue
            expression = die.values.get(C.DW_AT_location)
            if not isinstance(expression, bytes | bytearray) or not expression:
                if die.depth == 1:  # a declaration at file scope (extern)
                    name = _attribute(unit, die, "linkage") or _attribute(unit, die, "name")
                    place = _place(unit, die)
                    if isinstance(name, str) and place is not None:
                        self._variables.setdefault(name, place)
                continue
            address = _fixed_address(unit, bytes(expression))
            place = _place(unit, die) if address is not None else None
            if address is not None and place is not None:
                found.setdefault(address, place)

    def variable(self, address: int, name: str = "") -> tuple[str, int] | None:
        """(file, line) of the variable starting at `address`, else of the one declared
        as `name` (its linkage name)."""
        index = bisect.bisect_left(self._starts, address)
        if index < len(self._starts) and self._starts[index] == address:
            return self._places[index]
        return self._variables.get(name) if name else None

    def function(self, name: str) -> tuple[str, int] | None:
        """(file, line) of the function whose linkage (or plain) name is `name`."""
        return self._functions.get(name)


def _attribute(unit: Unit, die: Die, which: str) -> object:
    """A name of `die`, looked for along its specification/origin chain."""
    attrs = (
        (C.DW_AT_linkage_name, C.DW_AT_MIPS_linkage_name) if which == "linkage" else (C.DW_AT_name,)
    )
    abbrev, values = die.abbrev, die.values
    for _ in range(_MAX_HOPS):
        for attr in attrs:
            if attr in values:
                return unit.string_attr(abbrev, values, attr)
        target = _reference(unit, abbrev, values)
        if target is None:
            return None
        found = unit.die(target)
        if found[0] is None:
            return None
        abbrev, values = found[0], found[1]
    return None


def _place(unit: Unit, die: Die) -> tuple[str, int] | None:
    """(file, line) of `die`, from it or along its specification/origin chain."""
    abbrev, values = die.abbrev, die.values
    for _ in range(_MAX_HOPS):
        file_index = unit.unsigned_attr(abbrev, values, C.DW_AT_decl_file)
        line = unit.unsigned_attr(abbrev, values, C.DW_AT_decl_line)
        if file_index is not None and line:
            path = unit.file_name(file_index)
            return (path, line) if path else None
        target = _reference(unit, abbrev, values)
        if target is None:
            return None
        found = unit.die(target)
        if found[0] is None:
            return None
        abbrev, values = found[0], found[1]
    return None


def _reference(unit: Unit, abbrev: Abbrev, values: dict[int, object]) -> int | None:
    """The offset a DIE's specification or abstract origin points at, in this unit."""
    for attr in _FOLLOW:
        if attr in values:
            target = unit.ref_attr(abbrev, values, attr)
            if target is not None and unit.header.die_offset <= target < unit.header.end:
                return target
    return None


def _fixed_address(unit: Unit, expression: bytes) -> int | None:
    """The address of a location expression that is just DW_OP_addr/DW_OP_addrx."""
    size = unit.header.addr_size
    if expression[0] == DW_OP_addr and len(expression) == 1 + size:
        return int.from_bytes(expression[1:], "little" if unit.enc.endian == "<" else "big")
    if expression[0] == DW_OP_addrx:
        try:
            index, end = read_uleb(expression, 1)
        except IndexError:  # a truncated expression
            return None
        if end == len(expression):
            return unit.indexed_address(index)
    return None
