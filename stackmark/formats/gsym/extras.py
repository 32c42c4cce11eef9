"""GSYM extras (`.gsymx`): what the cache keeps beside a GSYM file.

A GSYM keeps one name per function or inlined call and no columns, while
`stackmark symbolize` prints what llvm-symbolizer prints from DWARF: the
linkage and the short name, columns, call-site columns. And a GSYM lookup
decodes a function's line table and inline tree from their start, which
costs hundreds of microseconds in Python on large functions. The extras
file holds both what is missing and a flat address index, so that a warm
lookup is one binary search:

    header (64 bytes, little-endian; `HEADER_LAYOUT` declares it once)
      0  4  magic             "SMGX"
      4  2  version           2
      6  2  padding           zero
      8  8  gsym_size         size of the paired GSYM file
     16  4  gsym_crc          CRC-32 of the paired GSYM file
     20  4  num_functions     (= the GSYM's NumAddresses)
     24  4  num_nodes
     28  4  num_bounds        address bounds
     32  4  num_states
     36  4  num_path_entries
     40  4  num_paths
     44  4  strtab_size       string table size
     48  4  body_crc          CRC-32 of everything after the header (version 2:
                              a damaged file must not name the wrong functions)
     52 12  reserved          zero
    u32 first_node[functions + 1]  nodes of function i: first_node[i]..first_node[i+1]
    u32 linkage[nodes]              string offset + 1 (0: none)
    u32 name[nodes]                 string offset + 1 (0: none)
    u32 call_file[nodes]            GSYM file index of the call site
    u32 call_line[nodes]
    u32 call_column[nodes]
    u64 bound_address[bounds]       ascending
    u32 bound_state[bounds]         0xFFFFFFFF: no DWARF function from here on
    u32 state_function[states]      GSYM function index
    u32 state_file[states]          GSYM file index of the line row (0: none)
    u32 state_line[states]
    u32 state_column[states]
    u32 state_path[states]          index into path_first
    u32 path_first[paths + 1]       path p: path_node[path_first[p]..path_first[p+1]]
    u32 path_node[path entries]     node indexes within the function, root first
    string table                    NUL-terminated UTF-8

A function's nodes are its inline tree in the GSYM's depth-first order, the
root (the function itself) first; a function from the symbol table alone
has none. The answer at an address is the state of the last bound at or
before it: which function (as the GSYM lookup chooses it), the line row
and DWARF column in effect there, and the inline calls holding it.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from stackmark._native import load
from stackmark.binary import Buffer, RecordLayout, unpack_at
from stackmark.formats.gsym.codec import RecordError
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.ranges import Range

MAGIC = b"SMGX"
VERSION = 2
NO_COLUMN = 0xFFFFFFFF
NO_STATE = 0xFFFFFFFF
# The header, (field name, struct code) in file order: the writer, the reader and
# tests/unit/test_gsym_extras_format.py go through it.
HEADER_LAYOUT = RecordLayout(
    "GSYM extras header",
    ("magic", "4s"),
    ("version", "H"),
    ("padding", "H"),
    ("gsym_size", "Q"),
    ("gsym_crc", "I"),
    ("num_functions", "I"),
    ("num_nodes", "I"),
    ("num_bounds", "I"),
    ("num_states", "I"),
    ("num_path_entries", "I"),
    ("num_paths", "I"),
    ("strtab_size", "I"),
    ("body_crc", "I"),
    ("reserved", "12s"),
)
HEADER_SIZE = HEADER_LAYOUT.size  # 64
_LITTLE_HOST = sys.byteorder == "little"

_native = load("_gsym_extras")


class NodeExtra(NamedTuple):
    """Names and call-site column of one function or inlined call, as DWARF gives them.

    A named tuple (not a dataclass): a large binary has hundreds of
    thousands, made in worker processes and sent to the parent as plain
    tuples.
    """

    linkage_name: str | None
    name: str | None
    call_column: int = 0


def gsym_fingerprint(gsym: Buffer) -> tuple[int, int]:
    """(size, CRC-32) that binds an extras file to its GSYM."""
    return len(gsym), zlib.crc32(gsym) & 0xFFFFFFFF


def _tree_nodes(root: InlineInfo | None) -> list[tuple[InlineInfo, int]]:
    """(node, parent index) in depth-first order, the root first (parent -1)."""
    if root is None:
        return []
    out: list[tuple[InlineInfo, int]] = []
    stack = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        index = len(out)
        out.append((node, parent))
        stack.extend((child, index) for child in reversed(node.children))
    return out


def _depth_first(root: InlineInfo | None) -> list[InlineInfo]:
    """The tree's nodes in depth-first order, the root first (`_tree_nodes`
    without the parents)."""
    if root is None:
        return []
    out: list[InlineInfo] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(node.children))
    return out


def _subtract(region: list[Range], taken: list[Range]) -> list[Range]:
    """`region` minus `taken` (both sorted, non-overlapping)."""
    out: list[Range] = []
    t = 0
    for start, end in region:
        cursor = start
        while t < len(taken) and taken[t][1] <= cursor:
            t += 1
        k = t
        while k < len(taken) and taken[k][0] < end:
            a, b = taken[k]
            if a > cursor:
                out.append((cursor, a))
            cursor = max(cursor, b)
            k += 1
        if cursor < end:
            out.append((cursor, end))
    return out


def _intersect(a: list[Range], b: list[Range]) -> list[Range]:
    out: list[Range] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _paint(root: InlineInfo, index_of: dict[int, int]) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, path) segments: which inline calls hold each address, root first.

    LLVM's lookup takes, at each level, the first child whose ranges hold the
    address; so children claim their ranges in order, each only what the
    children before it left.
    """
    out: list[tuple[int, int, tuple[int, ...]]] = []
    work: list[tuple[InlineInfo, tuple[int, ...], list[Range]]] = [
        (root, (index_of[id(root)],), list(root.ranges))
    ]
    while work:
        node, path, region = work.pop()
        remaining = region
        for child in node.children:
            if not remaining:
                break
            child_ranges = child.ranges
            if len(child_ranges) == 1 and len(remaining) == 1:  # the common case, inline
                (a_low, a_high), (b_low, b_high) = child_ranges[0], remaining[0]
                low, high = max(a_low, b_low), min(a_high, b_high)
                if low >= high:
                    continue
                claimed = [(low, high)]
                remaining = [r for r in ((b_low, low), (high, b_high)) if r[0] < r[1]]
            else:
                claimed = _intersect(child_ranges, remaining)
                if not claimed:
                    continue
                remaining = _subtract(remaining, claimed)
            work.append((child, (*path, index_of[id(child)]), claimed))
        out.extend((start, end, path) for start, end in remaining)
    out.sort()
    return out


