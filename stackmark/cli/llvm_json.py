"""llvm-symbolizer's `--output-style=JSON` records, for `llvm-symbolizer-stackmark`.

LLVM's DIPrinter.cpp (JSONPrinter) writes one object per request, keys in
sorted order, with `ModuleName` and `Address` (hex, lower case) and one of

    Symbol  a CODE answer: a frame per inlined call, innermost first, each
            Column, Discriminator, FileName, FunctionName, Line,
            StartAddress, StartFileName, StartLine ("" and 0 when unknown);
    Data    a DATA answer: Name, Size, Start (hex strings);
    Frame   a FRAME answer: per local, DeclFile, DeclLine, FunctionName,
            Name, Size, TagOffset (hex strings, "" when unknown) and
            FrameOffset (a number, only when known);
    Error   {"Message": ...} when the module cannot be read (the first time
            only: llvm answers later requests about it with nothing, an empty
            Symbol or Frame list, an empty Data).

One object a line (`--pretty-print`: indented by two spaces); addresses
given on the command line are answered as one array, printed at the end.
These records are llvm's schema, not the markup filter's
(`stackmark.markup.records`, lower-case fields and a resolution each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from stackmark.plain import Record

if TYPE_CHECKING:
    from stackmark.dwarf.locals import Local

JsonRecord = dict[str, Any]


class JsonFrame(Record):
    """The fields of one frame of a `Symbol` list (llvm's DILineInfo)."""

    __slots__ = _fields = __match_args__ = (
        "function",
        "file",
        "line",
        "column",
        "start_address",
        "start_file",
        "start_line",
        "discriminator",
    )
    function: str | None
    file: str | None
    line: int
    column: int
    start_address: int | None
    start_file: str | None
    start_line: int
    discriminator: int

    def __init__(
        self,
        function: str | None,
        file: str | None,
        line: int,
        column: int,
        start_address: int | None = None,
        start_file: str | None = None,
        start_line: int = 0,
        discriminator: int = 0,
    ) -> None:
        self.function = function
        self.file = file
        self.line = line
        self.column = column
        self.start_address = start_address
        self.start_file = start_file
        self.start_line = start_line
        self.discriminator = discriminator


UNKNOWN_FRAME = JsonFrame(None, None, 0, 0)
"""The one frame of an answer with nothing known (llvm prints an empty DILineInfo)."""


def hex_(value: int) -> str:
    return f"0x{value:x}"


def request(module_name: str, address: int | None) -> JsonRecord:
    """The part every record has (no `Address` for a line that named none)."""
    out: JsonRecord = {"ModuleName": module_name}
    if address is not None:
        out["Address"] = hex_(address)
    return out


def error(module_name: str, address: int | None, message: str) -> JsonRecord:
    out = request(module_name, address)
    out["Error"] = {"Message": message}
    return out


def code(module_name: str, address: int | None, frames: Sequence[JsonFrame]) -> JsonRecord:
    out = request(module_name, address)
    out["Symbol"] = [
        {
            "Column": f.column,
            "Discriminator": f.discriminator,
            "FileName": f.file or "",
            "FunctionName": f.function or "",
            "Line": f.line,
            "StartAddress": hex_(f.start_address) if f.start_address is not None else "",
            "StartFileName": f.start_file or "",
            "StartLine": f.start_line,
        }
        for f in frames
    ]
    return out


def data(module_name: str, address: int, name: str, start: int, size: int) -> JsonRecord:
    out = request(module_name, address)
    out["Data"] = {"Name": name, "Size": hex_(size), "Start": hex_(start)}
    return out


def frame(module_name: str, address: int, found: Sequence[Local]) -> JsonRecord:
    out = request(module_name, address)
    locals_: list[JsonRecord] = []
    for local in found:
        one: JsonRecord = {
            "DeclFile": local.decl_file or "",
            "DeclLine": local.decl_line,
            "FunctionName": local.function or "",
            "Name": local.name or "",
            "Size": hex_(local.size) if local.size is not None else "",
            "TagOffset": hex_(local.tag_offset) if local.tag_offset is not None else "",
        }
        if local.frame_offset is not None:
            one["FrameOffset"] = local.frame_offset
        locals_.append(one)
    out["Frame"] = locals_
    return out


def dumps(value: JsonRecord | list[JsonRecord], pretty: bool) -> str:
    """`value` as llvm prints it: keys sorted, compact, or indented by two with -p; a line."""
    import json  # here: the plain output style, a sanitizer's, never needs it

    if pretty:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
