"""Read a GSYM file over mmap: tables, FunctionInfos, lookups (by address, and a
function's address by its name).

Layout of a version-1 file (all tables located from the header):

    header (48 bytes)
    address offsets     NumAddresses x AddrOffSize, sorted (ties allowed)
    (zero padding to 4)
    address-info offsets NumAddresses x u32: absolute offset of each FunctionInfo
    file table          u32 count, count x (u32 dir, u32 base) string offsets;
                        entry 0 is (0, 0) = "no file"
    string table        at StrtabOffset, StrtabSize bytes; offset 0 = ""
    FunctionInfos       each 4-aligned, in address-table order

Finding the function for an address follows LLVM: binary search the address
offsets (lower bound, step back when past the address, then back over
equal entries), then take the first entry with that start whose size is 0
or whose range holds the address. A size-0 entry therefore answers for
every address up to the next entry.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterator

from stackmark.binary import Buffer
from stackmark.errors import FormatError
from stackmark.formats.gsym.call_sites import decode_call_sites
from stackmark.formats.gsym.codec import RecordCursor, RecordError
from stackmark.formats.gsym.function_info import (
    CALL_SITE_INFO,
    INLINE_INFO,
    KNOWN_INFO_TYPES,
    LINE_TABLE_INFO,
    MERGED_FUNCTIONS_INFO,
    FunctionInfo,
    address_infos,
    decode_function_info,
    merged_records,
)
from stackmark.formats.gsym.header import (
    HEADER_LAYOUT,
    HEADER_SIZE,
    Header,
    decode_header,
    detect_byte_order,
)
from stackmark.formats.gsym.inline_info import inline_path
from stackmark.formats.gsym.line_table import lookup_line
from stackmark.formats.gsym.lookup import GsymLookupError, LookupResult, SourceLocation

_TYPECODES = {1: "B", 2: "H", 4: "I", 8: "Q"}
_HOST_LITTLE = sys.byteorder == "little"


def _int_array(data: Buffer, offset: int, count: int, size: int, little: bool) -> array[int]:
    """`count` unsigned integers of `size` bytes at `offset`, in host order."""
    table = array(_TYPECODES[size])
    if table.itemsize != size:  # pragma: no cover - exotic platforms
        raise RuntimeError(f"no {size}-byte array type on this platform")
    table.frombytes(bytes(data[offset : offset + count * size]))
    if size > 1 and little != _HOST_LITTLE:
        table.byteswap()
    return table


class GsymReader:
    """A GSYM file opened for reading.

    Open with `GsymReader.open(path)` (mmap) or `GsymReader.from_bytes(data)`.
    Every table is bounds-checked when opened; records are decoded lazily
    and checked as they are read.
    """

    def __init__(self, data: Buffer, source: str = "<memory>"):
        self._data = data
        self.source = source
        self.size = len(data)
        self.little = detect_byte_order(data, source)
        at, width = HEADER_LAYOUT.offsets["Version"], HEADER_LAYOUT.sizes["Version"]
        version = int.from_bytes(bytes(data[at : at + width]), "little" if self.little else "big")
        if version == 2:
            raise FormatError(
                "GSYM version 2 (LLVM 23 layout) is not supported; convert it with "
                "`llvm-gsymutil --output-version=1`",
                offset=at,
                source=source,
            )
        self.header: Header = decode_header(self._cursor(0, self.size))
        self._strings: dict[int, str] = {}
        self._by_name: dict[str, int] | None = None
        self._load_tables()

    # -- opening -----------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> GsymReader:
        name = os.fspath(path)
        try:
            with open(name, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size == 0:
                    raise RecordError("empty file, not a GSYM file", offset=0, source=name)
                data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise FormatError(f"cannot read: {exc.strerror or exc}", source=name) from None
        return cls(data, name)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<memory>") -> GsymReader:
        return cls(bytes(data), source)

    def close(self) -> None:
        if isinstance(self._data, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._data.close()

    def __enter__(self) -> GsymReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def data(self) -> Buffer:
        return self._data

    def _cursor(self, pos: int, end: int) -> RecordCursor:
        return RecordCursor(self._data, pos, end, little=self.little, source=self.source)

    # -- tables ------------------------------------------------------------------

    def _load_tables(self) -> None:
        hdr = self.header
        n = hdr.num_addresses
        size = self.size

        def need(offset: int, length: int, what: str) -> None:
            if offset + length > size:
                raise RecordError(
                    f"{what} ({length} bytes) runs past the end of the file ({size} bytes)",
                    offset=offset,
                    source=self.source,
                )

        pos = HEADER_SIZE  # already aligned for every legal AddrOffSize
        need(pos, n * hdr.addr_off_size, f"address table of {n} entries")
        self.addr_offsets = _int_array(self._data, pos, n, hdr.addr_off_size, self.little)
        pos += n * hdr.addr_off_size
        pos = (pos + 3) & ~3
        need(pos, n * 4, "address info offsets table")
        self.info_offsets = _int_array(self._data, pos, n, 4, self.little)
        pos += n * 4
        self.file_table_offset = pos
        need(pos, 4, "file table count")
        num_files = self._cursor(pos, size).u32("file table count")
        pos += 4
        need(pos, num_files * 8, f"file table of {num_files} entries")
        self._file_words = _int_array(self._data, pos, num_files * 2, 4, self.little)
        self.num_files = num_files
        need(hdr.strtab_offset, hdr.strtab_size, "string table")
        self._strtab_start = hdr.strtab_offset
        self._strtab_end = hdr.strtab_offset + hdr.strtab_size

    @property
    def num_addresses(self) -> int:
        return self.header.num_addresses

    @property
    def base_address(self) -> int:
        return self.header.base_address

    @property
    def uuid(self) -> bytes:
        return self.header.uuid

    def address(self, index: int) -> int:
        """Start address of the function at `index` of the address table."""
        return self.header.base_address + self.addr_offsets[index]

    def info_offset(self, index: int) -> int:
        return self.info_offsets[index]

    def string(self, offset: int) -> str:
        """The string at `offset` of the string table ("" when out of range)."""
        cached = self._strings.get(offset)
        if cached is not None:
            return cached
        start = self._strtab_start + offset
        end = self._strtab_end
        if offset >= end - self._strtab_start:
            return ""
        nul = self._data.find(b"\0", start, end)
        text = bytes(self._data[start : end if nul < 0 else nul]).decode("utf-8", "surrogateescape")
        self._strings[offset] = text
        return text

    def strings(self) -> Iterator[tuple[int, str]]:
        """Every (offset, string) of the string table, in order."""
        offset = 0
        length = self._strtab_end - self._strtab_start
        while offset < length:
            text = self.string(offset)
            yield offset, text
            offset += len(text.encode("utf-8", "surrogateescape")) + 1

    def file(self, index: int) -> tuple[int, int] | None:
        """(dir, base) string offsets of file `index`, or None when out of range."""
        if index >= self.num_files:
            return None
        return self._file_words[2 * index], self._file_words[2 * index + 1]

    def file_strings(self, index: int) -> tuple[str, str] | None:
        entry = self.file(index)
        if entry is None:
            return None
        return self.string(entry[0]), self.string(entry[1])

    def files(self) -> list[tuple[int, int]]:
        return [
            (self._file_words[2 * i], self._file_words[2 * i + 1]) for i in range(self.num_files)
        ]

    def string_table_bytes(self) -> bytes:
        return bytes(self._data[self._strtab_start : self._strtab_end])

    # -- FunctionInfo records ---------------------------------------------------------

    def function_info(
        self,
        index: int,
        *,
        known_types: frozenset[int] = KNOWN_INFO_TYPES,
        keep_unknown: bool = True,
    ) -> FunctionInfo:
        """Decode the FunctionInfo at `index` of the address table."""
        return decode_function_info(
            self._info_cursor(index),
            self.address(index),
            known_types=known_types,
            keep_unknown=keep_unknown,
        )

    def _info_cursor(self, index: int) -> RecordCursor:
        """A cursor at the FunctionInfo of `index` of the address table."""
        offset = self.info_offsets[index]
        if offset >= self.size:
            raise RecordError(
                f"invalid address info offset 0x{offset:x}",
                offset=offset,
                source=self.source,
            )
        return self._cursor(offset, self.size)

    def functions(self) -> Iterator[FunctionInfo]:
        for index in range(self.num_addresses):
            yield self.function_info(index)

    def function_name(self, index: int) -> str:
        """The name of the function at `index` of the address table: the linkage name
        where the converter had one, else the qualified name ("" for none)."""
        cur = self._info_cursor(index)
        cur.u32("missing FunctionInfo Size")
        return self.string(cur.u32("missing FunctionInfo Name"))

    def address_of(self, name: str) -> int | None:
        """The start address of the function named `name` (as `function_name` reads it),
        or None; of a name at several addresses, the highest. The index by name is built
        on the first question, from the FunctionInfos' first two fields."""
        by_name = self._by_name
        if by_name is None:
            by_name = {}
            for index in range(self.num_addresses):
                found = self.function_name(index)
                if found:
                    by_name[found] = self.address(index)
            self._by_name = by_name  # whole: it is what other threads test
        return by_name.get(name)

    def _function_size(self, index: int) -> int:
        offset = self.info_offsets[index]
        if offset >= self.size:
            raise RecordError(
                f"invalid address info offset 0x{offset:x}",
                offset=offset,
                source=self.source,
            )
        return self._cursor(offset, self.size).u32("missing FunctionInfo Size")

    # -- lookups ---------------------------------------------------------------------

    def find_index(self, addr: int) -> int:
        """Index of the function that answers for `addr` (GsymLookupError if none)."""
        base = self.header.base_address
        offsets = self.addr_offsets
        if addr >= base and offsets:
            off = addr - base
            i = bisect_left(offsets, off)
            if not (i == 0 and off < offsets[0]):
                if i == len(offsets) or off < offsets[i]:
                    i -= 1
                first = offsets[i]
                while i > 0 and offsets[i - 1] == first:
                    i -= 1
                start = base + first
                n = len(offsets)
                while i < n and offsets[i] == first:
                    size = self._function_size(i)
                    if size == 0 or start <= addr < start + size:
                        return i
                    i += 1
        raise GsymLookupError(f"address 0x{addr:x} is not in GSYM")

    def lookup(self, addr: int) -> LookupResult:
        """Source locations for `addr`, innermost first, exactly as LLVM computes them.

        Raises GsymLookupError when the file has no answer (the message is
        what llvm-gsymutil prints) and RecordError when a record is corrupt.
        """
        index = self.find_index(addr)
        return self.lookup_at(index, addr)

    def lookup_at(self, index: int, addr: int) -> LookupResult:
        """Lookup of `addr` within the function at `index`."""
        return self._lookup_record(
            self._cursor(self.info_offsets[index], self.size), self.address(index), addr
        )

    def lookup_all(self, addr: int) -> list[LookupResult]:
        """LLVM 20's `lookupAll`: the lookup of `addr`, then one per function merged
        into the one that holds it (InfoType 3: identical code folded by the
        linker), each with the names its call site at `addr` may call (InfoType
        4). Raises like `lookup`, also when a merged function's record fails."""
        index = self.find_index(addr)
        merged: list[RecordCursor] = []
        start = self.address(index)
        cur = self._cursor(self.info_offsets[index], self.size)
        results = [self._lookup_record(cur, start, addr, merged=merged, call_sites=True)]
        for payload in merged:
            for record in merged_records(payload):
                results.append(self._lookup_record(record, start, addr, call_sites=True))
        return results

    def _lookup_record(
        self,
        cur: RecordCursor,
        start: int,
        addr: int,
        *,
        merged: list[RecordCursor] | None = None,
        call_sites: bool = False,
    ) -> LookupResult:
        """The lookup of `addr` in the FunctionInfo record at `cur` (of a function at
        `start`). `merged`, if given, receives the payloads of its merged functions;
        `call_sites` reads the names the call returning to `addr` may call."""
        offset = cur.pos
        size = cur.u32("missing FunctionInfo Size")
        name_offset = cur.u32("missing FunctionInfo Name")
        if size and not start <= addr < start + size:
            raise GsymLookupError(f"address 0x{addr:x} is not in GSYM")
        if name_offset == 0:
            raise GsymLookupError(
                f"0x{cur.pos - 4 - offset:08x}: invalid FunctionInfo Name value 0x00000000"
            )
        name = self.string(name_offset)
        result = LookupResult(addr, start, size, name)
        row = None
        has_line_table = False
        inline_cursor: RecordCursor | None = None
        for info_type, payload in address_infos(cur, as_lookup=True):
            if info_type == LINE_TABLE_INFO:
                has_line_table = True
                row = lookup_line(payload, start, addr)
                if row is None or row.file == 0:
                    raise GsymLookupError(f"address 0x{addr:x} is not in the line table")
            elif info_type == INLINE_INFO:
                inline_cursor = payload
            elif info_type == MERGED_FUNCTIONS_INFO and merged is not None:
                merged.append(payload)
            elif info_type == CALL_SITE_INFO and call_sites:
                result.call_sites = self._call_site_names(payload, addr - start)
        if not has_line_table or row is None:  # (row is None only without a line table)
            result.locations.append(SourceLocation(name, addr - start))
            return result
        file_names = self.file_strings(row.file)
        if file_names is None:
            raise GsymLookupError(f"failed to extract file[{row.file}]")
        locations = [SourceLocation(name, addr - start, file_names[0], file_names[1], row.line)]
        if inline_cursor is not None:
            for node in reversed(inline_path(inline_cursor, start, addr)):
                call = self.file_strings(node.call_file)
                if call is None:
                    raise GsymLookupError(f"failed to extract file[{node.call_file}]")
                if call[0] or call[1]:
                    inner = locations[-1]
                    locations[-1] = SourceLocation(
                        self.string(node.name),
                        addr - node.first_start,
                        inner.dir,
                        inner.base,
                        inner.line,
                    )
                    locations.append(
                        SourceLocation(inner.name, inner.offset, call[0], call[1], node.call_line)
                    )
        result.locations = locations
        return result

    def _call_site_names(self, payload: RecordCursor, return_offset: int) -> list[str]:
        """The match expressions of the first call site returning to `return_offset`."""
        for site in decode_call_sites(payload):
            if site.return_offset == return_offset:
                return [self.string(ref) for ref in site.match_regex]
        return []
