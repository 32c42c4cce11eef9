"""Segmented GSYM output: llvm-gsymutil's `--segment-size`.

Instead of one file, a finalized creator's functions are cut, in address
order, into several GSYM files of about `segment_size` bytes each, named
`OUT-0x<first function address>` (LLVM GsymCreator::saveSegments and
createSegment, llvm 19). Each segment is a creator of its own:

- it keeps the source's base address (if one was set) and UUID;
- functions are copied one by one, their strings and files re-inserted in
  the segment's tables in the order LLVM copies them: the name, the line
  table's files row by row, then the inline tree depth first (each node's
  name, then its call file); a file copies its directory, then its name;
- before each copy, the size the segment would have (header, address and
  offset tables, file table, string table, plus the 4-aligned encoded sizes
  of the functions copied so far) is compared with `segment_size`: at or
  past it, the segment is closed; a segment that cannot hold even its first
  function is an error, worded as LLVM words it;
- a segment is written without sorting or pruning (its source already was).
"""

from __future__ import annotations

from stackmark.formats.gsym.codec import Writer
from stackmark.formats.gsym.creator import (
    GsymCreator,
    GsymWriteError,
    address_offset_size,
    encode_gsym,
)
from stackmark.formats.gsym.function_info import FunctionInfo, encode_function_info
from stackmark.formats.gsym.header import HEADER_SIZE
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry


class _Segment:
    """One segment being filled: a creator, and copies from the source's tables."""

    def __init__(self, source: GsymCreator):
        self.source = source
        self.creator = GsymCreator()
        self.creator.base_address = source.base_address
        self.creator.uuid = source.uuid

    def _string(self, offset: int) -> int:
        return 0 if offset == 0 else self.creator.insert_string(self.source.string(offset))

    def _file(self, index: int) -> int:
        if index == 0:
            return 0
        directory, base = self.source.files[index]
        return self.creator.insert_file_entry(self._string(directory), self._string(base))

    def _inline(self, node: InlineInfo) -> InlineInfo:
        name = self._string(node.name)
        call_file = self._file(node.call_file)
        children = [self._inline(child) for child in node.children]
        return InlineInfo(name, list(node.ranges), call_file, node.call_line, children)

    def copy(self, info: FunctionInfo) -> int:
        """Copy `info` in; returns its encoded size (LLVM's cacheEncoding)."""
        copied = FunctionInfo(info.start, info.size, self._string(info.name))
        if info.line_table is not None:
            copied.line_table = [
                LineEntry(row.addr, self._file(row.file), row.line) for row in info.line_table
            ]
        if info.inline is not None:
            copied.inline = self._inline(info.inline)
        self.creator.functions.append(copied)
        if copied.name == 0:
            return 0  # LLVM: an invalid FunctionInfo caches no encoding
        w = Writer(True)
        encode_function_info(w, copied)
        return len(w.buf)

    def header_and_tables_size(self) -> int:
        """LLVM's calculateHeaderAndTableSize, for the functions copied so far."""
        functions = self.creator.functions
        if functions:
            base = self.creator.base_address
            first = functions[0].start if base is None else base
            offset_size = address_offset_size(first, functions[-1].start)
        else:
            offset_size = 1
        return (
            HEADER_SIZE
            + len(functions) * offset_size
            + len(functions) * 4
            + len(self.creator.files) * 8
            + len(self.creator.string_table())
        )


def encode_segments(
    source: GsymCreator, segment_size: int, *, little: bool = True
) -> list[tuple[int, bytes]]:
    """(first function address, GSYM bytes) of each segment of a finalized creator."""
    if segment_size <= 0:
        raise GsymWriteError("invalid segment size zero")
    functions = source.functions
    segments: list[tuple[int, bytes]] = []
    index = 0
    while index < len(functions):
        segment = _Segment(source)
        infos_size = 0
        while index < len(functions):
            if segment.header_and_tables_size() + infos_size >= segment_size:
                if infos_size == 0:
                    raise GsymWriteError(
                        f"a segment size of {segment_size} is to small to fit any function "
                        "infos, specify a larger value"
                    )
                break
            size = segment.copy(functions[index])
            infos_size += (size + 3) & ~3
            index += 1
        creator = segment.creator
        data = encode_gsym(
            creator.functions,
            files=creator.files,
            strtab=creator.string_table(),
            uuid=creator.uuid,
            base_address=creator.base_address,
            little=little,
        )
        segments.append((creator.functions[0].start, data))
    return segments


def segment_path(output: str, first_address: int) -> str:
    """LLVM's name for a segment: OUTPUT-0x<address in hex, no leading zeros>."""
    return f"{output}-0x{first_address:x}"
