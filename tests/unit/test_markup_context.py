"""The markup context: llvm's rules for modules and mmaps, address placement, the -1 table."""

from __future__ import annotations

import pytest

from stackmark.markup.context import ContextTimeline, MarkupContext, lookup_address
from stackmark.markup.diagnostics import Diagnostic
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    MmapElement,
    ModuleElement,
    PcElement,
    decode,
)
from stackmark.markup.parser import parse_line


def typed(text: str):  # type: ignore[no-untyped-def]
    (element,) = parse_line(text).elements
    return decode(element)


def declare(ctx: MarkupContext, text: str) -> object:
    element = typed(text)
    assert isinstance(element, ModuleElement) and element.ok
    return ctx.declare_module(element)


def mmap(ctx: MarkupContext, text: str) -> object:
    element = typed(text)
    assert isinstance(element, MmapElement) and element.ok
    return ctx.map_segment(element)


def context_with_two_segments() -> MarkupContext:
    ctx = MarkupContext()
    declare(ctx, "{{{module:0:prog:elf:abcd}}}")
    mmap(ctx, "{{{mmap:0x5000:0x1000:load:0:r:0x0}}}")
    mmap(ctx, "{{{mmap:0x6000:0x2000:load:0:rx:0x1000}}}")
    return ctx


def test_place_addresses() -> None:
    ctx = context_with_two_segments()
    placed = ctx.place(0x6010)
    assert placed is not None
    assert (placed.module.name, placed.segment.mode, placed.module_relative) == (
        "prog",
        "rx",
        0x1010,
    )
    assert ctx.place(0x4FFF) is None
    assert ctx.place(0x5000) is not None and ctx.place(0x5FFF) is not None
    assert ctx.place(0x7FFF) is not None and ctx.place(0x8000) is None
    assert [s.start for s in ctx.modules[0].segments] == [0x5000, 0x6000]
    assert ctx.modules[0].load_bias == 0x5000


def test_duplicate_module_keeps_the_first() -> None:
    ctx = context_with_two_segments()
    result = declare(ctx, "{{{module:0:other:elf:ef}}}")
    assert isinstance(result, Diagnostic) and result.message == "duplicate module ID"
    assert result.column == 10
    assert ctx.modules[0].name == "prog"


def test_mmap_checks_in_llvm_order() -> None:
    ctx = context_with_two_segments()
    unknown = mmap(ctx, "{{{mmap:0x9000:0x10:load:3:r:zz}}}")
    assert isinstance(unknown, Diagnostic) and unknown.message == "unknown module ID"
    bad_relative = mmap(ctx, "{{{mmap:0x9000:0x10:load:0:r:zz}}}")
    assert isinstance(bad_relative, Diagnostic)
    assert bad_relative.message == "expected address; found 'zz'"


@pytest.mark.parametrize(
    ("start", "size", "overlaps"),
    [
        (0x5000, 0x1000, True),  # exact
        (0x5100, 0x10, True),  # contained
        (0x4800, 0x1000, True),  # straddles the start
        (0x7F00, 0x1000, True),  # straddles the end
        (0x4000, 0x1000, False),  # adjacent below
        (0x8000, 0x1000, False),  # adjacent above
        (0x4000, 0x5000, True),  # contains both
    ],
)
def test_overlapping_mmaps(start: int, size: int, overlaps: bool) -> None:
    ctx = context_with_two_segments()
    result = mmap(ctx, f"{{{{{{mmap:{start:#x}:{size:#x}:load:0:r:0}}}}}}")
    assert isinstance(result, Diagnostic) == overlaps
    if overlaps:
        assert isinstance(result, Diagnostic)
        assert result.message.startswith("overlapping mmap: #0x0 [0x")


def test_overlap_message_names_the_existing_mapping() -> None:
    ctx = context_with_two_segments()
    result = mmap(ctx, "{{{mmap:0x6800:0x10:load:0:r:0}}}")
    assert isinstance(result, Diagnostic)
    assert result.message == "overlapping mmap: #0x0 [0x6000-0x7fff]"


def test_zero_size_mapping_covers_nothing() -> None:
    ctx = MarkupContext()
    declare(ctx, "{{{module:0:z:elf:ab}}}")
    mapping = mmap(ctx, "{{{mmap:0x20000:0:load:0:r:0}}}")
    assert not isinstance(mapping, Diagnostic)
    assert ctx.place(0x20000) is None
    assert not isinstance(mmap(ctx, "{{{mmap:0x20000:0x10:load:0:r:0}}}"), Diagnostic)


def test_arithmetic_wraps_at_64_bits() -> None:
    ctx = MarkupContext()
    declare(ctx, "{{{module:0:top:elf:ab}}}")
    # start + size wraps to 0: llvm's range check then covers nothing
    mmap(ctx, "{{{mmap:0xffffffffffff0000:0x10000:load:0:r:0}}}")
    assert ctx.place(0xFFFFFFFFFFFF0001) is None
    assert lookup_address(typed("{{{bt:0:0}}}")) == 2**64 - 1


def test_adjustment_table() -> None:
    def adjusted(text: str) -> int:
        element = typed(text)
        assert isinstance(element, PcElement | BtElement | DataElement)
        return lookup_address(element)

    assert adjusted("{{{pc:0x100}}}") == 0x100
    assert adjusted("{{{pc:0x100:ra}}}") == 0xFF
    assert adjusted("{{{pc:0x100:pc}}}") == 0x100
    assert adjusted("{{{bt:0:0x100}}}") == 0xFF
    assert adjusted("{{{bt:0:0x100:ra}}}") == 0xFF
    assert adjusted("{{{bt:0:0x100:pc}}}") == 0x100
    assert adjusted("{{{data:0x100}}}") == 0x100


def test_reset_and_copy() -> None:
    ctx = context_with_two_segments()
    snapshot = ctx.copy()
    ctx.reset()
    assert ctx.empty and ctx.generation == 1
    assert snapshot.place(0x6000) is not None
    mapping = snapshot.find(0x6000)
    assert mapping is not None and mapping.module is snapshot.modules[0]


def test_timeline() -> None:
    timeline = ContextTimeline()
    ctx = MarkupContext()
    declare(ctx, "{{{module:0:a:elf:ab}}}")
    timeline.record(2, ctx)
    mmap(ctx, "{{{mmap:0x1000:0x1000:load:0:rx:0}}}")
    timeline.record(5, ctx)
    ctx.reset()
    timeline.record(9, ctx)
    assert timeline.at(0).empty and timeline.at(2).empty
    assert timeline.at(3).modules and timeline.at(3).place(0x1000) is None
    assert timeline.at(6).place(0x1000) is not None
    assert timeline.at(10).empty
    timeline.truncate(5)
    assert timeline.changed_lines == [2]
    resumed = timeline.resume(5)
    assert 0 in resumed.modules and resumed is not timeline.at(5)
