"""Line tables (FunctionInfo InfoType 1).

Payload:

    SLEB128 MinDelta, SLEB128 MaxDelta, ULEB128 FirstLine
    opcodes, one byte each, from the state (address = function start,
    file = 1, line = FirstLine):
      0x00 EndSequence          stop
      0x01 SetFile   ULEB128    file = operand (no row)
      0x02 AdvancePC ULEB128    address += operand, emit a row
      0x03 AdvanceLine SLEB128  line += operand (no row)
      0x04..0xFF special        adj = op - 4, range = MaxDelta - MinDelta + 1:
                                line += MinDelta + adj % range,
                                address += adj // range, emit a row

Line numbers are u32 and wrap like LLVM's. A lookup takes the last row whose
address is <= the target; a row with file 0, or no row at all, is an error
("address ... is not in the line table"), not a fallback.

The writer decides bytes exactly as LLVM's `LineTable::encode`: the delta
window, special opcodes where they fit, and AdvancePC written even for 0.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections import Counter
from operator import sub
from typing import NamedTuple

from stackmark.binary import sleb_rest, uleb_rest
from stackmark.formats.gsym.codec import RecordCursor, RecordError, Writer

END_SEQUENCE, SET_FILE, ADVANCE_PC, ADVANCE_LINE, FIRST_SPECIAL = 0, 1, 2, 3, 4
MAX_LINE_RANGE = 14
_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF


class LineEntry(NamedTuple):
    """One row: from `addr` on, code belongs to `file` (file-table index), `line`."""

    addr: int
    file: int
    line: int


def _range_error(cur: RecordCursor, min_delta: int, max_delta: int) -> RecordError:
    return RecordError(
        f"line table delta window [{min_delta}, {max_delta}] is empty, "
        "so special opcodes cannot be decoded",
        offset=cur.pos - 1,
        source=cur.source,
        llvm_reason=f"0x{cur.pos - 1 - cur.base:08x}: invalid LineTable delta window",
    )


def decode_line_table(cur: RecordCursor, base_addr: int) -> list[LineEntry]:
    """All rows of the payload at `cur`, in order."""
    min_delta = cur.sleb("missing LineTable MinDelta")
    max_delta = cur.sleb("missing LineTable MaxDelta")
    line_range = max_delta - min_delta + 1
    line = cur.uleb("missing LineTable FirstLine") & _U32
    addr, file = base_addr, 1
    rows: list[LineEntry] = []
    while True:
        op = cur.u8("EOF found before EndSequence")
        if op == END_SEQUENCE:
            return rows
        if op == SET_FILE:
            file = cur.uleb("EOF found before SetFile value") & _U32
        elif op == ADVANCE_PC:
            addr = (addr + cur.uleb("EOF found before AdvancePC value")) & _U64
            rows.append(LineEntry(addr, file, line))
        elif op == ADVANCE_LINE:
            line = (line + cur.sleb("EOF found before AdvanceLine value")) & _U32
        else:
            if line_range <= 0:
                raise _range_error(cur, min_delta, max_delta)
            adj = op - FIRST_SPECIAL
            line = (line + min_delta + adj % line_range) & _U32
            addr = (addr + adj // line_range) & _U64
            rows.append(LineEntry(addr, file, line))


def lookup_line(cur: RecordCursor, base_addr: int, target: int) -> LineEntry | None:
    """The last row at or before `target` (None when the first row is after it).

    Decodes only as far as needed, like LLVM's `LineTable::lookup`. The
    opcodes are read by `_row_at` from a copy of the payload, with no bounds
    bookkeeping (a lookup in a large function reads hundreds of them); a
    payload it cannot read to the end is decoded again by `_checked_row_at`,
    which raises the error naming the offset. The cursor is left where it was.
    """
    start = cur.pos
    min_delta = cur.sleb("missing LineTable MinDelta")
    max_delta = cur.sleb("missing LineTable MaxDelta")
    line_range = max_delta - min_delta + 1
    line = cur.uleb("missing LineTable FirstLine") & _U32
    if line_range > 0:
        with contextlib.suppress(StopIteration):  # the payload ends before EndSequence
            found = _row_at(
                bytes(cur.data[cur.pos : cur.end]), base_addr, line, min_delta, line_range, target
            )
            cur.pos = start
            return None if found is None else LineEntry(*found)
    cur.pos = start
    row = _checked_row_at(cur, base_addr, target)
    cur.pos = start
    return row


def _row_at(
    payload: bytes, addr: int, line: int, min_delta: int, line_range: int, target: int
) -> tuple[int, int, int] | None:
    """`lookup_line` over the opcodes in `payload` (raises StopIteration if they end
    before EndSequence). Operands of one byte, nearly all of them, are read inline."""
    file = 1
    found: tuple[int, int, int] | None = None
    it = iter(payload)
    for op in it:
        if op >= FIRST_SPECIAL:
            adj = op - FIRST_SPECIAL
            line = (line + min_delta + adj % line_range) & _U32
            addr += adj // line_range
        elif op == ADVANCE_PC:
            byte = next(it)
            addr = (addr + (byte if byte < 0x80 else uleb_rest(it, byte))) & _U64
        elif op == SET_FILE:
            byte = next(it)
            file = (byte if byte < 0x80 else uleb_rest(it, byte)) & _U32
            continue
        elif op == ADVANCE_LINE:
            byte = next(it)
            if byte < 0x40:
                delta = byte
            elif byte < 0x80:
                delta = byte - 0x80
            else:
                delta = sleb_rest(it, byte)
            line = (line + delta) & _U32
            continue
        else:  # END_SEQUENCE
            return found
        # A row was emitted.
        if target < addr:
            return found
        found = (addr, file, line)
    raise StopIteration


def _checked_row_at(cur: RecordCursor, base_addr: int, target: int) -> LineEntry | None:
    """`lookup_line` with every read bounds-checked: the errors name their offsets."""
    min_delta = cur.sleb("missing LineTable MinDelta")
    max_delta = cur.sleb("missing LineTable MaxDelta")
    line_range = max_delta - min_delta + 1
    line = cur.uleb("missing LineTable FirstLine") & _U32
    data, pos, end = cur.data, cur.pos, cur.end
    addr, file = base_addr, 1
    found: LineEntry | None = None
    while True:
        if pos >= end:
            cur.pos = pos
            raise cur.fail("EOF found before EndSequence")
        op = data[pos]
        pos += 1
        if op >= FIRST_SPECIAL:
            if line_range <= 0:
                cur.pos = pos
                raise _range_error(cur, min_delta, max_delta)
            adj = op - FIRST_SPECIAL
            line = (line + min_delta + adj % line_range) & _U32
            addr += adj // line_range
        elif op == ADVANCE_PC:
            cur.pos = pos
            addr = (addr + cur.uleb("EOF found before AdvancePC value")) & _U64
            pos = cur.pos
        elif op == SET_FILE:
            cur.pos = pos
            file = cur.uleb("EOF found before SetFile value") & _U32
            pos = cur.pos
            continue
        elif op == ADVANCE_LINE:
            cur.pos = pos
            line = (line + cur.sleb("EOF found before AdvanceLine value")) & _U32
            pos = cur.pos
            continue
        else:  # END_SEQUENCE
            cur.pos = pos
            return found
        # A row was emitted.
        if target < addr:
            cur.pos = pos
            return found
        found = LineEntry(addr, file, line)


def find_row(rows: list[LineEntry], addrs: list[int], target: int) -> LineEntry | None:
    """Binary-search decoded `rows` (with `addrs` their addresses) like `lookup_line`."""
    i = bisect_left(addrs, target + 1)
    return rows[i - 1] if i else None


def _delta_window(lines: list[LineEntry]) -> tuple[int, int]:
    """(MinDelta, MaxDelta) as LLVM chooses them for `lines`."""
    if len(lines) == 1:
        min_delta = max_delta = 0
        counts: Counter[int] = Counter()
    else:
        numbers = [entry[2] for entry in lines]
        counts = Counter(map(sub, numbers[1:], numbers[:-1]))
        min_delta, max_delta = min(counts), max(counts)
    if max_delta - min_delta > MAX_LINE_RANGE:
        # The window of width <= 14 over the distinct deltas that covers the
        # most rows; ties go to the lowest starting delta.
        deltas = sorted(counts)
        best_start = best_end = best_count = 0
        for i, first in enumerate(deltas):
            total = 0
            j = i
            while j < len(deltas) and deltas[j] - first <= MAX_LINE_RANGE:
                total += counts[deltas[j]]
                j += 1
            if total > best_count:
                best_start, best_end, best_count = i, j - 1, total
        min_delta, max_delta = deltas[best_start], deltas[best_end]
    if min_delta == max_delta and 0 < min_delta < MAX_LINE_RANGE:
        min_delta = 0
    return min_delta, max_delta


def encode_line_table(w: Writer, lines: list[LineEntry], base_addr: int) -> None:
    """Write the payload for `lines` (at least one row, addresses ascending).

    One pass with the byte buffer's own `append`: most rows become a single
    special opcode, and this runs for millions of rows in a conversion.
    """
    if not lines:
        raise ValueError("attempted to encode an empty line table")
    min_delta, max_delta = _delta_window(lines)
    line_range = max_delta - min_delta + 1
    w.sleb(min_delta)
    w.sleb(max_delta)
    prev_line = lines[0][2]
    w.uleb(prev_line)
    prev_addr, prev_file = base_addr, 1
    buf = w.buf
    append = buf.append
    uleb = w.uleb
    base_special = FIRST_SPECIAL - min_delta
    for addr, file, line in lines:
        if addr < prev_addr:
            if addr < base_addr:
                raise ValueError(
                    f"line entry address 0x{addr:x} is below the function start 0x{base_addr:x}"
                )
            raise ValueError("line entries are not in ascending address order")
        addr_delta = addr - prev_addr
        if line == prev_line:
            line_delta = 0
        elif line > prev_line:
            line_delta = line - prev_line
        else:
            diff = (prev_line - line) & _U32
            line_delta = -(diff - (1 << 32) if diff >> 31 else diff)
        if file != prev_file:
            append(SET_FILE)
            if file < 0x80:
                append(file)
            else:
                uleb(file)
        if min_delta <= line_delta <= max_delta:
            special = line_delta + base_special + addr_delta * line_range
            if special <= 255:
                append(special)
                prev_addr, prev_file, prev_line = addr, file, line
                continue
        if line_delta != 0:
            append(ADVANCE_LINE)
            w.sleb(line_delta)
        append(ADVANCE_PC)
        if addr_delta < 0x80:
            append(addr_delta)
        else:
            uleb(addr_delta)
        prev_addr, prev_file, prev_line = addr, file, line
    append(END_SEQUENCE)