class ExtrasBuilder:
    """Collects nodes per function, then the address index; `encode` gives the bytes."""

    def __init__(self, columns: tuple[Sequence[int], Sequence[int]] = ((), ())) -> None:
        """`columns`: (addresses, column values) of the column points, sorted
        (`ExtrasCollector.column_points`)."""
        self._strings: dict[str, int] = {}
        self._strtab = bytearray()
        self.first_node = array("I", [0])
        self.linkage = array("I")
        self.name = array("I")
        self.call_file = array("I")
        self.call_line = array("I")
        self.call_column = array("I")
        self.bound_address = array("Q")
        self.bound_state = array("I")
        self._states: dict[tuple[int, int, int, int, int], int] = {}
        self._paths: dict[tuple[int, ...], int] = {(): 0}
        self.path_first = array("I", [0, 0])
        self.path_node = array("I")
        self._column_address = columns[0]
        self._column_value = columns[1]
        self._state_tables: list[array[int]] | None = None  # made by the compiled index

    def _string(self, text: str | None) -> int:
        if text is None:
            return 0
        offset = self._strings.get(text)
        if offset is None:
            offset = len(self._strtab)
            self._strtab += text.encode("utf-8", "surrogateescape") + b"\0"
            self._strings[text] = offset
        return offset + 1

    def _column_at(self, address: int) -> int | None:
        i = bisect_right(self._column_address, address) - 1
        if i < 0:
            return None
        value = self._column_value[i]
        return None if value == NO_COLUMN else value

    def _bound(self, address: int, state: int) -> None:
        if self.bound_address and self.bound_address[-1] == address:
            self.bound_state[-1] = state
            if len(self.bound_state) > 1 and self.bound_state[-2] == state:
                self.bound_address.pop()
                self.bound_state.pop()
        elif not self.bound_state or self.bound_state[-1] != state:
            self.bound_address.append(address)
            self.bound_state.append(state)

    def add_functions(
        self, functions: Sequence[FunctionInfo], nodes: Sequence[list[NodeExtra]]
    ) -> None:
        """All functions, in GSYM order, with their extras nodes ([] for symbol-only ones)."""
        if not self._add_nodes_natively(functions, nodes):
            for info, extras in zip(functions, nodes, strict=True):
                self._add_nodes(info, extras)
        if self._index_natively(functions, nodes):
            return
        starts = [f.start for f in functions]
        n = len(functions)
        i = 0
        while i < n:
            j = i
            while j < n and starts[j] == starts[i]:
                j += 1
            region_end = starts[j] if j < n else None
            self._add_group(functions, nodes, i, j, region_end)
            i = j

    def _add_nodes_natively(
        self, functions: Sequence[FunctionInfo], nodes: Sequence[list[NodeExtra]]
    ) -> bool:
        """`_add_nodes` of every function by the compiled twin, when it is active,
        the builder holds no node or string yet and the compiled code takes the
        input (anything unusual is left to `_add_nodes`); False otherwise."""
        if _native is None or len(self.first_node) > 1 or self._strtab:
            return False
        tables = _native.node_tables(functions, nodes, NodeExtra)
        if tables is None:
            return False
        self._strings, self._strtab, *columns = tables
        own = (self.first_node, self.linkage, self.name, self.call_file, self.call_line)
        for table, data in zip((*own, self.call_column), columns, strict=True):
            table.frombytes(data)
        return True

    def _index_natively(
        self, functions: Sequence[FunctionInfo], nodes: Sequence[list[NodeExtra]]
    ) -> bool:
        """The bounds, states and paths built by the compiled index, when it is
        active, the builder holds no bounds yet and the compiled code takes the
        input (it leaves anything unusual to the code below); False otherwise."""
        if _native is None or self.bound_address or self._states or len(self._paths) > 1:
            return False
        column_address, column_value = self._column_address, self._column_value
        if not (isinstance(column_address, array) and isinstance(column_value, array)):
            column_address, column_value = array("Q", column_address), array("I", column_value)
        tables = _native.index_functions(
            functions, bytes(1 if extras else 0 for extras in nodes), column_address, column_value
        )
        if tables is None:
            return False
        host = [array("Q" if i == 0 else "I") for i in range(len(tables))]
        for table, data in zip(host, tables, strict=True):
            table.frombytes(data)
        (self.bound_address, self.bound_state, *states, self.path_first, self.path_node) = host
        self._state_tables = states
        return True

    def _add_group(
        self,
        functions: Sequence[FunctionInfo],
        nodes: Sequence[list[NodeExtra]],
        first: int,
        end: int,
        region_end: int | None,
    ) -> None:
        """The bounds of entries first..end-1, which share a start; LLVM answers
        with the first that is size 0 or holds the address, up to the next start."""
        start = functions[first].start
        cursor = start
        for k in range(first, end):
            info = functions[k]
            stop = region_end if info.size == 0 else start + info.size
            if region_end is not None and stop is not None:
                stop = min(stop, region_end)
            if stop is not None and stop <= cursor:
                continue
            if nodes[k]:
                self._index_function(k, info, cursor, stop)
            else:
                self._bound(cursor, NO_STATE)
            if stop is None:
                return
            cursor = stop
        self._bound(cursor, NO_STATE)

    def _add_nodes(self, info: FunctionInfo, extras: list[NodeExtra]) -> None:
        """The names and call sites of a function's nodes: the extras' names and
        columns, the tree's call files and lines (none for the root, and none for
        extras past the tree's nodes)."""
        if extras:
            string = self._string
            linkage, name = self.linkage, self.name
            for extra in extras:
                linkage.append(string(extra.linkage_name))
                name.append(string(extra.name))
            self.call_column.extend([extra.call_column & 0xFFFFFFFF for extra in extras])
            calls = _depth_first(info.inline)[1 : len(extras)]
            missing = [0] * (len(extras) - 1 - len(calls))
            self.call_file.append(0)
            self.call_file.extend([node.call_file for node in calls])
            self.call_file.extend(missing)
            self.call_line.append(0)
            self.call_line.extend([node.call_line for node in calls])
            self.call_line.extend(missing)
        self.first_node.append(len(self.linkage))

    def _index_function(self, k: int, info: FunctionInfo, low: int, high: int | None) -> None:
        """Bounds for [low, high) of function `k`: a new state wherever the line
        row, the column or the inline path changes.

        This runs for over a million points on a large binary, so the row,
        column and path cursors and `_bound`'s merging are written inline.
        """
        end = max(info.start + info.size, low + 1) if high is None else high
        rows = info.line_table or []
        tree = _tree_nodes(info.inline)
        if tree:
            index_of = {id(node): i for i, (node, _) in enumerate(tree)}
            segments = _paint(tree[0][0], index_of)
        else:
            segments = []
        column_address, column_value = self._column_address, self._column_value
        c = bisect_right(column_address, low)
        c1 = bisect_right(column_address, end - 1) if end > low else c
        row_addrs = [row[0] for row in rows]
        points = {low}
        points.update(a for a in row_addrs if low < a < end)
        points.update(seg[0] for seg in segments if low < seg[0] < end)
        points.update(column_address[c:c1])
        row_i = -1
        seg_i = 0
        nrows, nsegs, ncolumns = len(rows), len(segments), len(column_address)
        paths = self._paths
        path_ids: dict[tuple[int, ...], int] = {}
        states = self._states
        bound_address, bound_state = self.bound_address, self.bound_state
        for address in sorted(points):
            while row_i + 1 < nrows and row_addrs[row_i + 1] <= address:
                row_i += 1
            while c < ncolumns and column_address[c] <= address:
                c += 1
            while seg_i < nsegs and segments[seg_i][1] <= address:
                seg_i += 1
            if seg_i < nsegs and segments[seg_i][0] <= address:
                path = segments[seg_i][2]
            else:
                path = ()
            path_id = path_ids.get(path)
            if path_id is None:
                path_id = paths.get(path)
                if path_id is None:
                    path_id = paths[path] = len(paths)
                    self.path_node.extend(path)
                    self.path_first.append(len(self.path_node))
                path_ids[path] = path_id
            value = column_value[c - 1] if c > 0 else NO_COLUMN
            if row_i < 0 or value == NO_COLUMN or rows[row_i][1] == 0:
                key = (k, 0, 0, NO_COLUMN, path_id)
            else:
                row = rows[row_i]
                key = (k, row[1], row[2], value, path_id)
            state = states.get(key)
            if state is None:
                state = states[key] = len(states)
            # `_bound(address, state)`, inline.
            if bound_address and bound_address[-1] == address:
                bound_state[-1] = state
                if len(bound_state) > 1 and bound_state[-2] == state:
                    bound_address.pop()
                    bound_state.pop()
            elif not bound_state or bound_state[-1] != state:
                bound_address.append(address)
                bound_state.append(state)

    def _state_columns(self) -> list[array[int]]:
        """state_function, state_file, state_line, state_column, state_path."""
        if self._state_tables is not None:
            return self._state_tables
        states = list(self._states)
        return [
            array("I", (s[0] for s in states)),
            array("I", (s[1] for s in states)),
            array("I", (s[2] & 0xFFFFFFFF for s in states)),
            array("I", (s[3] for s in states)),
            array("I", (s[4] for s in states)),
        ]

    def encode(self, gsym: Buffer) -> bytes:
        size, crc = gsym_fingerprint(gsym)
        states = self._state_columns()
        tables = [
            self.first_node,
            self.linkage,
            self.name,
            self.call_file,
            self.call_line,
            self.call_column,
            self.bound_address,
            self.bound_state,
            *states,
            self.path_first,
            self.path_node,
        ]
        parts = []
        for table in tables:
            copy = array(table.typecode, table)
            if not _LITTLE_HOST:
                copy.byteswap()
            parts.append(copy.tobytes())
        parts.append(bytes(self._strtab))
        body = b"".join(parts)
        header = HEADER_LAYOUT.pack(
            "<",
            {
                "magic": MAGIC,
                "version": VERSION,
                "padding": 0,
                "gsym_size": size,
                "gsym_crc": crc,
                "num_functions": len(self.first_node) - 1,
                "num_nodes": len(self.linkage),
                "num_bounds": len(self.bound_address),
                "num_states": len(states[0]),
                "num_path_entries": len(self.path_node),
                "num_paths": len(self.path_first) - 1,
                "strtab_size": len(self._strtab),
                "body_crc": zlib.crc32(body) & 0xFFFFFFFF,
                "reserved": bytes(12),
            },
        )
        return header + body


