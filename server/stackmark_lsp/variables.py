"""Where a global variable is declared, by its address: for go-to-definition on `data`.

The symbolizer answers a data address with the symbol covering it, which
has no source location. This index reads a module's DWARF once (in a
worker thread, on the first `data` definition asked for that module):
every DW_TAG_variable whose location is a fixed address (DW_OP_addr or
DW_OP_addrx) gives its address and its DW_AT_decl_file/DW_AT_decl_line
(taken from the declaration its DW_AT_specification names when the
definition has none, as for C++ static members).
"""

from __future__ import annotations

import bisect

from stackmark.dwarf import constants as C
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.sections import read_uleb
from stackmark.dwarf.unit import Unit
from stackmark.errors import StackmarkError

DW_OP_addr = 0x03
DW_OP_addrx = 0xA1


class VariableIndex:
    """Declarations of the variables at fixed addresses in one file's DWARF."""

    def __init__(self, path: str) -> None:
        self._starts: list[int] = []
        self._places: list[tuple[str, int]] = []
        reader = DwarfReader.open(path)
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
            if die.tag != C.DW_TAG_variable:
                continue
            expression = die.values.get(C.DW_AT_location)
            if not isinstance(expression, bytes | bytearray) or not expression:
                continue
            address = _fixed_address(unit, bytes(expression))
            if address is None:
                continue
            file_index = die.unsigned(C.DW_AT_decl_file)
            line = die.unsigned(C.DW_AT_decl_line)
            if file_index is None or not line:
                target = die.reference(C.DW_AT_specification)
                if target is not None and unit.header.die_offset <= target < unit.header.end:
                    abbrev, values, _ = unit.die(target)
                    if abbrev is not None:
                        file_index = unit.unsigned_attr(abbrev, values, C.DW_AT_decl_file)
                        line = unit.unsigned_attr(abbrev, values, C.DW_AT_decl_line)
            if file_index is None or not line:
                continue
            path = unit.file_name(file_index)
            if path:
                found.setdefault(address, (path, line))

    def declaration(self, address: int) -> tuple[str, int] | None:
        """(file, line) of the variable starting at `address`."""
        index = bisect.bisect_left(self._starts, address)
        if index < len(self._starts) and self._starts[index] == address:
            return self._places[index]
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
