"""Line number programs (.debug_line, DWARF 2-5 section 6.2) and lookups in them.

`parse_line_table` reads the header (including DWARF 5's described
directory and file tables), then runs the state machine over the whole
program once, keeping every row in compact columns (`RowColumns`). Lookups follow llvm's
DWARFDebugLine exactly, because llvm-symbolizer is the reference:

* rows are emitted by special opcodes, DW_LNS_copy and DW_LNE_end_sequence;
  rows after a DW_LNE_set_address to the tombstone address (all ones) are
  dropped until the next DW_LNE_set_address;
* a sequence is kept when its first address is below its end address;
  sequences are ordered by end address, and an address belongs to the
  first sequence whose end is above it, if that sequence starts at or
  below it;
* inside a sequence the row is the last one whose address is <= the
  address (so of two rows at one address, the second wins);
* registers wrap like llvm's: line is 32 bits, file and column 16 bits;
* in a relocatable object (where each code section starts at 0), each
  sequence belongs to the section its DW_LNE_set_address was relocated
  against, and a lookup given a section looks among that section's
  sequences first, then among those of no section (llvm's SectionedAddress).

File names are resolved the way llvm-symbolizer prints them by default
(absolute: comp_dir / include directory / name, llvm's path joining).
"""

# No `from __future__ import annotations` here: with it, every field of the
# NamedTuples below is a string that typing turns into a ForwardRef by calling
# compile(), and a process's first compile() builds all of CPython's AST types
# (about 10 million instructions, 4% of a one-frame `stackmark symbolize`).

import struct
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from collections.abc import Sequence as Sequence_
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from stackmark._native import load
from stackmark.binary import read_sleb, read_uleb, skip_leb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import Encoding, read_form
from stackmark.dwarf.sections import Section, byteorder

if TYPE_CHECKING:
    from stackmark.dwarf.unit_parts import ReaderView

_MASK64 = (1 << 64) - 1
_native = load("_dwarf")  # compiled twin of `_run_program`, or None (stackmark/_native)


class LineRow(NamedTuple):
    """One row of the line number matrix."""

    address: int
    file: int
    line: int
    column: int
    is_stmt: bool
    end_sequence: bool
    discriminator: int


RawRow = tuple[int, int, int, int, bool, bool, int]
"""A row as stored: the fields of `LineRow`, as a plain tuple (cheaper to build)."""


class Sequence(NamedTuple):
    """Rows [first, end) of the table, covering addresses [low, high)."""

    low: int
    high: int
    first: int
    end: int


class FileEntry(NamedTuple):
    name: str
    dir_index: int
    md5: bytes | None = None


class LineProgramHeader:
    """The header fields of one line number program."""

    __slots__ = (
        "address_size",
        "default_is_stmt",
        "directories",
        "files",
        "header_end",
        "line_base",
        "line_range",
        "max_ops_per_inst",
        "min_inst_length",
        "offset",
        "offset_size",
        "opcode_base",
        "program_end",
        "standard_opcode_lengths",
        "version",
    )

    def __init__(self) -> None:
        self.offset = 0
        self.version = 0
        self.offset_size = 4
        self.address_size = 0
        self.min_inst_length = 1
        self.max_ops_per_inst = 1
        self.default_is_stmt = True
        self.line_base = 0
        self.line_range = 0
        self.opcode_base = 0
        self.standard_opcode_lengths: list[int] = []
        self.directories: list[str] = []
        self.files: list[FileEntry] = []
        self.header_end = 0
        self.program_end = 0


# DWARF 5 line table headers: address_size (u8) and segment_selector_size (u8).
_ADDRESS_AND_SEGMENT_SIZE = struct.Struct("BB")


