"""FunctionInfo records: one per address-table entry.

    u32 Size  (0 is legal: a symbol without a size)
    u32 Name  (string-table offset; 0 is invalid)
    repeated: u32 InfoType, u32 length, payload (records are not aligned)
    u32 0, u32 0  (EndOfList)

InfoTypes: 1 line table, 2 inline tree, 3 merged functions (LLVM 20+),
4 call sites (LLVM 20+). The writer emits them in that order. The start
address is not stored: it is BaseAddress + the address-table entry.

Merged functions (type 3): u32 count, then per function a u32 byte length
and a FunctionInfo encoded without alignment padding, decoded with the
parent's start address.
"""

from __future__ import annotations

from collections.abc import Iterator

from stackmark.formats.gsym.call_sites import CallSiteInfo, decode_call_sites, encode_call_sites
from stackmark.formats.gsym.codec import RecordCursor, RecordError, Writer
from stackmark.formats.gsym.inline_info import (
    InlineInfo,
    decode_inline_info,
    encode_inline_info,
)
from stackmark.formats.gsym.line_table import LineEntry, decode_line_table, encode_line_table
from stackmark.plain import Record

END_OF_LIST, LINE_TABLE_INFO, INLINE_INFO, MERGED_FUNCTIONS_INFO, CALL_SITE_INFO = 0, 1, 2, 3, 4
KNOWN_INFO_TYPES = frozenset({LINE_TABLE_INFO, INLINE_INFO, MERGED_FUNCTIONS_INFO, CALL_SITE_INFO})
LLVM19_INFO_TYPES = frozenset({LINE_TABLE_INFO, INLINE_INFO})
"""What llvm-gsymutil 19 can decode; its dump reports the others as unsupported."""


class FunctionInfo(Record):
    """One function: [start, start + size), a name and optional records.

    `name` and the string fields of the records are string-table offsets;
    files are file-table indexes. `other_records` keeps records of unknown
    InfoTypes as (type, payload) so that rewriting a file keeps them.
    """

    __slots__ = _fields = __match_args__ = (
        "start",
        "size",
        "name",
        "line_table",
        "inline",
        "merged",
        "call_sites",
        "other_records",
    )
    start: int
    size: int
    name: int
    line_table: list[LineEntry] | None
    inline: InlineInfo | None
    merged: list[FunctionInfo] | None
    call_sites: list[CallSiteInfo] | None
    other_records: list[tuple[int, bytes]]

    def __init__(
        self,
        start: int,
        size: int,
        name: int,
        line_table: list[LineEntry] | None = None,
        inline: InlineInfo | None = None,
        merged: list[FunctionInfo] | None = None,
        call_sites: list[CallSiteInfo] | None = None,
        other_records: list[tuple[int, bytes]] | None = None,
    ) -> None:
        self.start = start
        self.size = size
        self.name = name
        self.line_table = line_table
        self.inline = inline
        self.merged = merged
        self.call_sites = call_sites
        self.other_records = [] if other_records is None else other_records

    @property
    def end(self) -> int:
        return self.start + self.size

    def has_rich_info(self) -> bool:
        return self.line_table is not None or self.inline is not None

    def __eq__(self, other: object) -> bool:
        """LLVM's equality: range, name, line table and inline tree."""
        if not isinstance(other, FunctionInfo):
            return NotImplemented
        return (
            self.start == other.start
            and self.size == other.size
            and self.name == other.name
            and self.line_table == other.line_table
            and self.inline == other.inline
        )

    __hash__ = None  # type: ignore[assignment]


def decode_function_info(
    cur: RecordCursor,
    start: int,
    *,
    known_types: frozenset[int] = KNOWN_INFO_TYPES,
    keep_unknown: bool = True,
) -> FunctionInfo:
    """Decode the record at `cur` (whose `base` is the record start).

    With `keep_unknown=False`, a record of a type outside `known_types`
    raises the error LLVM reports ("unsupported InfoType N"), as its dump does.
    """
    size = cur.u32("missing FunctionInfo Size")
    name = cur.u32("missing FunctionInfo Name")
    if name == 0:
        raise RecordError(
            "invalid FunctionInfo name (string offset 0)",
            offset=cur.pos - 4,
            source=cur.source,
            llvm_reason=f"0x{cur.pos - 4 - cur.base:08x}: invalid FunctionInfo Name value "
            "0x00000000",
        )
    info = FunctionInfo(start, size, name)
    for info_type, payload in address_infos(cur):
        if info_type not in known_types:
            if not keep_unknown:
                at = payload.pos - 8
                raise RecordError(
                    f"unsupported InfoType {info_type}",
                    offset=at,
                    source=cur.source,
                    llvm_reason=f"0x{at - cur.base:08x}: unsupported InfoType {info_type}",
                )
            info.other_records.append((info_type, bytes(cur.data[payload.pos : payload.end])))
        elif info_type == LINE_TABLE_INFO:
            info.line_table = decode_line_table(payload, start)
        elif info_type == INLINE_INFO:
            info.inline = decode_inline_info(payload, start)
        elif info_type == MERGED_FUNCTIONS_INFO:
            info.merged = decode_merged_functions(payload, start, known_types, keep_unknown)
        else:
            info.call_sites = decode_call_sites(payload)
    return info


