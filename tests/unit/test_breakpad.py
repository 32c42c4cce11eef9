"""The Breakpad .sym reader: records, both INLINE forms, and errors with line numbers."""

from __future__ import annotations

import pytest

from stackmark.conversion.from_breakpad import add_breakpad
from stackmark.errors import FormatError
from stackmark.formats.breakpad import BreakpadInline, parse_breakpad
from stackmark.formats.gsym import GsymCreator, GsymReader

SYM = """MODULE Linux x86_64 0403020106050807090A0B0C0D0E0F100 prog
INFO CODE_ID 0102030405060708090A0B0C0D0E0F1011121314
FILE 0 /src/main.c
FILE 1 /src/util.h
INLINE_ORIGIN 0 helper
INLINE_ORIGIN 1 deeper(int, char)
FUNC 1000 40 0 main
INLINE 0 12 0 0 1008 10
INLINE 1 3 1 1 100c 4
1000 8 10 0
1008 4 3 1
100c 4 7 1
1010 30 13 0
FUNC m 1100 10 8 operator new(unsigned long)
1100 10 5 0
PUBLIC 1200 0 _start
PUBLIC m 0 0 ignored_at_zero
STACK CFI INIT 1000 40 .cfa: $rsp 8 +
"""


def test_records_are_read() -> None:
    m = parse_breakpad(SYM)
    assert (m.os, m.arch, m.name) == ("Linux", "x86_64", "prog")
    assert m.files == {0: "/src/main.c", 1: "/src/util.h"}
    assert m.origins[1].name == "deeper(int, char)"
    main, new = m.functions
    assert (main.address, main.size, main.name) == (0x1000, 0x40, "main")
    assert [(x.address, x.size, x.line, x.file) for x in main.lines][:2] == [
        (0x1000, 8, 10, 0),
        (0x1008, 4, 3, 1),
    ]
    assert main.inlines[1] == BreakpadInline(1, 3, 1, 1, [(0x100C, 4)], 9)
    assert new.multiple and new.param_size == 8 and new.name == "operator new(unsigned long)"
    assert [p.name for p in m.publics] == ["_start", "ignored_at_zero"]
    assert m.build_id() == bytes(range(1, 21))


def test_old_forms_of_inline_records() -> None:
    m = parse_breakpad(
        "MODULE Linux x86_64 ID p\nFILE 3 /a.c\nINLINE_ORIGIN 4 3 inner\n"
        "FUNC 10 10 0 f\nINLINE 0 9 4 14 4\n"
    )
    assert m.origins[4].name == "inner" and m.origins[4].file == 3
    assert m.functions[0].inlines[0].call_file is None
    assert m.functions[0].inlines[0].origin == 4


def test_debug_id_gives_the_build_id_without_code_id() -> None:
    m = parse_breakpad("MODULE Linux x86_64 0403020106050807090A0B0C0D0E0F100 p\n")
    assert m.build_id() == bytes(range(1, 17))


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("FUNC 1 2 3 f\n", 1, "must start with a MODULE"),
        ("MODULE a b c d\n1000 4 5 0\n", 2, "line record outside a FUNC"),
        ("MODULE a b c d\nFUNC 10 zz 0 f\n", 2, "size 'zz' is not a hex number"),
        ("MODULE a b c d\nFUNC 10 4 0 f\n10 4 x 0\n", 3, "line number 'x'"),
        ("MODULE a b c d\nFILE -1 /x\n", 2, "out of range"),
        ("MODULE a b c d\nINLINE 0 1 0 0 10 4\n", 2, "INLINE record outside a FUNC"),
        ("MODULE a b c d\nFUNC 10 4 0 f\nINLINE 0 1 0\n", 3, "INLINE needs"),
        ("MODULE a b c d\nBOGUS 1\n", 2, "unknown record 'BOGUS'"),
        ("", 1, "no MODULE record"),
    ],
)
def test_errors_name_the_line(text: str, line: int, reason: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_breakpad(text, "x.sym")
    message = str(info.value)
    assert message.startswith("x.sym: offset 0x") and f"line {line}: " in message
    assert reason in message


def test_breakpad_to_gsym_lookups() -> None:
    creator = GsymCreator()
    add_breakpad(creator, parse_breakpad(SYM), "x.sym")
    creator.finalize()
    reader = GsymReader.from_bytes(creator.encode())
    assert reader.uuid == bytes(range(1, 21))
    assert reader.lookup(0x100D).text() == (
        "0x000000000000100d: deeper(int, char) + 1 @ /src/util.h:7 [inlined]\n"
        "                    helper + 5 @ /src/util.h:3 [inlined]\n"
        "                    main + 13 @ /src/main.c:12\n"
    )
    assert reader.lookup(0x1020).text() == "0x0000000000001020: main + 32 @ /src/main.c:13\n"
    assert reader.lookup(0x1234).text() == "0x0000000000001234: _start + 52\n"


def test_inline_without_parent_level_is_an_error() -> None:
    text = "MODULE a b c d\nINLINE_ORIGIN 0 x\nFUNC 10 10 0 f\nINLINE 1 2 -1 0 10 4\n"
    with pytest.raises(FormatError, match="line 4: INLINE level 1 has no enclosing level 0"):
        add_breakpad(GsymCreator(), parse_breakpad(text), "x.sym")