def _read_header(
    reader: "ReaderView[Any]", section: Section, offset: int, unit_addr_size: int
) -> LineProgramHeader:
    h = LineProgramHeader()
    h.offset = offset
    endian = reader.endian
    cursor = section.cursor(offset, endian)
    length = cursor.u32("line table length")
    if length == 0xFFFFFFFF:
        length = cursor.u64("line table length")
        h.offset_size = 8
    h.program_end = cursor.offset + length
    if h.program_end > section.size:
        raise section.error(
            f"line table at 0x{offset:x} claims {length} bytes, past the end of the section",
            offset,
        )
    h.version = cursor.u16("line table version")
    if not 2 <= h.version <= 5:
        raise section.error(
            f"line table at 0x{offset:x} has unsupported version {h.version}", offset
        )
    h.address_size = unit_addr_size
    if h.version >= 5:
        h.address_size, _seg = cursor.unpack(_ADDRESS_AND_SEGMENT_SIZE, "line table address size")
    header_length = cursor.uint(h.offset_size, "line table header length")
    h.header_end = cursor.offset + header_length
    if h.header_end > h.program_end:
        raise section.error(f"line table header at 0x{offset:x} is longer than the table", offset)
    h.min_inst_length = cursor.u8("minimum_instruction_length")
    if h.version >= 4:
        h.max_ops_per_inst = cursor.u8("maximum_operations_per_instruction")
    h.default_is_stmt = cursor.u8("default_is_stmt") != 0
    h.line_base = cursor.sint(1, "line_base")
    h.line_range = cursor.u8("line_range")
    h.opcode_base = cursor.u8("opcode_base")
    count = max(h.opcode_base - 1, 0)
    h.standard_opcode_lengths = list(cursor.bytes(count, "standard opcode lengths"))
    buf = section.buf
    base = section.start
    p = cursor.offset
    try:
        if h.version >= 5:
            enc = Encoding(5, h.address_size, h.offset_size, endian)
            dirs, p = _read_entry_table(reader, section, p, enc, "directory")
            h.directories = [str(entry.get(C.DW_LNCT_path, "")) for entry in dirs]
            files, p = _read_entry_table(reader, section, p, enc, "file name")
            h.files = [
                FileEntry(
                    str(entry.get(C.DW_LNCT_path, "")),
                    _as_int(entry.get(C.DW_LNCT_directory_index, 0)),
                    _as_bytes(entry.get(C.DW_LNCT_MD5)),
                )
                for entry in files
            ]
        else:
            while True:
                name, p = _cstr(section, p)
                if not name:
                    break
                h.directories.append(name)
            while True:
                name, p = _cstr(section, p)
                if not name:
                    break
                dir_index, q = read_uleb(buf, base + p)
                q = skip_leb(buf, q)  # modification time
                q = skip_leb(buf, q)  # length
                p = q - base
                h.files.append(FileEntry(name, dir_index))
    except IndexError:
        raise section.error(f"line table header at 0x{offset:x} is truncated", offset) from None
    if p > h.header_end:
        raise section.error(
            f"line table header at 0x{offset:x} runs past its stated length", offset
        )
    return h


def _as_int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _as_bytes(value: object) -> bytes | None:
    return value if isinstance(value, bytes) else None


def _cstr(section: Section, p: int) -> tuple[str, int]:
    start = section.check(p, 1, "line table string")
    nul = section.buf.find(b"\0", start, section.end)
    if nul < 0:
        raise section.error("unterminated string in line table header", p)
    return section.buf[start:nul].decode("utf-8", "surrogateescape"), nul + 1 - section.start


def _read_entry_table(
    reader: "ReaderView[Any]", section: Section, p: int, enc: Encoding, what: str
) -> tuple[list[dict[int, object]], int]:
    """A DWARF 5 directory or file-name table: formats, then entries."""
    buf = section.buf
    base = section.start
    format_count = buf[base + p]
    pos = base + p + 1
    formats = []
    for _ in range(format_count):
        content, pos = read_uleb(buf, pos)
        form, pos = read_uleb(buf, pos)
        formats.append((content, form))
    count, pos = read_uleb(buf, pos)
    entries = []
    for _ in range(count):
        entry: dict[int, object] = {}
        for content, form in formats:
            try:
                raw, pos = read_form(buf, pos, form, enc)
            except ValueError as exc:
                raise section.error(f"{what} table: {exc}", pos - base) from None
            if content == C.DW_LNCT_path:
                entry[content] = _string_of(reader, form, raw)
            else:
                entry[content] = raw
        entries.append(entry)
    return entries, pos - base


