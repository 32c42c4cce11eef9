"""Build a GSYM file: strings, files and functions in, LLVM's bytes out.

`GsymCreator` follows llvm-gsymutil 19's writer rules, so the same input
gives the same bytes:

- strings: insertion order, exact de-duplication, no tail merging, offset
  0 is ""; a file path is split into parent directory and file name
  (LLVM's path rules) and both are inserted, directory first;
- `finalize`: sort by (start, end, then less information first), keep the
  richer entry of identical ranges (the later one when both are rich or
  both plain), keep overlapping ranges, replace a size-0 entry by a sized
  one that starts there, and extend a trailing size-0 entry to the end of
  its text section;
- `encode`: header, address offsets (width from the *last start*), padding
  to 4, address-info offsets, file table, string table, then each
  FunctionInfo 4-aligned.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from stackmark._native import load
from stackmark.errors import StackmarkError
from stackmark.formats.gsym.codec import Writer
from stackmark.formats.gsym.function_info import (
    KNOWN_INFO_TYPES,
    FunctionInfo,
    encode_function_info,
)
from stackmark.formats.gsym.header import MAX_UUID_SIZE, Header, encode_header
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.paths import llvm_filename, llvm_parent_path
from stackmark.formats.gsym.ranges import Range, insert_range
from stackmark.formats.gsym.reader import GsymReader
from stackmark.formats.gsym.stl_sort import stl_sort

_native = load("_gsym_records")


class GsymWriteError(StackmarkError):
    """The functions cannot be written as a GSYM (LLVM's reasons and wording)."""


def _inline_eq(a: InlineInfo | None, b: InlineInfo | None) -> bool:
    """`a == b` for two inline trees (LLVM's optional equality), compiled by
    `inline_equal` without a Python frame per node; the reference otherwise."""
    if _native is not None:
        found: bool | None = _native.inline_equal(a, b, InlineInfo)
        if found is not None:
            return found
    return a == b


def _same_function(a: FunctionInfo, b: FunctionInfo) -> bool:
    """`a == b` (FunctionInfo.__eq__, field for field), the inline trees compared by
    `_inline_eq`."""
    if type(a) is not FunctionInfo or type(b) is not FunctionInfo:
        return a == b
    return bool(
        a.start == b.start
        and a.size == b.size
        and a.name == b.name
        and a.line_table == b.line_table
        and _inline_eq(a.inline, b.inline)
    )


def _inline_less(a: InlineInfo | None, b: InlineInfo | None) -> bool:
    if b is None:
        return False
    if a is None:
        return True
    return a.total_children() < b.total_children()


def _lines_less(a: list[LineEntry] | None, b: list[LineEntry] | None) -> bool:
    if b is None:
        return False
    if a is None:
        return True
    if len(a) != len(b):
        return len(a) < len(b)
    for x, y in zip(a, b, strict=True):  # LineEntry orders by address only
        if x.addr != y.addr:
            return x.addr < y.addr
    return False


def _detail_less(a: FunctionInfo, b: FunctionInfo) -> bool:
    """LLVM's FunctionInfo order for identical ranges: less information first."""
    if _inline_eq(a.inline, b.inline):
        return _lines_less(a.line_table, b.line_table)
    return _inline_less(a.inline, b.inline)


def function_less(a: FunctionInfo, b: FunctionInfo) -> bool:
    """LLVM's `operator<` on FunctionInfo."""
    if a.start != b.start:
        return a.start < b.start
    if a.size != b.size:
        return a.start + a.size < b.start + b.size
    return _detail_less(a, b)


def _stl_sorted(functions: list[FunctionInfo]) -> list[FunctionInfo]:
    """`stl_sort` by `function_less`, on a copy (compiled twin: `stl_sort_functions`)."""
    if _native is not None:
        found: list[FunctionInfo] | None = _native.stl_sort_functions(functions, _detail_less)
        if found is not None:
            return found
    exact = list(functions)
    stl_sort(exact, function_less)
    return exact


def sort_functions(functions: list[FunctionInfo]) -> list[FunctionInfo]:
    """The order `llvm::sort` gives (exact, including how ties fall)."""
    ordered = sorted(functions, key=lambda f: (f.start, f.start + f.size))
    result: list[FunctionInfo] = []
    i, n = 0, len(ordered)
    while i < n:
        j = i + 1
        while j < n and ordered[j].start == ordered[i].start and ordered[j].size == ordered[i].size:
            j += 1
        group = ordered[i:j]
        if len(group) > 1:
            for x in range(len(group)):
                for y in range(x + 1, len(group)):
                    a, b = group[x], group[y]
                    if not _detail_less(a, b) and not _detail_less(b, a):
                        # Equivalent yet different entries: only the exact
                        # algorithm says where they end up.
                        return _stl_sorted(functions)
            group.sort(key=functools.cmp_to_key(lambda a, b: -1 if _detail_less(a, b) else 1))
        result.extend(group)
        i = j
    return result


@dataclass(slots=True)
class FinalizeReport:
    """What `finalize` did, for the converter's log."""

    before: int = 0
    after: int = 0
    warnings: dict[str, int] = field(default_factory=dict)

    @property
    def pruned(self) -> int:
        return self.before - self.after

    def warn(self, category: str) -> None:
        self.warnings[category] = self.warnings.get(category, 0) + 1


class GsymCreator:
    """Collects strings, files and FunctionInfos; `finalize`, then `encode`."""

    def __init__(self) -> None:
        self._string_offsets: dict[str, int] = {"": 0}
        self._strtab = bytearray(b"\0")
        self.files: list[tuple[int, int]] = [(0, 0)]
        self._file_index: dict[tuple[int, int], int] = {(0, 0): 0}
        self.functions: list[FunctionInfo] = []
        self.uuid: bytes = b""
        self.base_address: int | None = None
        self.text_ranges: list[Range] | None = None
        self.finalized = False

    # -- strings and files -------------------------------------------------------

    def insert_string(self, text: str) -> int:
        offset = self._string_offsets.get(text)
        if offset is None:
            offset = len(self._strtab)
            self._strtab += text.encode("utf-8", "surrogateescape") + b"\0"
            self._string_offsets[text] = offset
        return offset

    @property
    def inserted_strings(self) -> dict[str, int]:
        """The strings inserted and what `insert_string` answers for each (their
        offsets): the compiled converter reads it and inserts only new strings."""
        return self._string_offsets

    def string(self, offset: int) -> str:
        end = self._strtab.find(b"\0", offset)
        return self._strtab[offset:end].decode("utf-8", "surrogateescape")

    def insert_file(self, path: str) -> int:
        """Index of `path` in the file table (added if new)."""
        directory = self.insert_string(llvm_parent_path(path))
        base = self.insert_string(llvm_filename(path))
        return self.insert_file_entry(directory, base)

    def insert_file_entry(self, directory: int, base: int) -> int:
        key = (directory, base)
        index = self._file_index.get(key)
        if index is None:
            index = len(self.files)
            self.files.append(key)
            self._file_index[key] = index
        return index

    def string_table(self) -> bytes:
        return bytes(self._strtab)

    # -- functions ---------------------------------------------------------------

    def set_text_ranges(self, ranges: list[Range]) -> None:
        merged: list[Range] = []
        for start, end in ranges:
            insert_range(merged, start, end)
        self.text_ranges = merged

    def is_valid_text_address(self, addr: int) -> bool:
        if self.text_ranges is None:
            return True
        return any(start <= addr < end for start, end in self.text_ranges)

    def add_function(self, info: FunctionInfo) -> None:
        self.functions.append(info)

    def finalize(self) -> FinalizeReport:
        """Sort and de-duplicate the functions as LLVM does."""
        if self.finalized:
            raise GsymWriteError("already finalized")
        self.finalized = True
        report = FinalizeReport(before=len(self.functions))
        funcs = self.functions
        if len(funcs) > 1:
            funcs = sort_functions(funcs)
            kept = [funcs[0]]
            for curr in funcs[1:]:
                prev = kept[-1]
                same = prev.start == curr.start and prev.size == curr.size
                overlap = (
                    prev.start < curr.start + curr.size and curr.start < prev.start + prev.size
                )
                if same or overlap:
                    if same:
                        if not _same_function(prev, curr):
                            if prev.has_rich_info() and curr.has_rich_info():
                                report.warn("Duplicate address ranges with different debug info.")
                            kept[-1] = curr
                    else:
                        report.warn("Overlapping function ranges")
                        kept.append(curr)
                elif prev.size == 0 and curr.start <= prev.start < curr.start + curr.size:
                    kept[-1] = curr
                else:
                    kept.append(curr)
            funcs = kept
        if funcs and funcs[-1].size == 0 and self.text_ranges is not None:
            last = funcs[-1]
            for start, end in self.text_ranges:
                if start <= last.start < end:
                    last.size = end - last.start
                    break
        self.functions = funcs
        report.after = len(funcs)
        return report

    # -- bytes -------------------------------------------------------------------

    def header_base_address(self) -> int:
        if self.base_address is not None:
            return self.base_address
        return self.functions[0].start

    def encode(self, *, little: bool = True) -> bytes:
        """The GSYM file bytes (after `finalize`)."""
        return encode_gsym(
            self.functions,
            files=self.files,
            strtab=bytes(self._strtab),
            uuid=self.uuid,
            base_address=self.base_address,
            little=little,
            finalized=self.finalized,
        )


def address_offset_size(base: int, last_start: int) -> int:
    delta = last_start - base
    if delta <= 0xFF:
        return 1
    if delta <= 0xFFFF:
        return 2
    if delta <= 0xFFFFFFFF:
        return 4
    return 8


RecordEncoder = Callable[[Sequence[FunctionInfo], bool], Iterable[tuple[bytes, list[int]]]]
"""(functions, little endian) -> consecutive pieces of their FunctionInfo records,
each laid out from offset 0 as `encode_records` does, with each record's offset."""

PIECE_FUNCTIONS = 4096
"""Functions per piece of `records_in_pieces` (progress is reported per piece)."""


def records_compiled() -> bool:
    """Whether `encode_records` runs the compiled encoder (else the Python one)."""
    return _native is not None


def encode_records(functions: Sequence[FunctionInfo], little: bool) -> tuple[bytes, list[int]]:
    """The FunctionInfo records of `functions`, laid out from offset 0 (each
    4-aligned), and the offset of each: a piece of a GSYM's record area.

    The compiled encoder, when active, encodes the records LLVM's converter
    makes and hands every other one (merged functions, call sites, unknown
    records, values it cannot hold, input `encode_function_info` refuses) to
    `record_bytes`, so the bytes and errors are the same either way."""
    if _native is not None:
        result: tuple[bytes, list[int]] = _native.encode_records(
            functions, little, functools.partial(record_bytes, little=little)
        )
        return result
    w = Writer(little)
    offsets = [encode_function_info(w, info) for info in functions]
    return bytes(w.buf), offsets


def record_bytes(info: FunctionInfo, *, little: bool) -> bytes:
    """One FunctionInfo record laid out from offset 0 (so without padding)."""
    w = Writer(little)
    encode_function_info(w, info)
    return bytes(w.buf)


def records_in_pieces(
    functions: Sequence[FunctionInfo], little: bool
) -> Iterator[tuple[bytes, list[int]]]:
    """The default `RecordEncoder`: pieces of `PIECE_FUNCTIONS`, encoded here."""
    for start in range(0, len(functions), PIECE_FUNCTIONS):
        yield encode_records(functions[start : start + PIECE_FUNCTIONS], little)


def encode_gsym(
    functions: list[FunctionInfo],
    *,
    files: list[tuple[int, int]],
    strtab: bytes,
    uuid: bytes = b"",
    base_address: int | None = None,
    little: bool = True,
    finalized: bool = True,
    progress: Callable[[int], None] | None = None,
    records: RecordEncoder | None = None,
) -> bytes:
    """Lay out a version-1 GSYM from sorted functions and finished tables.

    `records` encodes the FunctionInfo records (`records_in_pieces`, in this
    process, unless given: a converter may spread them over processes);
    `progress` hears how many functions are written."""
    if not functions:
        raise GsymWriteError("no functions to encode")
    if not finalized:
        raise GsymWriteError("GsymCreator wasn't finalized prior to encoding")
    if len(uuid) > MAX_UUID_SIZE:
        raise GsymWriteError(f"invalid UUID size {len(uuid)}")
    if not all(info.name for info in functions):
        # A Mach-O symbol with n_strx 0 (or named just "_") has the empty name.
        raise GsymWriteError("attempted to encode invalid FunctionInfo object")
    base = functions[0].start if base_address is None else base_address
    addr_off_size = address_offset_size(base, functions[-1].start)
    header = Header(
        addr_off_size=addr_off_size,
        base_address=base,
        num_addresses=len(functions),
        uuid=uuid,
    )
    w = Writer(little)
    encode_header(w, header)
    for info in functions:
        w.uint(addr_off_size, info.start - base)
    w.align(4)
    info_offsets_at = w.tell()
    w.raw(bytes(4 * len(functions)))
    w.u32(len(files))
    for directory, basename in files:
        w.u32(directory)
        w.u32(basename)
    strtab_offset = w.tell()
    w.raw(strtab)
    offsets: list[int] = []
    for data, local_offsets in (records or records_in_pieces)(functions, little):
        # Each piece was laid out from offset 0: placed at a multiple of 4, its
        # records keep the alignment (and padding) they would have had here.
        w.align(4)
        base = w.tell()
        w.raw(data)
        offsets.extend([base + offset for offset in local_offsets])
        if progress is not None:
            progress(len(offsets))
    w.fixup32(strtab_offset, 20)
    w.fixup32(len(strtab), 24)
    for i, offset in enumerate(offsets):
        w.fixup32(offset, info_offsets_at + 4 * i)
    return bytes(w.buf)


def reencode(reader: GsymReader, *, little: bool | None = None) -> bytes:
    """Decode every record of `reader` and write the file again.

    The tables are carried over as they are, so a file LLVM wrote comes out
    byte for byte the same (in the other byte order if `little` says so).
    """
    functions = [
        reader.function_info(i, known_types=KNOWN_INFO_TYPES, keep_unknown=True)
        for i in range(reader.num_addresses)
    ]
    return encode_gsym(
        functions,
        files=reader.files(),
        strtab=reader.string_table_bytes(),
        uuid=reader.uuid,
        base_address=reader.base_address,
        little=reader.little if little is None else little,
    )