def address_infos(
    cur: RecordCursor, *, as_lookup: bool = False
) -> Iterator[tuple[int, RecordCursor]]:
    """Each (InfoType, payload) of the record at `cur`, after its Size and Name, up to
    the EndOfList marker (which is read, not given): the one walk of a FunctionInfo's
    framing. A record cut short raises what LLVM says there: FunctionInfo::decode's
    texts, or with `as_lookup` FunctionInfo::lookup's ("FunctionInfo data is
    truncated"; the reason stackmark gives names the InfoType and its length)."""
    while True:
        if as_lookup and cur.remaining < 8:
            raise RecordError(
                "FunctionInfo data is truncated",
                offset=cur.pos,
                source=cur.source,
                llvm_reason="FunctionInfo data is truncated",
            )
        info_type = cur.u32("missing FunctionInfo InfoType value")
        length = cur.u32("missing FunctionInfo InfoType length")
        if length > cur.remaining:
            if as_lookup:
                raise RecordError(
                    f"InfoType {info_type} record of {length} bytes runs past the end of the file",
                    offset=cur.pos - 8,
                    source=cur.source,
                    llvm_reason="FunctionInfo data is truncated",
                )
            raise cur.fail(f"missing FunctionInfo data for InfoType {info_type}")
        payload = cur.sub(length, "InfoType payload")
        if info_type == END_OF_LIST:
            return
        yield info_type, payload


def merged_records(cur: RecordCursor) -> list[RecordCursor]:
    """The FunctionInfo records of a MergedFunctionsInfo payload: u32 count, then
    per function a u32 size and that many bytes."""
    if cur.remaining < 4:
        raise cur.fail(f"unable to read the function count at offset 0x{cur.pos - cur.base:08x}")
    count = cur.u32("function count")
    records = []
    for i in range(count):
        if cur.remaining < 4:
            raise cur.fail(
                f"unable to read size of function {i} at offset 0x{cur.pos - cur.base:08x}"
            )
        length = cur.u32("merged function size")
        if length > cur.remaining:
            raise cur.fail(
                f"function data is truncated for function {i} at offset "
                f"0x{cur.pos - cur.base:08x}, expected size {length}"
            )
        records.append(cur.sub(length, "merged function"))
    return records


def decode_merged_functions(
    cur: RecordCursor, start: int, known_types: frozenset[int], keep_unknown: bool
) -> list[FunctionInfo]:
    return [
        decode_function_info(record, start, known_types=known_types, keep_unknown=keep_unknown)
        for record in merged_records(cur)
    ]


def _record(w: Writer, info_type: int) -> int:
    """Start a record; returns where its length goes."""
    w.u32(info_type)
    w.u32(0)
    return w.tell()


def _close(w: Writer, payload_start: int) -> None:
    w.fixup32(w.tell() - payload_start, payload_start - 4)


def encode_function_info(w: Writer, info: FunctionInfo, *, padding: bool = True) -> int:
    """Write `info` (4-aligned unless `padding` is False); returns its offset."""
    if info.name == 0:
        raise ValueError("attempted to encode a FunctionInfo without a name")
    if padding:
        w.align(4)
    offset = w.tell()
    w.u32(info.size)
    w.u32(info.name)
    if info.line_table is not None:
        at = _record(w, LINE_TABLE_INFO)
        encode_line_table(w, info.line_table, info.start)
        _close(w, at)
    if info.inline is not None:
        at = _record(w, INLINE_INFO)
        encode_inline_info(w, info.inline, info.start)
        _close(w, at)
    if info.merged is not None:
        at = _record(w, MERGED_FUNCTIONS_INFO)
        w.u32(len(info.merged))
        for child in info.merged:
            w.u32(0)
            child_at = w.tell()
            encode_function_info(w, child, padding=False)
            _close(w, child_at)
        _close(w, at)
    if info.call_sites is not None:
        at = _record(w, CALL_SITE_INFO)
        encode_call_sites(w, info.call_sites)
        _close(w, at)
    for info_type, payload in info.other_records:
        w.u32(info_type)
        w.u32(len(payload))
        w.raw(payload)
    w.u32(END_OF_LIST)
    w.u32(0)
    return offset
