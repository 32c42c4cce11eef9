"""GSYM extras (`.gsymx`): what the cache needs beside a GSYM file that GSYM cannot hold.

A GSYM keeps one name per function or inlined call and no columns, while
`stackmark symbolize` prints what llvm-symbolizer prints from DWARF: both
the linkage and the short name, columns, call-site columns. The extras file
carries exactly that, keyed to the GSYM it was made with:

    header (48 bytes, little-endian)
      0  4  magic "SMGX"
      4  2  version (1)
      6  2  zero
      8  8  size of the paired GSYM file
     16  4  CRC-32 of the paired GSYM file
     20  4  number of functions (= the GSYM's NumAddresses)
     24  4  number of nodes
     28  4  number of column points
     32  4  string table size
     36 12  zero
    u32 first_node[functions + 1]   nodes of function i: first_node[i]..first_node[i+1]
    u32 linkage[nodes]               string offset + 1 (0: none)
    u32 name[nodes]                  string offset + 1 (0: none)
    u32 call_column[nodes]
    u64 column_address[points]       ascending
    u32 column[points]               0xFFFFFFFF: no line row (a gap between sequences)
    string table                     NUL-terminated UTF-8

A function's nodes are its inline tree in the GSYM's depth-first order, the
root (the function itself) first; a function from the symbol table alone
has none. The column at an address is that of the last column point at or
before it: the points are the DWARF line rows where the column changes
and the ends of line sequences, so the answer is the column of the row
llvm's line-table lookup picks.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_right
from dataclasses import dataclass

from stackmark.formats.gsym.codec import Buffer, RecordError

MAGIC = b"SMGX"
VERSION = 1
NO_COLUMN = 0xFFFFFFFF
_HEADER = struct.Struct("<4sHHQIIIII12x")
_LITTLE_HOST = sys.byteorder == "little"


@dataclass(frozen=True, slots=True)
class NodeExtra:
    """Names and call-site column of one function or inlined call, as DWARF gives them."""

    linkage_name: str | None
    name: str | None
    call_column: int = 0


def gsym_fingerprint(gsym: Buffer) -> tuple[int, int]:
    """(size, CRC-32) that binds an extras file to its GSYM."""
    return len(gsym), zlib.crc32(gsym) & 0xFFFFFFFF


class ExtrasBuilder:
    """Collects per-function nodes and column points; `encode` gives the bytes."""

    def __init__(self) -> None:
        self._strings: dict[str, int] = {}
        self._strtab = bytearray()
        self.first_node = array("I", [0])
        self.linkage = array("I")
        self.name = array("I")
        self.call_column = array("I")
        self.column_address = array("Q")
        self.column = array("I")

    def _string(self, text: str | None) -> int:
        if text is None:
            return 0
        offset = self._strings.get(text)
        if offset is None:
            offset = len(self._strtab)
            self._strtab += text.encode("utf-8", "surrogateescape") + b"\0"
            self._strings[text] = offset
        return offset + 1

    def add_function(self, nodes: list[NodeExtra]) -> None:
        for node in nodes:
            self.linkage.append(self._string(node.linkage_name))
            self.name.append(self._string(node.name))
            self.call_column.append(node.call_column & 0xFFFFFFFF)
        self.first_node.append(len(self.linkage))

    def set_columns(self, points: list[tuple[int, int]]) -> None:
        """Column points (address, column or NO_COLUMN), sorted by address."""
        self.column_address = array("Q", (a for a, _ in points))
        self.column = array("I", (c for _, c in points))

    def encode(self, gsym: Buffer) -> bytes:
        size, crc = gsym_fingerprint(gsym)
        parts = [
            _HEADER.pack(
                MAGIC,
                VERSION,
                0,
                size,
                crc,
                len(self.first_node) - 1,
                len(self.linkage),
                len(self.column_address),
                len(self._strtab),
            )
        ]
        for table in (
            self.first_node,
            self.linkage,
            self.name,
            self.call_column,
            self.column_address,
            self.column,
        ):
            copy = array(table.typecode, table)
            if not _LITTLE_HOST:
                copy.byteswap()
            parts.append(copy.tobytes())
        parts.append(bytes(self._strtab))
        return b"".join(parts)


class Extras:
    """An extras file read back and checked against its GSYM."""

    def __init__(self, data: Buffer, gsym: Buffer, source: str = "<extras>"):
        self.source = source
        if len(data) < _HEADER.size:
            raise RecordError("extras file is shorter than its header", offset=0, source=source)
        magic, version, _, size, crc, nfuncs, nnodes, npoints, strsize = _HEADER.unpack_from(
            data, 0
        )
        if magic != MAGIC:
            raise RecordError("not a stackmark GSYM extras file", offset=0, source=source)
        if version != VERSION:
            raise RecordError(f"unsupported extras version {version}", offset=4, source=source)
        if (size, crc) != gsym_fingerprint(gsym):
            raise RecordError("extras file belongs to another GSYM file", offset=8, source=source)
        pos = _HEADER.size
        need = 4 * (nfuncs + 1) + 12 * nnodes + 12 * npoints + strsize
        if pos + need != len(data):
            raise RecordError(
                f"extras file has {len(data)} bytes, its header implies {pos + need}",
                offset=pos,
                source=source,
            )

        def take(typecode: str, count: int) -> array[int]:
            nonlocal pos
            table = array(typecode)
            table.frombytes(bytes(data[pos : pos + count * table.itemsize]))
            if not _LITTLE_HOST:
                table.byteswap()
            pos += count * table.itemsize
            return table

        self.num_functions = nfuncs
        self.first_node = take("I", nfuncs + 1)
        self.linkage = take("I", nnodes)
        self.name = take("I", nnodes)
        self.call_column = take("I", nnodes)
        self.column_address = take("Q", npoints)
        self.column = take("I", npoints)
        self._strtab = bytes(data[pos : pos + strsize])
        self._strings: dict[int, str | None] = {0: None}
        if (
            self.first_node[0] != 0
            or self.first_node[nfuncs] != nnodes
            or any(self.first_node[i] > self.first_node[i + 1] for i in range(nfuncs))
        ):
            raise RecordError(
                "extras node table is not ascending", offset=_HEADER.size, source=source
            )

    def string(self, ref: int) -> str | None:
        found = self._strings.get(ref, "")
        if found != "":
            return found
        start = ref - 1
        if not 0 <= start < len(self._strtab):
            raise RecordError(f"extras string offset {start} is out of range", source=self.source)
        end = self._strtab.find(b"\0", start)
        text = self._strtab[start : end if end >= 0 else len(self._strtab)].decode(
            "utf-8", "surrogateescape"
        )
        self._strings[ref] = text
        return text

    def nodes(self, function: int) -> tuple[int, int]:
        """[first, end) node indexes of GSYM function `function`."""
        return self.first_node[function], self.first_node[function + 1]

    def node(self, index: int) -> NodeExtra:
        return NodeExtra(
            self.string(self.linkage[index]),
            self.string(self.name[index]),
            self.call_column[index],
        )

    def column_at(self, address: int) -> int | None:
        """The DWARF column at `address` (None: no line row covers it)."""
        i = bisect_right(self.column_address, address) - 1
        if i < 0:
            return None
        value = self.column[i]
        return None if value == NO_COLUMN else value