def _check_body(data: Buffer, body_crc: int, source: str) -> None:
    """The tables and strings are the ones written (CRC-32 in the header)."""
    with memoryview(data) as whole, whole[HEADER_SIZE:] as body:
        actual = zlib.crc32(body) & 0xFFFFFFFF
    if actual != body_crc:
        raise RecordError(
            "extras file is damaged (CRC mismatch)", offset=HEADER_SIZE, source=source
        )


def _pairs_with(gsym: Buffer, size: int, crc: int, checksums: bool) -> bool:
    """Whether the header's (size, CRC) fingerprint is `gsym`'s; without `checksums`
    (a pair already checked byte for byte, see symbols/cache.py) only the size."""
    if not checksums:
        return size == len(gsym)
    return (size, crc) == gsym_fingerprint(gsym)


def _checked_header(data: Buffer, gsym: Buffer, source: str, checksums: bool) -> dict[str, Any]:
    """The header's fields by name, after checking magic, version, pairing with
    `gsym`, the size its counts imply and (with `checksums`) the body's CRC-32."""

    def short(what: str, at: int, size: int) -> RecordError:
        return RecordError("extras file is shorter than its header", offset=0, source=source)

    header = dict(
        zip(
            HEADER_LAYOUT.names,
            unpack_at(HEADER_LAYOUT.compiled("<"), data, 0, len(data), "header", short),
            strict=True,
        )
    )
    at = HEADER_LAYOUT.offsets
    if header["magic"] != MAGIC:
        raise RecordError("not a stackmark GSYM extras file", offset=0, source=source)
    if header["version"] != VERSION:
        raise RecordError(
            f"unsupported extras version {header['version']}", offset=at["version"], source=source
        )
    if not _pairs_with(gsym, header["gsym_size"], header["gsym_crc"], checksums):
        raise RecordError(
            "extras file belongs to another GSYM file", offset=at["gsym_size"], source=source
        )
    need = (
        4 * (header["num_functions"] + 1)
        + 20 * header["num_nodes"]
        + 12 * header["num_bounds"]
        + 20 * header["num_states"]
        + 4 * (header["num_paths"] + 1)
        + 4 * header["num_path_entries"]
        + header["strtab_size"]
    )
    if HEADER_SIZE + need != len(data):
        raise RecordError(
            f"extras file has {len(data)} bytes, its header implies {HEADER_SIZE + need}",
            offset=HEADER_SIZE,
            source=source,
        )
    if checksums:
        _check_body(data, header["body_crc"], source)
    return header


