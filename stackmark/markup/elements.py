"""Typed markup elements: what each tag's fields mean, checked as llvm checks them.

`decode(element)` turns a generic `Element` into one of the classes below.
Each carries its `diagnostics` in the order llvm-symbolizer 19 reports
them: llvm stops at the first error, so a decoded element lists the
warnings before it and that error, nothing after. An element with an error
is not used (`ok` is False).

One check needs the context and is done there: an `mmap` naming a module
that was never declared (llvm checks it between the mode and the
module-relative address, so `MmapElement` keeps the latter's error apart).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from stackmark.markup import fields as fp
from stackmark.markup.diagnostics import (
    Diagnostic,
    Severity,
    bad_tag,
    error_at_field,
    field_count_at_least,
    field_count_at_most,
    field_count_exact,
    type_error,
)
from stackmark.markup.syntax import Element, Field, is_tag_valid
from stackmark.plain import FrozenRecord, Record

# Records rather than dataclasses: start-up time (see stackmark/plain.py). Each
# element's constructor takes the base fields (element, diagnostics) and then
# its own, all but `element` optional, as the dataclasses did.


class Decoded(Record):
    """Base of every typed element: the source element and what is wrong with it."""

    __slots__ = ("diagnostics", "element")
    _fields: ClassVar[tuple[str, ...]] = ("element", "diagnostics")
    element: Element
    diagnostics: list[Diagnostic]

    def __init__(self, element: Element, diagnostics: list[Diagnostic] | None = None) -> None:
        self.element = element
        self.diagnostics = [] if diagnostics is None else diagnostics

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def tag(self) -> str:
        return self.element.tag


class ResetElement(Decoded):
    """`{{{reset}}}`: forget every module and mapping."""

    __slots__ = ()


class ModuleElement(Decoded):
    """`{{{module:ID:NAME:elf:BUILDID}}}`."""

    __slots__ = ("build_id", "module_id", "name")
    _fields = (*Decoded._fields, "module_id", "name", "build_id")
    module_id: int
    name: str
    build_id: str

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        module_id: int = 0,
        name: str = "",
        build_id: str = "",
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.module_id = module_id
        self.name = name
        self.build_id = build_id


class MmapElement(Decoded):
    """`{{{mmap:START:SIZE:load:MODULE:MODE:MODULE_RELATIVE}}}`.

    `module_relative_error` is reported only if the module ID is known
    (llvm checks the ID first).
    """

    __slots__ = ("mode", "module_id", "module_relative", "module_relative_error", "size", "start")
    _fields = (
        *Decoded._fields,
        "start",
        "size",
        "module_id",
        "mode",
        "module_relative",
        "module_relative_error",
    )
    start: int
    size: int
    module_id: int
    mode: str
    module_relative: int
    module_relative_error: Diagnostic | None

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        start: int = 0,
        size: int = 0,
        module_id: int = 0,
        mode: str = "",
        module_relative: int = 0,
        module_relative_error: Diagnostic | None = None,
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.start = start
        self.size = size
        self.module_id = module_id
        self.mode = mode
        self.module_relative = module_relative
        self.module_relative_error = module_relative_error

    @property
    def module_id_field(self) -> Field:
        return self.element.fields[3]


class PcElement(Decoded):
    """`{{{pc:ADDR[:ra|:pc]}}}`; `pc_type` None when there is no (usable) suffix."""

    __slots__ = ("address", "pc_type")
    _fields = (*Decoded._fields, "address", "pc_type")
    address: int
    pc_type: str | None

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        address: int = 0,
        pc_type: str | None = None,
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.address = address
        self.pc_type = pc_type


class BtElement(Decoded):
    """`{{{bt:N:ADDR[:ra|:pc]}}}`: one frame of a backtrace."""

    __slots__ = ("address", "frame", "pc_type")
    _fields = (*Decoded._fields, "frame", "address", "pc_type")
    frame: int
    address: int
    pc_type: str | None

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        frame: int = 0,
        address: int = 0,
        pc_type: str | None = None,
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.frame = frame
        self.address = address
        self.pc_type = pc_type


class DataElement(Decoded):
    """`{{{data:ADDR}}}`."""

    __slots__ = ("address",)
    _fields = (*Decoded._fields, "address")
    address: int

    def __init__(
        self, element: Element, diagnostics: list[Diagnostic] | None = None, address: int = 0
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.address = address


class SymbolElement(Decoded):
    """`{{{symbol:NAME}}}`: a (mangled) linkage name to show demangled."""

    __slots__ = ("name",)
    _fields = (*Decoded._fields, "name")
    name: str

    def __init__(
        self, element: Element, diagnostics: list[Diagnostic] | None = None, name: str = ""
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.name = name


class HexPair(FrozenRecord):
    """One `KEY: VALUE` pair of a hexdict; `value` None when it is not hex."""

    __slots__ = _fields = ("key", "key_field", "value_field", "value")
    key: str
    key_field: Field
    value_field: Field | None
    value: int | None

    def __init__(
        self, key: str, key_field: Field, value_field: Field | None, value: int | None
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "key", key)
        setattr_(self, "key_field", key_field)
        setattr_(self, "value_field", value_field)
        setattr_(self, "value", value)


class HexdictElement(Decoded):
    """`{{{hexdict:KEY: VALUE ...}}}`: a register or memory dump, maybe over lines."""

    __slots__ = ("pairs",)
    _fields = (*Decoded._fields, "pairs")
    pairs: list[HexPair]

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        pairs: list[HexPair] | None = None,
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.pairs = [] if pairs is None else pairs


class DumpfileElement(Decoded):
    """`{{{dumpfile:TYPE:NAME}}}`: a dump was published."""

    __slots__ = ("dump_type", "name")
    _fields = (*Decoded._fields, "dump_type", "name")
    dump_type: str
    name: str

    def __init__(
        self,
        element: Element,
        diagnostics: list[Diagnostic] | None = None,
        dump_type: str = "",
        name: str = "",
    ) -> None:
        Decoded.__init__(self, element, diagnostics)
        self.dump_type = dump_type
        self.name = name


class OtherElement(Decoded):
    """An element with a tag the spec does not define (kept as it is), or a bad tag."""

    __slots__ = ()


TypedElement = (
    ResetElement
    | ModuleElement
    | MmapElement
    | PcElement
    | BtElement
    | DataElement
    | SymbolElement
    | HexdictElement
    | DumpfileElement
    | OtherElement
)


def _add(diags: list[Diagnostic], diag: Diagnostic | None) -> bool:
    """Record `diag`; True when it is an error (decoding stops there)."""
    if diag is None:
        return False
    diags.append(diag)
    return diag.is_error


def _reset(element: Element) -> ResetElement:
    out = ResetElement(element)
    _add(out.diagnostics, field_count_exact(element, 0))
    return out


def _module(element: Element) -> ModuleElement:
    out = ModuleElement(element)
    d = out.diagnostics
    f = element.fields
    if _add(d, field_count_at_least(element, 3)):
        return out
    module_id = fp.parse_module_id(f[0].text)
    if module_id is None:
        d.append(type_error("module ID", f[0]))
        return out
    if f[2].text != "elf":
        d.append(error_at_field("unknown module type", f[2], "unknown-module-type"))
        return out
    if _add(d, field_count_exact(element, 4)):
        return out
    build_id = fp.parse_build_id(f[3].text)
    if build_id is None:
        d.append(type_error("build ID", f[3]))
        return out
    out.module_id, out.name, out.build_id = module_id, f[1].text, build_id
    return out


def _mmap(element: Element) -> MmapElement:
    out = MmapElement(element)
    d = out.diagnostics
    f = element.fields
    if _add(d, field_count_at_least(element, 3)):
        return out
    start = fp.parse_address(f[0].text)
    if start is None:
        d.append(type_error("address", f[0]))
        return out
    size = fp.parse_size(f[1].text)
    if size is None:
        d.append(type_error("size", f[1]))
        return out
    if f[2].text != "load":
        d.append(error_at_field("unknown mmap type", f[2], "unknown-mmap-type"))
        return out
    if _add(d, field_count_exact(element, 6)):
        return out
    module_id = fp.parse_module_id(f[3].text)
    if module_id is None:
        d.append(type_error("module ID", f[3]))
        return out
    mode = fp.parse_mode(f[4].text)
    if mode is None:
        d.append(type_error("mode", f[4]))
        return out
    relative = fp.parse_address(f[5].text)
    if relative is None:
        out.module_relative_error = type_error("address", f[5])
    out.start, out.size, out.module_id, out.mode = start, size, module_id, mode
    out.module_relative = relative or 0
    return out


def _pc(element: Element) -> PcElement:
    out = PcElement(element)
    d = out.diagnostics
    f = element.fields
    if _add(d, field_count_at_least(element, 1)):
        return out
    _add(d, field_count_at_most(element, 2))
    address = fp.parse_address(f[0].text)
    if address is None:
        d.append(type_error("address", f[0]))
        return out
    out.address = address
    if len(f) == 2:  # llvm reads the suffix only when there are exactly two fields
        out.pc_type = fp.parse_pc_type(f[1].text)
        if out.pc_type is None:
            d.append(type_error("PC type", f[1]))
    return out


def _bt(element: Element) -> BtElement:
    out = BtElement(element)
    d = out.diagnostics
    f = element.fields
    if _add(d, field_count_at_least(element, 2)):
        return out
    _add(d, field_count_at_most(element, 3))
    frame = fp.parse_frame_number(f[0].text)
    if frame is None:
        d.append(type_error("frame number", f[0]))
        return out
    address = fp.parse_address(f[1].text)
    if address is None:
        d.append(type_error("address", f[1]))
        return out
    out.frame, out.address = frame, address
    if len(f) == 3:
        out.pc_type = fp.parse_pc_type(f[2].text)
        if out.pc_type is None:
            d.append(type_error("PC type", f[2]))
    return out


def _data(element: Element) -> DataElement:
    out = DataElement(element)
    d = out.diagnostics
    if _add(d, field_count_exact(element, 1)):
        return out
    address = fp.parse_address(element.fields[0].text)
    if address is None:
        d.append(type_error("address", element.fields[0]))
        return out
    out.address = address
    return out


def _symbol(element: Element) -> SymbolElement:
    out = SymbolElement(element)
    if _add(out.diagnostics, field_count_exact(element, 1)):
        return out
    out.name = element.fields[0].text
    return out


_TOKEN = re.compile(r"\S+")


def _hexdict(element: Element) -> HexdictElement:
    """Pairs `KEY: VALUE` (or `KEY:VALUE`) separated by any whitespace, lines included."""
    out = HexdictElement(element)
    body_offset = 3 + len("hexdict:")
    body = element.text[body_offset:-3]

    def field_at(offset: int, text: str) -> Field:
        line, column = element.position(body_offset + offset)
        return Field(text, line, column)

    tokens = [(m.start(), m.group(0)) for m in _TOKEN.finditer(body)]
    i = 0
    while i < len(tokens):
        offset, token = tokens[i]
        i += 1
        key, colon, value_text = token.partition(":")
        if not colon or not key:
            continue  # not a pair (stray word); kept in the dump as it is
        key_field = field_at(offset, key)
        if value_text:
            value_field = field_at(offset + len(key) + 1, value_text)
        elif i < len(tokens) and not tokens[i][1].endswith(":"):
            value_field = field_at(tokens[i][0], tokens[i][1])
            i += 1
        else:
            value_field = None
        value = fp.parse_hex_value(value_field.text) if value_field else None
        if value_field is not None and value is None:
            out.diagnostics.append(
                Diagnostic(
                    Severity.WARNING,
                    f"expected hex value; found '{value_field.text}'",
                    value_field.line,
                    value_field.start,
                    value_field.end,
                    "bad-hex-value",
                )
            )
        out.pairs.append(HexPair(key, key_field, value_field, value))
    return out


def _dumpfile(element: Element) -> DumpfileElement:
    out = DumpfileElement(element)
    f = element.fields
    if f:
        out.dump_type = f[0].text
    if len(f) > 1:
        out.name = f[1].text
    return out


_DECODERS: dict[str, Callable[[Element], TypedElement]] = {
    "reset": _reset,
    "module": _module,
    "mmap": _mmap,
    "pc": _pc,
    "bt": _bt,
    "data": _data,
    "symbol": _symbol,
    "hexdict": _hexdict,
    "dumpfile": _dumpfile,
}


def decode(element: Element) -> TypedElement:
    """The typed form of `element`, with its diagnostics in llvm's order."""
    decoder = _DECODERS.get(element.tag)
    if decoder is not None:
        return decoder(element)
    other = OtherElement(element)
    if not is_tag_valid(element.tag):
        other.diagnostics.append(bad_tag(element))
    return other