def _string_of(reader: "ReaderView[Any]", form: int, raw: object) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, int):
        if form == C.DW_FORM_line_strp:
            return reader.line_str.cstring(raw)
        if form == C.DW_FORM_strp:
            return reader.debug_str.cstring(raw)
    return ""


WIDTH = 7
"""Fields per row in the wide flat row store (`LineTable._flat`): LineRow's fields,
in its order."""

IS_STMT, END_SEQUENCE = 1, 2
"""The bits of `RowColumns.flags`."""


class RowColumns(NamedTuple):
    """The rows of one table, column by column, each column in the narrowest array
    type that holds its values.

    Why: a row as a Python tuple costs about 180 bytes, seven slots of an
    unsigned 64-bit array 56; these columns cost 21 (8 for the address, 4 for
    the line and the discriminator, 2 for the file and the column, which are
    16-bit registers, 1 for the flags), which matters once every unit of a
    large program has been read (docs/benchmarks.md). A line or discriminator
    past 32 bits (garbage tables) makes its column 64-bit."""

    addresses: "array[int]"  # Q
    files: "array[int]"  # H
    lines: "array[int]"  # I, or Q
    columns: "array[int]"  # H
    discriminators: "array[int]"  # I, or Q
    flags: "array[int]"  # B: IS_STMT | END_SEQUENCE


def _narrowest(values: Sequence_[int], typecode: str) -> "array[int]":
    """`values` as an array of `typecode`, or of Q when one of them needs more."""
    try:
        return array(typecode, values)
    except OverflowError:
        return array("Q", values)


def _columns_of(flat: list[int]) -> RowColumns:
    """The rows of a flat list (WIDTH values each, already wrapped to 64 bits) as columns."""
    return RowColumns(
        array("Q", flat[0::WIDTH]),
        array("H", flat[1::WIDTH]),
        _narrowest(flat[2::WIDTH], "I"),
        array("H", flat[3::WIDTH]),
        _narrowest(flat[6::WIDTH], "I"),
        array("B", [s | e << 1 for s, e in zip(flat[4::WIDTH], flat[5::WIDTH], strict=True)]),
    )


class Rows(Sequence_[RawRow]):
    """The rows of a table as a read-only sequence of tuples over its row store."""

    __slots__ = ("_table",)

    def __init__(self, table: "LineTable"):
        self._table = table

    def __len__(self) -> int:
        return len(self._table._addresses)

    @overload
    def __getitem__(self, index: int) -> RawRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[RawRow]: ...

    def __getitem__(self, index: int | slice) -> RawRow | list[RawRow]:
        row_at = self._table._row_at
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return [row_at(i) for i in range(start, stop, step)]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("row index out of range")
        return row_at(index)


def _row(columns: RowColumns, index: int) -> RawRow:
    flags = columns.flags[index]
    return (
        columns.addresses[index],
        columns.files[index],
        columns.lines[index],
        columns.columns[index],
        bool(flags & IS_STMT),
        bool(flags & END_SEQUENCE),
        columns.discriminators[index],
    )