def check_extras_header(
    data: Buffer, gsym: Buffer, source: str = "<extras>", *, checksums: bool = True
) -> None:
    """Check magic, version, size, CRC and pairing with `gsym` without loading the tables
    (`checksums` False: everything but the two CRC-32 passes over the files' bytes)."""
    _checked_header(data, gsym, source, checksums)


class Extras:
    """An extras file read back and checked against its GSYM."""

    def __init__(
        self, data: Buffer, gsym: Buffer, source: str = "<extras>", *, checksums: bool = True
    ):
        """`checksums` False skips the CRC-32 passes (a pair the cache knows is intact)."""
        self.source = source
        header = _checked_header(data, gsym, source, checksums)
        nfuncs = header["num_functions"]
        nnodes = header["num_nodes"]
        nbounds = header["num_bounds"]
        nstates = header["num_states"]
        npath_nodes = header["num_path_entries"]
        npaths = header["num_paths"]
        strsize = header["strtab_size"]
        pos = HEADER_SIZE

        # On a little-endian host the tables are views into `data` (an mmap
        # in the cache): nothing is copied at open, and only the pages a
        # lookup touches become resident. `release()` ends the views.
        self._views: list[memoryview] = []

        def take(typecode: Literal["I", "Q"], count: int) -> Sequence[int]:
            nonlocal pos
            size = count * (8 if typecode == "Q" else 4)
            if _LITTLE_HOST:
                view = memoryview(data)[pos : pos + size].cast(typecode)
                self._views.append(view)
                pos += size
                return view
            table = array(typecode)
            table.frombytes(bytes(data[pos : pos + size]))
            table.byteswap()
            pos += size
            return table

        self.num_functions = nfuncs
        self.first_node = take("I", nfuncs + 1)
        self.linkage = take("I", nnodes)
        self.name = take("I", nnodes)
        self.call_file = take("I", nnodes)
        self.call_line = take("I", nnodes)
        self.call_column = take("I", nnodes)
        self.bound_address = take("Q", nbounds)
        self.bound_state = take("I", nbounds)
        self.state_function = take("I", nstates)
        self.state_file = take("I", nstates)
        self.state_line = take("I", nstates)
        self.state_column = take("I", nstates)
        self.state_path = take("I", nstates)
        self.path_first = take("I", npaths + 1)
        self.path_node = take("I", npath_nodes)
        self._strtab = bytes(data[pos : pos + strsize])
        self._strings: dict[int, str | None] = {0: None}
        self._nodes: dict[int, NodeExtra] = {}
        self._check(nfuncs, nnodes, nstates, npaths, npath_nodes)

    def _check(self, nfuncs: int, nnodes: int, nstates: int, npaths: int, nentries: int) -> None:
        """Cheap structural checks at open; indexes are checked again where used."""
        if self.first_node[0] != 0 or self.first_node[nfuncs] != nnodes:
            raise self.corrupt("node table does not cover its nodes")
        if self.path_first[0] != 0 or self.path_first[npaths] != nentries:
            raise self.corrupt("path table does not cover its entries")
        self.num_states = nstates
        self.num_paths = npaths
        self.num_nodes = nnodes

    def corrupt(self, what: str) -> RecordError:
        return RecordError(f"extras {what}", offset=HEADER_SIZE, source=self.source)

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

    @property
    def string_cache(self) -> dict[int, str | None]:
        """The strings decoded so far, by reference (`string` keeps them here)."""
        return self._strings

    def lookup_tables(self) -> tuple[object, ...]:
        """The tables a warm lookup reads, in the order the compiled lookup
        (`stackmark._native._gsym_lookup.ExtrasIndex`) takes them."""
        return (
            self.first_node,
            self.linkage,
            self.name,
            self.call_file,
            self.call_line,
            self.call_column,
            self.bound_address,
            self.bound_state,
            self.state_function,
            self.state_file,
            self.state_line,
            self.state_column,
            self.state_path,
            self.path_first,
            self.path_node,
            self._strtab,
        )

    def nodes(self, function: int) -> tuple[int, int]:
        """[first, end) node indexes of GSYM function `function`."""
        return self.first_node[function], self.first_node[function + 1]

    def node(self, index: int) -> NodeExtra:
        found = self._nodes.get(index)
        if found is None:
            found = self._nodes[index] = NodeExtra(
                self.string(self.linkage[index]),
                self.string(self.name[index]),
                self.call_column[index],
            )
        return found

    def state_at(self, address: int) -> int:
        """The state index at `address`, or NO_STATE."""
        i = bisect_right(self.bound_address, address) - 1
        state = NO_STATE if i < 0 else self.bound_state[i]
        if state != NO_STATE and (
            state >= self.num_states or self.state_function[state] >= self.num_functions
        ):
            raise self.corrupt(f"bound {i} names a state that does not exist")
        return state

    def release(self) -> None:
        """End the views into the buffer given at open (so that it can be closed)."""
        for view in self._views:
            view.release()
        self._views.clear()

    def path(self, state: int) -> Sequence[int]:
        """Node indexes (within the state's function) of the inline path, root first."""
        p = self.state_path[state]
        if p >= self.num_paths:
            raise self.corrupt(f"state {state} names a path that does not exist")
        nodes = self.path_node[self.path_first[p] : self.path_first[p + 1]]
        function = self.state_function[state]
        width = self.first_node[function + 1] - self.first_node[function]
        if (nodes and max(nodes) >= width) or (not nodes and width == 0):
            raise self.corrupt(f"state {state} names nodes outside its function")
        return nodes
