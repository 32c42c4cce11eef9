"""The text `llvm-gsymutil FILE.gsym` prints: header, tables, every FunctionInfo.

Matches llvm-gsymutil 19 byte for byte on files with line tables and inline
trees. Merged functions (InfoType 3) and call sites (InfoType 4), which
LLVM 19 cannot decode, are printed the way LLVM 20 and newer print them
unless `llvm19=True`, which reproduces LLVM 19's "unsupported InfoType"
lines. Records of unknown types give LLVM's error line for that function.
"""

from __future__ import annotations

from collections.abc import Iterator

from stackmark.errors import FormatError
from stackmark.formats.gsym.codec import RecordError
from stackmark.formats.gsym.function_info import (
    KNOWN_INFO_TYPES,
    LLVM19_INFO_TYPES,
    FunctionInfo,
)
from stackmark.formats.gsym.header import header_text
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.lookup import path_separator
from stackmark.formats.gsym.ranges import Range
from stackmark.formats.gsym.reader import GsymReader

_OFFSET_HEX_DIGITS = {1: 2, 2: 4, 4: 8, 8: 8}
_OFFSET_TITLE = {1: "8 ", 2: "16", 4: "32", 8: "64"}


def ranges_text(ranges: list[Range]) -> str:
    return " ".join(f"[0x{start:016x} - 0x{end:016x})" for start, end in ranges)


class _Dumper:
    def __init__(self, reader: GsymReader):
        self.r = reader

    def file_text(self, index: int) -> str:
        """A file-table entry as a path; "" for entry (0, 0)."""
        entry = self.r.file(index)
        if entry is None:
            return "<invalid-file>"
        if entry == (0, 0):
            return ""
        directory, base = self.r.string(entry[0]), self.r.string(entry[1])
        if not directory and not base:
            return "<invalid-file>"
        out = directory + path_separator(directory) if directory else ""
        return out + base

    def line_table(self, rows: list[LineEntry], indent: int) -> Iterator[str]:
        pad = " " * indent
        yield f"{pad}LineTable:\n"
        for row in rows:
            path = self.file_text(row.file) if row.file else ""
            yield f"{pad}  0x{row.addr:016x} {path}:{row.line}\n"

    def inline(self, node: InlineInfo, indent: int) -> Iterator[str]:
        head = "InlineInfo:\n" if indent == 0 else " " * indent
        text = f"{head}{ranges_text(node.ranges)} {self.r.string(node.name)}"
        if node.call_file != 0 and self.r.file(node.call_file) is not None:
            text += f" called from {self.file_text(node.call_file)}:{node.call_line}"
        yield text + "\n"
        for child in node.children:
            yield from self.inline(child, indent + 2)

    def function(self, info: FunctionInfo, indent: int = 0) -> Iterator[str]:
        pad = " " * indent
        yield (
            f"{pad}[0x{info.start:016x} - 0x{(info.start + info.size):016x}) "
            f'"{self.r.string(info.name)}"\n'
        )
        if info.line_table is not None:
            yield from self.line_table(info.line_table, indent)
        if info.inline is not None:
            yield from self.inline(info.inline, indent)
        if info.call_sites is not None:
            yield f"{pad}CallSites (by relative return offset):\n"
            for site in info.call_sites:
                text = f"{pad}  0x{site.return_offset:04x} Flags[{site.flags_text()}]"
                if site.match_regex:
                    text += " MatchRegex[" + ";".join(self.r.string(s) for s in site.match_regex)
                    text += "]"
                yield text + "\n"
        if info.merged is not None:
            for i, child in enumerate(info.merged):
                yield f"++ Merged FunctionInfos[{i}]:\n"
                yield from self.function(child, 4)


def dump_lines(reader: GsymReader, *, llvm19: bool = False) -> Iterator[str]:
    """The dump, in pieces (each ends with a newline)."""
    d = _Dumper(reader)
    hdr = reader.header
    yield header_text(hdr) + "\n"
    yield "Address Table:\n"
    yield f"INDEX  OFFSET{_OFFSET_TITLE[hdr.addr_off_size]} (ADDRESS)\n"
    yield "====== =============================== \n"
    digits = _OFFSET_HEX_DIGITS[hdr.addr_off_size]
    base = hdr.base_address
    for i, off in enumerate(reader.addr_offsets):
        yield f"[{i:4d}] 0x{off:0{digits}x} (0x{(base + off) & 0xFFFFFFFFFFFFFFFF:016x})\n"
    yield "\nAddress Info Offsets:\nINDEX  Offset\n====== ==========\n"
    for i, off in enumerate(reader.info_offsets):
        yield f"[{i:4d}] 0x{off:08x}\n"
    yield "\nFiles:\nINDEX  DIRECTORY  BASENAME   PATH\n"
    yield "====== ========== ========== ==============================\n"
    for i, (dir_off, base_off) in enumerate(reader.files()):
        yield f"[{i:4d}] 0x{dir_off:08x} 0x{base_off:08x} {d.file_text(i)}\n"
    yield "\nString table:\n"
    for offset, text in reader.strings():
        yield f'0x{offset:08x}: "{text}"\n'
    yield "\n"
    known = LLVM19_INFO_TYPES if llvm19 else KNOWN_INFO_TYPES
    for i in range(reader.num_addresses):
        yield f"FunctionInfo @ 0x{reader.info_offsets[i]:08x}: "
        try:
            info = reader.function_info(i, known_types=known, keep_unknown=False)
        except RecordError as exc:
            yield f"FunctionInfo:{exc.llvm_reason}\n"
            continue
        except FormatError as exc:
            yield f"FunctionInfo:{exc.reason}\n"
            continue
        yield from d.function(info)


def dump_text(reader: GsymReader, *, llvm19: bool = False) -> str:
    return "".join(dump_lines(reader, llvm19=llvm19))


def function_text(reader: GsymReader, info: FunctionInfo) -> str:
    """One FunctionInfo as the dump (and `--verbose` lookups) print it."""
    return "".join(_Dumper(reader).function(info))
