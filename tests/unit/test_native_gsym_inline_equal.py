"""`inline_equal` (stackmark/_native/_gsym_records.c) against `a == b`: the inline
trees `GsymCreator.finalize` and the sort compare (creator._inline_eq).

Trees from real conversions are compared with themselves, with copies, and with
copies changed at one node (name, call file or line, ranges, a child dropped or
added, a range of another type that compares equal), with None and with a
subclass; the kernel gives `a == b`'s answer, or None where the reference must."""

from __future__ import annotations

import copy
import random

import pytest

from stackmark._native import forced_pure, load
from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.gsym.inline_info import InlineInfo
from tests.support.build import compile_program

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

_records = load("_gsym_records")


class _Node(InlineInfo):
    """A subclass: its equality is its own business (the kernel hands it back)."""

    __slots__ = ()


def _nodes(tree: InlineInfo) -> list[InlineInfo]:
    out = [tree]
    for child in tree.children:
        out.extend(_nodes(child))
    return out


def _changed(tree: InlineInfo, rng: random.Random) -> InlineInfo:
    """A deep copy of `tree` with one node changed."""
    changed = copy.deepcopy(tree)
    node = rng.choice(_nodes(changed))
    what = rng.randrange(8)
    if what == 0:
        node.name += 1
    elif what == 1:
        node.call_file += rng.choice((1, -1))
    elif what == 2:
        node.call_line += 1
    elif what == 3:
        node.ranges = [*node.ranges, (1 << 40, (1 << 40) + 1)]
    elif what == 4 and node.children:
        node.children.pop(rng.randrange(len(node.children)))
    elif what == 5:
        node.children.append(InlineInfo(node.name, list(node.ranges)))
    elif what == 6:  # equal values of another type: still equal
        node.ranges = [(float(a), b) for a, b in node.ranges]
        node.call_line = float(node.call_line)
    else:  # a child shared between both trees: equal to itself
        if node.children:
            node.children[0] = _shared
    return changed


_shared = InlineInfo(7, [(0, 4)])


def _trees() -> list[InlineInfo]:
    binary = compile_program(
        "inline_equal_templates", ["sym_templates.cpp"], compiler="g++", flags=("-g", "-O2")
    )
    functions = convert_elf(binary, jobs=1).functions
    return [info.inline for info in functions if info.inline is not None]


def test_inline_equal_answers_as_the_reference_on_converted_trees() -> None:
    assert _records is not None
    trees = _trees()
    assert sum(len(tree.children) > 0 for tree in trees) >= 5, "trees with inlined calls"
    rng = random.Random(18)
    answered = different = 0
    for tree in trees:
        others = [
            tree,
            copy.deepcopy(tree),
            None,
            rng.choice(trees),
            *(_changed(tree, rng) for _ in range(6)),
        ]
        for other in others:
            for a, b in ((tree, other), (other, tree)):
                found = _records.inline_equal(a, b, InlineInfo)
                assert found is None or found is (a == b), (a, b)
                answered += found is not None
                different += found is False
    assert _records.inline_equal(None, None, InlineInfo) is True
    assert answered > 100 and different > 50


def test_subclasses_and_other_children_go_to_the_reference() -> None:
    assert _records is not None
    node = _Node(1, [(0, 2)])
    assert _records.inline_equal(node, InlineInfo(1, [(0, 2)]), InlineInfo) is None
    odd = InlineInfo(1, [(0, 2)], children=(InlineInfo(2, []),))  # type: ignore[arg-type]
    assert _records.inline_equal(odd, copy.copy(odd), InlineInfo) is None
    deep, twin = InlineInfo(0, []), InlineInfo(0, [])
    for _ in range(300):
        deep, twin = InlineInfo(0, [], children=[deep]), InlineInfo(0, [], children=[twin])
    assert _records.inline_equal(deep, twin, InlineInfo) is None