class LineTable:
    """The rows and sequences of one line number program, and lookups over them."""

    def __init__(
        self,
        header: LineProgramHeader,
        columns: RowColumns,
        sequences: list[Sequence],
        comp_dir: str | None,
        sequence_sections: list[int | None] | None = None,
    ):
        self.header = header
        # The section of each sequence, in a relocatable object only (None: none).
        self.sequence_sections = sequence_sections
        # The rows: in columns, until the GSYM converter asks for the wide store
        # (`_flat`), which then replaces them (the addresses stay, for lookups).
        self._columns: RowColumns | None = columns
        self._wide: array[int] | None = None
        self.rows = Rows(self)  # tuples in LineRow's field order
        self.sequences = sequences  # ordered by high
        self.comp_dir = comp_dir or ""
        self._addresses = columns.addresses
        self._seq_highs = [seq.high for seq in sequences]
        self._names: dict[int, str | None] = {}

    @property
    def version(self) -> int:
        return self.header.version

    @property
    def _flat(self) -> "array[int]":
        """The rows as one array of WIDTH uint64 per row, made on first use, which
        then replaces the columns: the GSYM converter's compiled loops read rows in
        that layout, and keeping both would cost it 21 more bytes a row (lookups
        never ask for it)."""
        wide = self._wide
        if wide is None:
            columns = self._columns
            assert columns is not None  # (there is always one store or the other)
            wide = self._wide = _wide_rows(columns)
            self._columns = None  # after the wide store: another thread may be reading
        return wide

    def _row_at(self, index: int) -> RawRow:
        columns = self._columns
        if columns is not None:
            return _row(columns, index)
        wide = self._wide
        assert wide is not None
        at = index * WIDTH
        a, f, line, c, stmt, end, d = wide[at : at + WIDTH]
        return (a, f, line, c, bool(stmt), bool(end), d)

    def row_index(self, address: int) -> int | None:
        """Index of the row describing `address` (llvm's lookupAddress), or None."""
        i = bisect_right(self._seq_highs, address)
        if i == len(self.sequences):
            return None
        seq = self.sequences[i]
        if not seq.low <= address < seq.high:
            return None
        # last row in [first, end - 1) whose address is <= address
        return bisect_right(self._addresses, address, seq.first + 1, seq.end - 1) - 1

    def lookup(self, address: int, section: int | None = None) -> LineRow | None:
        """The row describing `address`; `section`: the object-file section it is in
        (see the module docstring), looked at only where sequences have sections."""
        if section is None or self.sequence_sections is None:
            index = self.row_index(address)
        else:
            index = self._sectioned_row_index(address, section)
            if index is None:
                index = self._sectioned_row_index(address, None)
        return LineRow(*self._row_at(index)) if index is not None else None

    def _sectioned_row_index(self, address: int, section: int | None) -> int | None:
        """llvm's lookupAddressImpl: the first of the section's sequences (by end
        address) that ends above `address`, if it starts at or below it."""
        assert self.sequence_sections is not None
        for seq, seq_section in zip(self.sequences, self.sequence_sections, strict=True):
            if seq_section == section and address < seq.high:
                if not seq.low <= address:
                    return None
                return bisect_right(self._addresses, address, seq.first + 1, seq.end - 1) - 1
        return None

    def row(self, index: int) -> LineRow:
        return LineRow(*self.rows[index])

    def rows_in(self, low: int, high: int) -> Iterator[LineRow]:
        """Rows of the sequences overlapping [low, high) that describe addresses in it,
        starting with the row in effect at `low` (llvm's lookupAddressRange)."""
        i = bisect_right(self._seq_highs, low)
        if i == len(self.sequences) or not self.sequences[i].low <= low:
            return
        first = True
        while i < len(self.sequences) and self.sequences[i].low < high:
            seq = self.sequences[i]
            start = seq.first
            if first:
                start = bisect_right(self._addresses, low, seq.first + 1, seq.end - 1) - 1
                first = False
            if seq.low <= high - 1 < seq.high:
                stop = bisect_right(self._addresses, high - 1, seq.first + 1, seq.end - 1)
            else:
                stop = seq.end
            for index in range(start, stop):
                yield LineRow(*self._row_at(index))
            i += 1

    def has_file(self, index: int) -> bool:
        if self.header.version >= 5:
            return 0 <= index < len(self.header.files)
        return 1 <= index <= len(self.header.files)

    def file_entry(self, index: int) -> FileEntry | None:
        if not self.has_file(index):
            return None
        return self.header.files[index if self.header.version >= 5 else index - 1]

    def file_name(self, index: int, *, relative: bool = False) -> str | None:
        """File `index` as llvm-symbolizer prints it; None if absent.

        By default the absolute path; `relative` gives llvm's
        `--relativenames` form: the path as the line table holds it, without
        the compilation directory (an absolute include directory stays)."""
        key = -1 - index if relative else index
        if key in self._names:
            return self._names[key]
        entry = self.file_entry(index)
        result = None if entry is None else self._path(entry, relative)
        self._names[key] = result
        return result

    def _path(self, entry: FileEntry, relative: bool) -> str:
        name = entry.name
        if _is_absolute(name):
            return name
        dirs = self.header.directories
        include = ""
        if self.header.version >= 5:
            # entry 0 is the compilation directory itself: not part of a relative name
            if entry.dir_index < len(dirs) and not (relative and entry.dir_index == 0):
                include = dirs[entry.dir_index]
        elif 0 < entry.dir_index <= len(dirs):
            include = dirs[entry.dir_index - 1]
        path = ""
        if (
            not relative
            and (self.header.version < 5 or entry.dir_index != 0)
            and self.comp_dir
            and not _is_absolute(include)
        ):
            path = self.comp_dir
        return _path_append(path, include, name)


