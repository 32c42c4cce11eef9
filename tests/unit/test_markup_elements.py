"""Typed elements: field meanings and diagnostics in llvm's order and wording."""

from __future__ import annotations

from stackmark.markup.diagnostics import Severity
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    HexdictElement,
    MmapElement,
    ModuleElement,
    OtherElement,
    PcElement,
    ResetElement,
    SymbolElement,
    TypedElement,
    decode,
)
from stackmark.markup.parser import MarkupParser, parse_line
from stackmark.markup.syntax import Element


def one(text: str) -> TypedElement:
    (element,) = parse_line(text).elements
    return decode(element)


def messages(text: str) -> list[tuple[str, str, int | None]]:
    return [(d.severity.value, d.message, d.column) for d in one(text).diagnostics]


def test_module() -> None:
    m = one("{{{module:0x1F:libc.so:elf:AbC}}}")
    assert isinstance(m, ModuleElement) and m.ok
    assert (m.module_id, m.name, m.build_id) == (31, "libc.so", "0abc")


def test_module_errors_in_llvm_order() -> None:
    assert messages("{{{module:1:a}}}") == [("error", "expected at least 3 field(s); found 2", 9)]
    assert messages("{{{module:x:a:ELF:12}}}") == [("error", "expected module ID; found 'x'", 10)]
    assert messages("{{{module:1:a:ELF:12}}}") == [("error", "unknown module type", 14)]
    assert messages("{{{module:1:a:elf}}}") == [("error", "expected 4 field(s); found 3", 9)]
    assert messages("{{{module:1:a:elf:zz:q}}}") == [
        ("warning", "expected 4 field(s); found 5", 9),
        ("error", "expected build ID; found 'zz'", 18),
    ]
    assert messages("{{{module:1:a:elf::}}}") == [
        ("warning", "expected 4 field(s); found 5", 9),
        ("error", "expected build ID; found ''", 18),
    ]


def test_mmap() -> None:
    m = one("{{{mmap:0x1000:0x2000:load:0:RX:0x3000}}}")
    assert isinstance(m, MmapElement) and m.ok
    assert (m.start, m.size, m.module_id, m.mode, m.module_relative) == (
        0x1000,
        0x2000,
        0,
        "rx",
        0x3000,
    )


def test_mmap_errors_in_llvm_order() -> None:
    assert messages("{{{mmap:0x1:2}}}") == [("error", "expected at least 3 field(s); found 2", 7)]
    assert messages("{{{mmap:1:2:load}}}") == [("error", "expected address; found '1'", 8)]
    assert messages("{{{mmap:0x1:0x:load}}}") == [("error", "expected size; found '0x'", 12)]
    assert messages("{{{mmap:0x1:2:store:0:r:0}}}") == [("error", "unknown mmap type", 14)]
    assert messages("{{{mmap:0x1:2:load:0:r}}}") == [("error", "expected 6 field(s); found 5", 7)]
    assert messages("{{{mmap:0x1:2:load:q:r:0}}}") == [
        ("error", "expected module ID; found 'q'", 19)
    ]
    assert messages("{{{mmap:0x1:2:load:0:xr:0:9}}}") == [
        ("warning", "expected 6 field(s); found 7", 7),
        ("error", "expected mode; found 'xr'", 21),
    ]
    # the module-relative address is checked after the module ID (in the context)
    m = one("{{{mmap:0x1:2:load:0:r:zz}}}")
    assert isinstance(m, MmapElement) and m.ok
    assert m.module_relative_error is not None
    assert m.module_relative_error.message == "expected address; found 'zz'"


