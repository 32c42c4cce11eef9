"""The common markup lines, without the general machinery.

Most markup lines in a real log are one `{{{bt:N:ADDR[:ra|:pc]}}}` with
plain text around it, or a context line holding exactly one well-formed
`{{{reset}}}`, `{{{module:...}}}` or `{{{mmap:...}}}`. The classes here
recognise those with one regular expression each and answer directly
(colour off); anything else, or anything that needs a diagnostic, gets
None, so that the filter's general path handles it: the output is the
same either way (tests/unit/test_markup_properties.py checks that), only
faster. A fast path changes nothing before it is sure it applies.
"""

from __future__ import annotations

import re
from typing import TypeVar

from stackmark._native import load
from stackmark.markup.context import Mapping, MarkupContext
from stackmark.markup.fields import U64_MASK
from stackmark.markup.naming import Naming
from stackmark.markup.resolve import Resolver
from stackmark.model import Module

# Field forms accepted here are a subset of what fields.py accepts (the
# general path takes the rest): hex addresses of 1-16 digits after `0x`;
# `%i` numbers in decimal without a leading zero (at most 19 digits, so
# below 2^64) or `0x` hex of 1-16 digits.
_NUMBER = r"(0|[1-9][0-9]{0,18}|0[xX][0-9a-fA-F]{1,16})"
_BT = re.compile(r"\{\{\{bt:([0-9]{1,20}):0x([0-9a-fA-F]{1,16})(?::(ra|pc))?\}\}\}")
# A whole line holding one `bt` element and no other `{{{` and no ESC, as
# `BtLines.line` takes it: (text before, frame number, address, kind, text
# after with the line feed). A brace in the text around is allowed unless it
# opens `{{{`.
_AROUND = rb"[^{\n\x1b]*(?:\{(?!\{\{)[^{\n\x1b]*)*"
_BT_LINE = re.compile(b"(" + _AROUND + b")" + _BT.pattern.encode("ascii") + b"(" + _AROUND + b"\n)")
_MODULE = re.compile(r"\{\{\{module:" + _NUMBER + r":([^:{}]*):elf:([0-9a-fA-F]+)\}\}\}")
_MMAP = re.compile(
    r"\{\{\{mmap:0x([0-9a-fA-F]{1,16}):"
    + _NUMBER
    + r":load:"
    + _NUMBER
    + r":([rR]?[wW]?[xX]?):0x([0-9a-fA-F]{1,16})\}\}\}"
)
RESET_LINE = "{{{reset}}}"

_CACHE_LIMIT = 1 << 16
_Key = tuple[str, str, int, str]  # (build ID, module name, module-relative address, line end)
_T = TypeVar("_T")

_native = load("_markup")  # the compiled `lines_bytes` (`bt_lines`), or None


def _number(text: str) -> int:
    """A `%i` field matched by `_NUMBER`."""
    return int(text[2:], 16) if text[:2] in ("0x", "0X") else int(text)


_HEADER, _ADDRESS = "\x00", "\x01"
"""Placeholders in a cached frame text for the frame number and the address
(names and paths never hold them: they come from NUL-terminated strings, and
a text holding \x01 is not cached)."""

_HEADER_BYTES, _ADDRESS_BYTES = _HEADER.encode("ascii"), _ADDRESS.encode("ascii")