def _is_absolute(path: str) -> bool:
    """Absolute for POSIX or Windows, as llvm's isPathAbsoluteOnWindowsOrPosix."""
    if path.startswith("/"):
        return True
    if path.startswith("\\\\"):
        return True
    return len(path) >= 3 and path[0].isalpha() and path[1] == ":" and path[2] in "/\\"


def _path_append(path: str, *components: str) -> str:
    """llvm::sys::path::append in POSIX style: one '/' between components."""
    for component in components:
        if path.endswith("/"):
            path += component.lstrip("/")
        elif component.startswith("/") or not path:
            path += component
        else:
            path += "/" + component
    return path


def _wide_rows(columns: RowColumns) -> "array[int]":
    """`columns` as one flat array of WIDTH uint64 per row (LineRow's field order)."""
    wide = array("Q")
    if _native is not None:
        wide.frombytes(_native.wide_rows(*columns))
        return wide
    count = len(columns.addresses)
    wide.frombytes(bytes(8 * WIDTH * count))
    flags = columns.flags
    for field, values in enumerate(
        (
            columns.addresses,
            columns.files,
            columns.lines,
            columns.columns,
            array("Q", [flag & IS_STMT for flag in flags]),
            array("Q", [(flag & END_SEQUENCE) >> 1 for flag in flags]),
            columns.discriminators,
        )
    ):
        wide[field::WIDTH] = values if values.typecode == "Q" else array("Q", values)
    return wide


def parse_line_table(
    reader: "ReaderView[Any]", offset: int, unit_addr_size: int, comp_dir: str | None
) -> LineTable:
    """Read the line number program at .debug_line `offset` and run it."""
    section = reader.line
    header = _read_header(reader, section, offset, unit_addr_size)
    places = reader.relocated_places(section.name)
    # (the kernel does not report where each sequence's address came from, which a
    # relocatable object's sections need: the reference runs for those)
    compiled = (
        _run_program_compiled(section, header, reader.endian) if _native and not places else None
    )
    try:
        if compiled is not None:
            columns, sequences = compiled
        else:
            columns, sequences, address_at = _run_program(section, header, reader.endian)
    except (IndexError, struct.error):
        raise section.error(f"line table at 0x{offset:x} is truncated", offset) from None
    if not places:
        sequences.sort(key=lambda s: s.high)
        return LineTable(header, columns, sequences, comp_dir)
    order = sorted(range(len(sequences)), key=lambda i: sequences[i].high)
    sections = [places.get(address_at[i]) for i in order]
    return LineTable(header, columns, [sequences[i] for i in order], comp_dir, sections)