def test_pc_and_its_suffix() -> None:
    pc = one("{{{pc:0x10}}}")
    assert isinstance(pc, PcElement) and (pc.address, pc.pc_type) == (0x10, None)
    pc = one("{{{pc:0x10:ra}}}")
    assert isinstance(pc, PcElement) and pc.pc_type == "ra"
    # with three fields llvm warns and ignores the suffix
    pc = one("{{{pc:0x10:ra:x}}}")
    assert isinstance(pc, PcElement) and pc.ok and pc.pc_type is None
    assert messages("{{{pc:0x10:ra:x}}}") == [
        ("warning", "expected at most 2 field(s); found 3", 5)
    ]
    assert messages("{{{pc}}}") == [("error", "expected at least 1 field(s); found 0", 5)]
    assert messages("{{{pc:0x1:RA}}}") == [("error", "expected PC type; found 'RA'", 10)]
    assert messages("{{{pc: 0x1}}}") == [("error", "expected address; found ' 0x1'", 6)]


def test_bt() -> None:
    bt = one("{{{bt:007:0x10:pc}}}")
    assert isinstance(bt, BtElement) and (bt.frame, bt.address, bt.pc_type) == (7, 0x10, "pc")
    assert messages("{{{bt:0}}}") == [("error", "expected at least 2 field(s); found 1", 5)]
    assert messages("{{{bt:0x1:0x1}}}") == [("error", "expected frame number; found '0x1'", 6)]
    assert messages("{{{bt:1:2:3:4}}}") == [
        ("warning", "expected at most 3 field(s); found 4", 5),
        ("error", "expected address; found '2'", 8),
    ]


def test_data_symbol_reset() -> None:
    data = one("{{{data:0x20}}}")
    assert isinstance(data, DataElement) and data.address == 0x20
    assert messages("{{{data}}}") == [("error", "expected 1 field(s); found 0", 7)]
    assert messages("{{{data:0x1:2}}}") == [("warning", "expected 1 field(s); found 2", 7)]
    symbol = one("{{{symbol:_Z3foov:x}}}")
    assert isinstance(symbol, SymbolElement) and symbol.ok and symbol.name == "_Z3foov"
    reset = one("{{{reset:x}}}")
    assert isinstance(reset, ResetElement) and reset.ok
    assert messages("{{{reset:x}}}") == [("warning", "expected 0 field(s); found 1", 8)]


def test_tags() -> None:
    bad = one("x {{{PC:1}}}")
    assert isinstance(bad, OtherElement)
    assert [(d.message, d.column, d.end_column) for d in bad.diagnostics] == [
        ("tags must be all lowercase characters", 5, 7)
    ]
    unknown = one("{{{frame:1}}}")
    assert isinstance(unknown, OtherElement) and unknown.ok and not unknown.diagnostics
    dump = one("{{{dumpfile:sancov:sancov.8675}}}")
    assert isinstance(dump, DumpfileElement)
    assert (dump.dump_type, dump.name) == ("sancov", "sancov.8675")


def test_hexdict_pairs_on_one_line() -> None:
    h = one("{{{hexdict:RIP: 0x10 RSP:0x20  CS: 0 FLAGS: zf}}}")
    assert isinstance(h, HexdictElement)
    assert [(p.key, p.value) for p in h.pairs] == [
        ("RIP", 0x10),
        ("RSP", 0x20),
        ("CS", 0),
        ("FLAGS", None),
    ]
    rip = h.pairs[0]
    assert rip.value_field is not None
    assert (rip.key_field.start, rip.value_field.start) == (11, 16)
    assert [(d.severity, d.message) for d in h.diagnostics] == [
        (Severity.WARNING, "expected hex value; found 'zf'")
    ]


def test_hexdict_pairs_over_lines_have_positions() -> None:
    parser = MarkupParser()
    state = parser.parse("  {{{hexdict:", 10).pending
    state = parser.parse("    RAX:  0x1 RBX: 0xff", 11, state).pending
    closed = parser.parse("  R8: 0 }}}", 12, state)
    (element,) = closed.elements
    assert isinstance(element, Element)
    h = decode(element)
    assert isinstance(h, HexdictElement)
    found = [(p.key, p.value, p.key_field.line, p.key_field.start) for p in h.pairs]
    assert found == [("RAX", 1, 11, 4), ("RBX", 255, 11, 14), ("R8", 0, 12, 2)]
    rbx = h.pairs[1].value_field
    assert rbx is not None and (rbx.line, rbx.start, rbx.text) == (11, 19, "0xff")
