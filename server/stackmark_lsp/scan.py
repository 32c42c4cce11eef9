"""A fast recognizer for the common, well-formed shapes of markup elements.

Opening a million-line log must not take a core parse (tens of objects
per line) of every element line. Most elements in real logs are well
formed and spelled the plain way (`{{{bt:3:0x7f12a4b011a5:ra}}}`), so
this module matches each `{{{` of a line against one strict regular
expression and returns plain tuples. Whenever anything is unusual (an
unknown or bad tag, a field the core would reject or warn about, a
number spelled in octal, an element left open for the next line), it
returns None and the caller uses the core parser
(`stackmark.markup.parser`) and decoder (`stackmark.markup.elements`)
for that line, so diagnostics always come from the core.

What `scan_line` accepts, it accepts exactly as the core does (same
elements, same values, no diagnostics); tests/lsp/test_scan.py checks
that against the core on generated lines.
"""

from __future__ import annotations

import re

# Element kinds: the number of the regex group that matched (see _ELEMENT).
BT, PC, DATA, MMAP, MODULE, RESET, SYMBOL, DUMPFILE = 1, 5, 8, 10, 16, 20, 21, 23
OTHER = 24  # (ANY_OPENING only) a `{{{` the fast shapes do not cover

_ADDR = r"(0x[0-9a-fA-F]{1,16})"  # `%p` spelled the plain way (the core also takes others)
_ID = r"(0|[1-9][0-9]{0,18}|0[xX][0-9a-fA-F]{1,16})"  # `%i` in decimal or hex
_TYPE = r"(?::(ra|pc))?"

# One alternative per tag; each is a group whose number is the kind above.
_SHAPES = (
    r"(?:"
    r"(bt:([0-9]{1,19}):" + _ADDR + _TYPE + r")"  # 1: frame 2, address 3, type 4
    r"|(pc:" + _ADDR + _TYPE + r")"  # 5: address 6, type 7
    r"|(data:" + _ADDR + r")"  # 8: address 9
    r"|(mmap:"
    + _ADDR
    + ":"
    + _ID
    + r":load:"
    + _ID  # 10: start 11, size 12, module 13
    + r":((?=[rwxRWX])[rR]?[wW]?[xX]?):"
    + _ADDR
    + r")"  # mode 14, relative 15
    r"|(module:" + _ID + r":([^:{}]*):elf:([0-9a-fA-F]+))"  # 16: id 17, name 18, build ID 19
    r"|(reset)"  # 20
    r"|(symbol:([^:{}]*))"  # 21: name 22
    r"|(dumpfile(?::[^{}]*)?)"  # 23
    r")\}\}\}"
)
_ELEMENT = re.compile(r"\{\{\{" + _SHAPES)
# Every `{{{` of a text: a fast shape, or OTHER (then the line needs the core).
ANY_OPENING = re.compile(r"\{\{\{(?:" + _SHAPES + "|())")

# A `{{{` that does not open a plain frame (a `bt`, `pc` or `data` element of the fast
# shapes): what the index reads element by element. The lines between two of these hold
# plain frames only, checked in bulk with the two patterns after it.
_FRAME_SHAPES = (
    r"bt:[0-9]{1,19}:0x[0-9a-fA-F]{1,16}(?::(?:ra|pc))?\}\}\}"
    r"|pc:0x[0-9a-fA-F]{1,16}(?::(?:ra|pc))?\}\}\}"
    r"|data:0x[0-9a-fA-F]{1,16}\}\}\}"
)
SPECIAL = re.compile(r"\{\{\{(?!" + _FRAME_SHAPES + ")")
# The address of every plain frame (in text where every `{{{` opens one).
FRAME_ADDRESS = re.compile(r"\{\{\{(?:bt:[0-9]{1,19}:|pc:|data:)0x([0-9a-fA-F]{1,16})")

# A whole line ('\n' ended) that holds one contextual element of the fast shapes and no
# other brace; its groups: the text before the element (its column), then `reset`, or a
# module's ID, name and build ID, or an mmap's start, size, module ID, mode and
# module-relative address. The index reads runs of these lines row by row.
_CONTEXT_ELEMENT = (
    r"\{\{\{(?:(reset)|module:"
    + _ID
    + r":([^:{}\n]*):elf:([0-9a-fA-F]+)|mmap:"
    + _ADDR
    + ":"
    + _ID
    + ":load:"
    + _ID
    + r":((?=[rwxRWX])[rR]?[wW]?[xX]?):"
    + _ADDR
    + r")\}\}\}"
)
CONTEXT_ROW = re.compile(r"([^{\n]*)" + _CONTEXT_ELEMENT + r"[^{\n]*\n")

# A contextual row read: (column,) for a reset, (column, module ID, name, build ID) for a
# module, (column, start, size, module ID, mode, module-relative address) for an mmap; the
# column is that of the element's `{{{`, the mode in lower case, the build ID normalised.
ContextRow = tuple[int] | tuple[int, int, str, str] | tuple[int, int, int, int, str, int]


def context_rows(text: str, pos: int) -> tuple[int, list[ContextRow]]:
    """The run of `CONTEXT_ROW` lines from `pos` on, read: (position after the run, its
    rows). The reference of `stackmark._native._logindex.context_rows`."""
    rows: list[ContextRow] = []
    match = CONTEXT_ROW.match
    while (row := match(text, pos)) is not None:
        column, reset, module_id, name, build, start, size, mapped_id, mode, relative = row.groups(
            ""
        )
        if reset:
            rows.append((len(column),))
        elif module_id:
            rows.append((len(column), parse_id(module_id), name, build_id(build)))
        else:
            rows.append(
                (
                    len(column),
                    int(start, 16),
                    parse_id(size),
                    parse_id(mapped_id),
                    mode.lower(),
                    int(relative, 16),
                )
            )
        pos = row.end()
    return pos, rows


Scanned = re.Match[str]  # an element matched by _ELEMENT; `lastindex` is its kind


def scan_line(text: str) -> list[re.Match[str]] | None:
    """The elements of `text` (one line), or None when the core parser must read it.

    Each element is the regex match; its `lastindex` is its kind (BT, PC, ...)
    and `group(n)` its fields, numbered as in _ELEMENT. Use the helpers below
    to read them.
    """
    out: list[re.Match[str]] = []
    match = _ELEMENT.match
    find = text.find
    pos = find("{{{")
    while pos >= 0:
        m = match(text, pos)
        if m is None:
            return None
        out.append(m)
        pos = find("{{{", m.end())
    return out


def parse_id(text: str) -> int:
    """A module ID or size as scanned (decimal or 0x hex)."""
    return int(text, 16) if text[:2] in ("0x", "0X") else int(text)


def build_id(text: str) -> str:
    """A build ID as the core normalises it: lower case, whole bytes."""
    text = text.lower()
    return "0" + text if len(text) % 2 else text


# Where each kind keeps its address field (group number), for diagnostics.
ADDRESS_GROUP = {BT: 3, PC: 6, DATA: 9}


def lookup_address(kind: int, address: int, pc_type: str | None) -> int:
    """The address to look up, by llvm's -1 table (as `stackmark.markup.context.lookup_address`):
    a `pc` is precise unless `:ra`, a `bt` is a return address unless `:pc`."""
    if kind == PC:
        return (address - 1) & 0xFFFFFFFFFFFFFFFF if pc_type == "ra" else address
    if kind == BT:
        return (address - 1) & 0xFFFFFFFFFFFFFFFF if pc_type != "pc" else address
    return address