def _run_program_compiled(
    section: Section, h: LineProgramHeader, endian: str
) -> "tuple[RowColumns, list[Sequence]] | None":
    """`_run_program` by the compiled kernel (without the sequences' address
    offsets, which only relocatable objects need); None when the reference must run."""
    assert _native is not None
    found = _native.run_line_program(
        section.buf,
        section.start + h.header_end,
        section.start + h.program_end,
        h.opcode_base,
        h.min_inst_length,
        max(h.max_ops_per_inst, 1),
        h.default_is_stmt,
        h.line_base,
        h.line_range,
        bytes(h.standard_opcode_lengths),
        endian == "<",
    )
    if found is None:
        return None
    pairs, sequences = found
    columns = []
    for typecode, data in pairs:
        column = array(typecode)
        column.frombytes(data)
        columns.append(column)
    return RowColumns(*columns), [Sequence(*seq) for seq in sequences]


def _run_program(
    section: Section, h: LineProgramHeader, endian: str
) -> "tuple[RowColumns, list[Sequence], list[int]]":
    """The line number state machine (DWARF 5 6.2.2), producing rows and sequences,
    and for each sequence the section offset of its last DW_LNE_set_address
    operand (-1: none), where a relocatable object's relocation says its section.

    This is the hottest loop of a lookup, so it is written for CPython: opcode
    numbers are literals (DW_LNS_* in comments), one-byte LEB128 operands are
    decoded inline, rows go to one flat list (WIDTH values each, made into
    columns at the end), and registers are not wrapped to their llvm
    widths here: modular arithmetic gives the same residues when `_packed`
    masks them on the way out.
    """
    buf = section.buf
    pos = section.start + h.header_end
    end = section.start + h.program_end
    opcode_base = h.opcode_base
    min_inst = h.min_inst_length
    max_ops = max(h.max_ops_per_inst, 1)
    default_is_stmt = 1 if h.default_is_stmt else 0
    std_lengths = h.standard_opcode_lengths
    order = byteorder(endian)

    # Special opcodes: precomputed address and line advances.
    sp_addr = [0] * 256
    sp_ops = [0] * 256
    sp_line = [0] * 256
    line_range = h.line_range
    for opcode in range(opcode_base, 256):
        adjusted = (opcode - opcode_base) & 0xFF
        if line_range:
            sp_ops[opcode] = adjusted // line_range
            sp_addr[opcode] = (adjusted // line_range) * min_inst
            sp_line[opcode] = h.line_base + adjusted % line_range
    const_add_ops = ((255 - opcode_base) & 0xFF) // line_range if line_range else 0
    simple = max_ops == 1

    flat: list[int] = []
    sequences: list[Sequence] = []
    emit = flat.extend

    address = 0
    op_index = 0
    file = 1
    line = 1
    column = 0
    is_stmt = default_is_stmt
    discriminator = 0
    seq_first = 0  # index (in rows) of the first row of the current sequence
    address_at = -1  # section offset of the last DW_LNE_set_address operand
    sequence_address_at: list[int] = []
    tombstoned = False  # the last DW_LNE_set_address was the tombstone
    tomb_first = 0  # rows from this index on were emitted while tombstoned

    while pos < end:
        opcode = buf[pos]
        pos += 1
        if opcode >= opcode_base:
            if simple:
                address += sp_addr[opcode]
            else:
                advance = op_index + sp_ops[opcode]
                address += (advance // max_ops) * min_inst
                op_index = advance % max_ops
            line += sp_line[opcode]
            emit((address, file, line, column, is_stmt, 0, discriminator))
            discriminator = 0
        elif opcode == 5:  # DW_LNS_set_column
            column = buf[pos]
            if column < 0x80:
                pos += 1
            else:
                column, pos = read_uleb(buf, pos)
                column &= 0xFFFF
        elif opcode == 1:  # DW_LNS_copy
            emit((address, file, line, column, is_stmt, 0, discriminator))
            discriminator = 0
        elif opcode == 6:  # DW_LNS_negate_stmt
            is_stmt ^= 1
        elif opcode == 3:  # DW_LNS_advance_line
            delta = buf[pos]
            if delta < 0x80:
                pos += 1
                line += delta - 0x80 if delta & 0x40 else delta
            else:
                high = buf[pos + 1]
                if high < 0x80:  # two bytes
                    pos += 2
                    delta = (delta & 0x7F) | (high << 7)
                    line += delta - 0x4000 if high & 0x40 else delta
                else:
                    delta, pos = read_sleb(buf, pos)
                    line += delta
        elif opcode == 4:  # DW_LNS_set_file
            file = buf[pos]
            if file < 0x80:
                pos += 1
            else:
                file, pos = read_uleb(buf, pos)
                file &= 0xFFFF
        elif opcode == 0:  # extended opcode
            length = buf[pos]
            if length < 0x80:
                pos += 1
            else:
                length, pos = read_uleb(buf, pos)
            if length == 0:
                continue
            ext_end = pos + length
            sub = buf[pos]
            if sub == 4:  # DW_LNE_set_discriminator
                discriminator = buf[pos + 1]
                if discriminator >= 0x80:
                    discriminator, _ = read_uleb(buf, pos + 1)
            elif sub == 1:  # DW_LNE_end_sequence
                emit((address, file, line, column, is_stmt, 1, discriminator))
                rows = len(flat) // WIDTH
                if tombstoned:
                    del flat[tomb_first * WIDTH :]  # llvm emits nothing at a tombstone
                    rows = tomb_first
                else:
                    low = flat[seq_first * WIDTH] & _MASK64
                    if low < address & _MASK64:
                        sequences.append(Sequence(low, address & _MASK64, seq_first, rows))
                        sequence_address_at.append(address_at)
                address_at = -1
                seq_first = rows
                tomb_first = rows
                address = op_index = column = discriminator = 0
                file = line = 1
                is_stmt = default_is_stmt
            elif sub == 2:  # DW_LNE_set_address
                size = length - 1
                if size in (1, 2, 4, 8):
                    address = int.from_bytes(buf[pos + 1 : pos + 1 + size], order)
                    address_at = pos + 1 - section.start
                    op_index = 0
                    # llvm drops every row from a tombstone address to the next set_address.
                    if address == (1 << (8 * size)) - 1:
                        if not tombstoned:
                            tombstoned = True
                            tomb_first = len(flat) // WIDTH
                    elif tombstoned:
                        tombstoned = False
                        del flat[tomb_first * WIDTH :]
                        seq_first = min(seq_first, tomb_first)
            # DW_LNE_define_file (obsolete) and unknown opcodes: skipped by length.
            pos = ext_end
        elif opcode == 8:  # DW_LNS_const_add_pc
            advance = op_index + const_add_ops
            address += (advance // max_ops) * min_inst
            op_index = advance % max_ops
        elif opcode == 2:  # DW_LNS_advance_pc
            value, pos = read_uleb(buf, pos)
            advance = op_index + value
            address += (advance // max_ops) * min_inst
            op_index = advance % max_ops
        elif opcode == 9:  # DW_LNS_fixed_advance_pc
            address += int.from_bytes(buf[pos : pos + 2], order)
            op_index = 0
            pos += 2
        elif opcode in (7, 10, 11):  # basic_block, prologue_end, epilogue_begin
            pass
        elif opcode == 12:  # DW_LNS_set_isa
            _, pos = read_uleb(buf, pos)
        else:  # an opcode this reader does not know: skip its LEB128 operands
            for _ in range(std_lengths[opcode - 1]):
                _, pos = read_uleb(buf, pos)
    if tombstoned:
        del flat[tomb_first * WIDTH :]
    return _packed(flat), sequences, sequence_address_at


def _packed(flat: list[int]) -> RowColumns:
    """The flat row list as columns, address, line and discriminator wrapped to
    llvm's register widths (64, 32 and 32 bits) when a garbage table took one of
    them out of the uint64 range (a discriminator's LEB128 can be wider than 64 bits)."""
    try:
        return _columns_of(flat)
    except OverflowError:
        fixed = list(flat)
        fixed[0::WIDTH] = [a & _MASK64 for a in fixed[0::WIDTH]]
        fixed[2::WIDTH] = [v & 0xFFFFFFFF for v in fixed[2::WIDTH]]
        fixed[6::WIDTH] = [d & 0xFFFFFFFF for d in fixed[6::WIDTH]]
        return _columns_of(fixed)
