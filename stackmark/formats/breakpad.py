"""Breakpad text symbol files (`.sym`, as written by `dump_syms`).

One record per line; numbers are hex except line numbers and ids, which
are decimal. Names are the last field and may contain spaces.

    MODULE <os> <arch> <debug-id> <name>
    INFO CODE_ID <code-id> [<file>]                  (other INFO lines ignored)
    FILE <id> <path>
    INLINE_ORIGIN <id> <name>                        (old form: <id> <file-id> <name>)
    FUNC [m] <address> <size> <param-size> <name>
    <address> <size> <line> <file-id>                a line record of the last FUNC
    INLINE <level> <call-line> <call-file-id> <origin-id> (<address> <size>)+
                                                     (old form: without call-file-id;
                                                     told apart by field parity)
    PUBLIC [m] <address> <param-size> <name>
    STACK ...                                        unwind info, ignored here

INLINE records belong to the last FUNC; level 0 is inlined into the
function itself, level n+1 into the last level-n record. A call-file id of
-1 means "unknown". Malformed input raises `FormatError` naming the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from stackmark.errors import FormatError


@dataclass(slots=True)
class BreakpadLine:
    address: int
    size: int
    line: int
    file: int


@dataclass(slots=True)
class BreakpadInline:
    level: int
    call_line: int
    call_file: int | None  # None: old-format record without a call-site file
    origin: int
    ranges: list[tuple[int, int]]  # (address, size)
    line_number: int  # where it was read, for error messages


@dataclass(slots=True)
class BreakpadFunction:
    address: int
    size: int
    param_size: int
    name: str
    multiple: bool = False
    lines: list[BreakpadLine] = field(default_factory=list)
    inlines: list[BreakpadInline] = field(default_factory=list)


@dataclass(slots=True)
class BreakpadPublic:
    address: int
    param_size: int
    name: str
    multiple: bool = False


@dataclass(slots=True)
class InlineOrigin:
    name: str
    file: int | None = None  # old format only


@dataclass(slots=True)
class BreakpadModule:
    os: str
    arch: str
    debug_id: str
    name: str
    code_id: str | None = None
    files: dict[int, str] = field(default_factory=dict)
    origins: dict[int, InlineOrigin] = field(default_factory=dict)
    functions: list[BreakpadFunction] = field(default_factory=list)
    publics: list[BreakpadPublic] = field(default_factory=list)

    def build_id(self) -> bytes:
        """The ELF build ID: the CODE_ID when present, else the GUID part of the debug ID.

        dump_syms prints the first 16 build-ID bytes as a GUID whose first
        three fields are little-endian; undoing that gives those 16 bytes.
        """
        if self.code_id and len(self.code_id) % 2 == 0:
            try:
                return bytes.fromhex(self.code_id)
            except ValueError:
                pass
        guid = self.debug_id[:32]
        try:
            raw = bytes.fromhex(guid)
        except ValueError:
            return b""
        if len(raw) != 16:
            return b""
        return raw[3::-1] + raw[5:3:-1] + raw[7:5:-1] + raw[8:]


class _Parser:
    def __init__(self, source: str):
        self.source = source
        self.line_no = 0
        self.offset = 0

    def error(self, message: str) -> FormatError:
        return FormatError(
            f"line {self.line_no}: {message}", offset=self.offset, source=self.source
        )

    def number(self, token: str, what: str, base: int, *, minimum: int = 0) -> int:
        try:
            if token.startswith(("+", "_")) or "_" in token:
                raise ValueError
            value = int(token, base)
        except ValueError:
            kind = "hex" if base == 16 else "decimal"
            raise self.error(f"{what} {token!r} is not a {kind} number") from None
        if value < minimum or value >= 1 << 64:
            raise self.error(f"{what} {token!r} is out of range")
        return value


def _split(text: str, count: int) -> list[str]:
    """Up to `count` whitespace-separated fields, the last one keeping the rest."""
    fields = text.split(None, count - 1)
    if len(fields) == count:
        fields[-1] = fields[-1].rstrip(" \t\r")
    return fields


def parse_breakpad(data: bytes | str, source: str = "<breakpad>") -> BreakpadModule:
    """Parse a whole .sym file."""
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    p = _Parser(source)
    module: BreakpadModule | None = None
    current: BreakpadFunction | None = None
    offset = 0
    for line_no, raw in enumerate(text.split("\n"), start=1):
        p.line_no, p.offset = line_no, offset
        offset += len(raw.encode("utf-8", "surrogateescape")) + 1
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        keyword = line.split(None, 1)[0]
        rest = line[len(keyword) :].strip(" \t")
        if module is None:
            if keyword != "MODULE":
                raise p.error("a Breakpad symbol file must start with a MODULE record")
            fields = _split(rest, 4)
            if len(fields) < 4:
                raise p.error("MODULE needs <os> <arch> <id> <name>")
            module = BreakpadModule(fields[0], fields[1], fields[2], fields[3])
            continue
        if keyword == "MODULE":
            raise p.error("second MODULE record")
        if keyword == "INFO":
            fields = rest.split()
            if len(fields) >= 2 and fields[0] == "CODE_ID":
                module.code_id = fields[1]
        elif keyword == "FILE":
            fields = _split(rest, 2)
            if len(fields) < 2:
                raise p.error("FILE needs <id> <path>")
            module.files[p.number(fields[0], "file id", 10)] = fields[1]
        elif keyword == "INLINE_ORIGIN":
            module.origins.update([_parse_origin(p, rest)])
        elif keyword == "FUNC":
            current = _parse_func(p, rest)
            module.functions.append(current)
        elif keyword == "PUBLIC":
            current = None
            module.publics.append(_parse_public(p, rest))
        elif keyword == "INLINE":
            if current is None:
                raise p.error("INLINE record outside a FUNC")
            current.inlines.append(_parse_inline(p, rest))
        elif keyword == "STACK":
            current = None
        elif keyword[0] in "0123456789abcdefABCDEF" and _is_hex(keyword):
            if current is None:
                raise p.error("line record outside a FUNC")
            fields = line.split()
            if len(fields) != 4:
                raise p.error("line record needs <address> <size> <line> <file-id>")
            current.lines.append(
                BreakpadLine(
                    p.number(fields[0], "address", 16),
                    p.number(fields[1], "size", 16),
                    p.number(fields[2], "line number", 10),
                    p.number(fields[3], "file id", 10),
                )
            )
        else:
            raise p.error(f"unknown record {keyword!r}")
    if module is None:
        p.line_no = 1
        raise p.error("empty file: no MODULE record")
    return module


def _is_hex(token: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in token)


def _parse_origin(p: _Parser, rest: str) -> tuple[int, InlineOrigin]:
    fields = _split(rest, 2)
    if len(fields) < 2:
        raise p.error("INLINE_ORIGIN needs <id> <name>")
    origin_id = p.number(fields[0], "origin id", 10)
    remaining = fields[1]
    first = remaining.split(None, 1)[0]
    # Old form "<id> <file-id> <name>": the field after the id is a number.
    if (first.isdigit() or (first.startswith("-") and first[1:].isdigit())) and " " in remaining:
        file_id = int(first)
        if file_id < -1:
            raise p.error(f"file id {first!r} is out of range")
        name = remaining.split(None, 1)[1]
        return origin_id, InlineOrigin(name, None if file_id == -1 else file_id)
    return origin_id, InlineOrigin(remaining)


def _parse_func(p: _Parser, rest: str) -> BreakpadFunction:
    multiple = rest.startswith("m ")
    if multiple:
        rest = rest[2:].lstrip()
    fields = _split(rest, 4)
    if len(fields) < 4:
        raise p.error("FUNC needs [m] <address> <size> <param-size> <name>")
    return BreakpadFunction(
        p.number(fields[0], "address", 16),
        p.number(fields[1], "size", 16),
        p.number(fields[2], "parameter size", 16),
        fields[3],
        multiple,
    )


def _parse_public(p: _Parser, rest: str) -> BreakpadPublic:
    multiple = rest.startswith("m ")
    if multiple:
        rest = rest[2:].lstrip()
    fields = _split(rest, 3)
    if len(fields) < 3:
        raise p.error("PUBLIC needs [m] <address> <param-size> <name>")
    return BreakpadPublic(
        p.number(fields[0], "address", 16),
        p.number(fields[1], "parameter size", 16),
        fields[2],
        multiple,
    )


def _parse_inline(p: _Parser, rest: str) -> BreakpadInline:
    fields = rest.split()
    if len(fields) < 5:
        raise p.error(
            "INLINE needs <level> <call-line> [<call-file-id>] <origin-id> (<address> <size>)+"
        )
    has_file = len(fields) % 2 == 0
    level = p.number(fields[0], "nesting level", 10)
    call_line = p.number(fields[1], "call-site line", 10)
    i = 2
    call_file: int | None = None
    if has_file:
        try:
            call_file = int(fields[2], 10)
        except ValueError:
            raise p.error(f"call-site file id {fields[2]!r} is not a decimal number") from None
        if call_file < -1:
            raise p.error(f"call-site file id {fields[2]!r} is out of range")
        if call_file == -1:
            call_file = None
        i = 3
    origin = p.number(fields[i], "origin id", 10)
    i += 1
    ranges = []
    while i < len(fields):
        ranges.append((p.number(fields[i], "address", 16), p.number(fields[i + 1], "size", 16)))
        i += 2
    return BreakpadInline(level, call_line, call_file, origin, ranges, p.line_no)


def read_breakpad(path: str | os.PathLike[str]) -> BreakpadModule:
    """Parse the .sym file at `path` (FormatError if unreadable or malformed)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=name) from None
    return parse_breakpad(data, name)


def is_breakpad(path: str | os.PathLike[str]) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(7) == b"MODULE "
    except OSError:
        return False
