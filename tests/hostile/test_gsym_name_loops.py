"""Qualified names whose enclosing contexts loop, which no compiler writes.

A hand-made DWARF 4 unit: struct S's DW_AT_specification points at a
variable inside struct T, and T's at a variable inside S, so S's parent
context is T and T's is S (llvm's GetParentDeclContextDIE follows the
specification first). The function `f` inside S is named by walking the
contexts outwards until one comes again: f, then S, then T, then S again
(stop), which gives "T::S::f". The converter keeps each context's prefix
once worked out; on a loop it must give the same name every time, and keep
nothing that would name another function wrongly.
"""

from __future__ import annotations

import struct
from pathlib import Path

from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.gsym.reader import GsymReader
from tests.hostile.tiny_elf import SHF_ALLOC, SHF_EXECINSTR, SHT_PROGBITS, RawSection, elf_file

DW_TAG_compile_unit, DW_TAG_structure_type, DW_TAG_subprogram, DW_TAG_variable = (
    0x11,
    0x13,
    0x2E,
    0x34,
)
DW_AT_name, DW_AT_low_pc, DW_AT_high_pc, DW_AT_language, DW_AT_specification = (
    0x03,
    0x11,
    0x12,
    0x13,
    0x47,
)
DW_FORM_addr, DW_FORM_data2, DW_FORM_data8, DW_FORM_string, DW_FORM_ref4 = (
    0x01,
    0x05,
    0x07,
    0x08,
    0x13,
)
DW_LANG_C_plus_plus = 0x0004
TEXT = 0x1000


def _abbrev(code: int, tag: int, children: bool, specs: list[tuple[int, int]]) -> bytes:
    body = bytes([code, tag, int(children)])
    for attr, form in specs:
        body += bytes([attr, form])
    return body + b"\0\0"


ABBREVS = (
    _abbrev(1, DW_TAG_compile_unit, True, [(DW_AT_language, DW_FORM_data2)])
    + _abbrev(2, DW_TAG_structure_type, True, [(DW_AT_name, DW_FORM_string)])
    + _abbrev(
        3,
        DW_TAG_structure_type,
        True,
        [(DW_AT_name, DW_FORM_string), (DW_AT_specification, DW_FORM_ref4)],
    )
    + _abbrev(
        4,
        DW_TAG_subprogram,
        False,
        [
            (DW_AT_name, DW_FORM_string),
            (DW_AT_low_pc, DW_FORM_addr),
            (DW_AT_high_pc, DW_FORM_data8),
        ],
    )
    + _abbrev(5, DW_TAG_variable, False, [(DW_AT_name, DW_FORM_string)])
    + b"\0"
)


def _unit(loop: bool) -> bytes:
    """The unit: an 11-byte DWARF 4 header, then

    compile unit (C++)
      struct S      [with `loop`: specification -> x]
        f           [0x1000, 0x1010)
        variable y
      struct T      [with `loop`: specification -> y]
        g           [0x1010, 0x1020)
        variable x
    """
    dies = bytearray()

    def at() -> int:
        return 11 + len(dies)

    dies += bytes([1]) + struct.pack("<H", DW_LANG_C_plus_plus)
    s_spec = t_spec = -1
    dies += bytes([3 if loop else 2]) + b"S\0"
    if loop:
        s_spec = len(dies)
        dies += bytes(4)  # patched below: S's specification
    dies += bytes([4]) + b"f\0" + struct.pack("<QQ", TEXT, 0x10)
    y = at()
    dies += bytes([5]) + b"y\0"
    dies += b"\0"  # end of S
    dies += bytes([3 if loop else 2]) + b"T\0"
    if loop:
        t_spec = len(dies)
        dies += bytes(4)  # T's specification
    dies += bytes([4]) + b"g\0" + struct.pack("<QQ", TEXT + 0x10, 0x10)
    x = at()
    dies += bytes([5]) + b"x\0"
    dies += b"\0"  # end of T
    dies += b"\0"  # end of the unit
    if loop:
        dies[s_spec : s_spec + 4] = struct.pack("<I", x)
        dies[t_spec : t_spec + 4] = struct.pack("<I", y)
    header = struct.pack("<IHIB", 7 + len(dies), 4, 0, 8)
    return header + bytes(dies)


def _names(tmp_path: Path, loop: bool) -> tuple[str, str]:
    """The GSYM names of f and g."""
    data = elf_file(
        [
            RawSection(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, bytes(0x20), TEXT),
            RawSection(".debug_abbrev", SHT_PROGBITS, 0, ABBREVS),
            RawSection(".debug_info", SHT_PROGBITS, 0, _unit(loop)),
        ]
    )
    path = tmp_path / ("loop" if loop else "plain")
    path.write_bytes(data)
    reader = GsymReader.from_bytes(convert_elf(str(path)).data)
    return reader.lookup(TEXT).locations[0].name, reader.lookup(TEXT + 0x10).locations[0].name


def test_contexts_without_a_loop_qualify_each_function_by_its_struct(tmp_path: Path) -> None:
    assert _names(tmp_path, loop=False) == ("S::f", "T::g")


def test_contexts_that_loop_stop_at_the_first_context_seen_again(tmp_path: Path) -> None:
    # f: S, then T (S's context through its specification), then S again: stop.
    # g: T, then S, then T again: stop.
    assert _names(tmp_path, loop=True) == ("T::S::f", "S::T::g")