def _keep(cache: dict[_Key, _T], key: _Key, value: _T) -> None:
    """Remember `value` in a cache of at most `_CACHE_LIMIT` entries (emptied when full)."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value


_MARKERS = tuple(f".{k:<2}" for k in range(1, 100))


class BtLines:
    """Renders a line holding one `bt` element (see the module docstring).

    The frame lines (`FUNCTION FILE:LINE:COLUMN (MODULE+0xOFFSET)`, one per
    inline frame) are made once per (build ID, module name, module-relative
    address, line ending), as one template with placeholders for the frame
    number and the address: a log repeats the same frames in crash after
    crash, at different load addresses and frame numbers.
    """

    __slots__ = ("_byte_texts", "_texts", "naming", "resolver", "show_invalid")

    def __init__(self, resolver: Resolver, naming: Naming, show_invalid: bool) -> None:
        self.resolver = resolver
        self.naming = naming
        self.show_invalid = show_invalid
        self._texts: dict[_Key, str] = {}
        self._byte_texts: dict[_Key, bytes] = {}  # for `lines_bytes`

    def line(self, text: str, context: MarkupContext, eol: str) -> str | None:
        """`text` with its one `bt` element symbolized, or None (use the general path)."""
        match = _BT.search(text)
        if match is None:
            return None
        start, end = match.span()
        if text.find("{{{") != start or text.find("{{{", end) >= 0 or "\x1b" in text:
            return None
        number_text, address_text, kind = match.groups()
        number = int(number_text)
        if number > U64_MASK:
            return None
        address = int(address_text, 16)
        if kind != "pc":
            address = (address - 1) & U64_MASK
        mapping = context.find(address)
        if mapping is None:
            return None
        relative = mapping.to_module_relative(address)
        module = mapping.module
        template = self._texts.get((module.build_id, module.name, relative, eol))
        if template is None:
            template = self._template(module, relative, eol)
            if template is None:
                return None
            _keep(self._texts, (module.build_id, module.name, relative, eol), template)
        rendered = template.replace(_HEADER, f"#{number}".rjust(6)).replace(
            _ADDRESS, f" 0x{address:016x} "
        )
        return f"{text[:start]}{rendered}{text[end:]}"

    def lines_bytes(
        self, data: bytes, start: int, end: int, context: MarkupContext, out: list[bytes]
    ) -> int:
        """`line` for each line of the run of lone-`bt` lines from `start` on (whole
        lines of raw input before `end`), rendered as bytes onto `out`: a block of
        input need not decode them, nor encode their output. Returns where the run
        stops: at the first line `line` would not take (the caller feeds it), or at
        `end`. The compiled twin (`bt_lines`), when active, does the same."""
        if _native is not None:
            stop: int = _native.bt_lines(
                data, start, end, context.find, self._byte_texts, self._byte_template, out
            )
            return stop
        match_line = _BT_LINE.match
        templates = self._byte_texts
        find = context.find
        pos = start
        while pos < end:
            match = match_line(data, pos, end)
            if match is None:
                break
            before, number_text, address_text, kind, after = match.groups()
            number = int(number_text)
            if number > U64_MASK:
                break
            address = int(address_text, 16)
            if kind != b"pc":
                address = (address - 1) & U64_MASK
            mapping = find(address)
            if mapping is None:
                break
            relative = mapping.to_module_relative(address)
            module = mapping.module
            eol = "\r\n" if after[-2:-1] == b"\r" else "\n"
            key = (module.build_id, module.name, relative, eol)
            template = templates.get(key)
            if template is None:
                template = self._byte_template(module, relative, eol)
                if template is None:
                    break
            out += (
                before,
                template.replace(_HEADER_BYTES, (b"#%d" % number).rjust(6)).replace(
                    _ADDRESS_BYTES, b" 0x%016x " % address
                ),
                after,
            )
            pos = match.end()
        return pos

    def _byte_template(self, module: Module, relative: int, eol: str) -> bytes | None:
        """`_template` as bytes, kept for `lines_bytes` (None: not on the fast path)."""
        text = self._template(module, relative, eol)
        if text is None:
            return None
        template = text.encode("utf-8", "surrogateescape")
        _keep(self._byte_texts, (module.build_id, module.name, relative, eol), template)
        return template

    def _template(self, module: Module, relative: int, eol: str) -> str | None:
        """The frame lines with placeholders (the callers keep them), or None when
        the lookup needs a diagnostic, found nothing (the filters count such
        frames), or a name holds a placeholder character."""
        found, error = self.resolver.code_at(module, relative)
        if error is not None or not found:
            return None  # the general path warns, and counts the frame as unresolved
        frames = self.naming.frame_texts_for(found)
        tail = f"({module.name}+0x{relative:x})"
        last = len(frames) - 1
        template = eol.join(
            [
                _HEADER
                + ("   " if index == last else _MARKERS[index] if index < 99 else f".{index + 1}")
                + _ADDRESS
                + frame.where(self.show_invalid)
                + tail
                for index, frame in enumerate(frames)
            ]
        )
        if template.count(_HEADER) != len(frames) or template.count(_ADDRESS) != len(frames):
            return None
        return template


class ContextLine:
    """One well-formed contextual element alone on a line, decoded and checked
    against the context without building elements (see the module docstring).

    `kind` is "reset", "module" or "mmap"; `module` is the module declared
    (not yet added) or mapped; `mapping` the mapping added for an mmap.
    """

    __slots__ = ("kind", "mapping", "module")

    def __init__(self, kind: str, module: Module | None, mapping: Mapping | None) -> None:
        self.kind = kind
        self.module = module
        self.mapping = mapping


def context_line(text: str, context: MarkupContext) -> ContextLine | None:
    """Replay `text` on `context` if it is one plain contextual element that
    takes effect without any diagnostic; None (and the context untouched)
    otherwise. A reset is left to the caller (llvm 19 prints it only when
    there is something to forget)."""
    if text == RESET_LINE:
        return ContextLine("reset", None, None)
    if text.startswith("{{{module:"):
        match = _MODULE.fullmatch(text)
        if match is None:
            return None
        module_id = _number(match.group(1))
        if module_id in context.modules:
            return None  # duplicate module ID: an error
        build_id = match.group(3).lower()
        if len(build_id) % 2:
            build_id = "0" + build_id
        return ContextLine("module", context.add_module(module_id, match.group(2), build_id), None)
    if text.startswith("{{{mmap:"):
        match = _MMAP.fullmatch(text)
        if match is None:
            return None
        start_text, size_text, id_text, mode, relative_text = match.groups()
        module_id = _number(id_text)
        if not mode or module_id not in context.modules:
            return None
        start, size = int(start_text, 16), _number(size_text)
        if context.overlapping(start, size) is not None:
            return None
        mapping = context.add_mapping(start, size, mode.lower(), module_id, int(relative_text, 16))
        return ContextLine("mmap", mapping.module, mapping)
    return None
