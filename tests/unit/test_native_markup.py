"""The compiled run of lone `bt` lines (`stackmark._native._markup`) against
`BtLines.lines_bytes`, its pure-Python reference.

Both run on the same bytes, in one process: generated logs whose `bt` lines
are spelled every way the fast path must take or refuse (numbers and
addresses at their width limits, `:ra`/`:pc`, braces, ESC, CR, bytes that
are not UTF-8), the same logs damaged byte by byte, and runs cut at any
point. The output, the diagnostics and where each run stops must be equal.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark._native import forced_pure
from stackmark.markup.context import MarkupContext
from stackmark.markup.fastpath import BtLines
from stackmark.markup.resolve import Resolver
from tests.support.native import pure_python
from tests.unit.test_markup_fast_paths import fake, naming, through_cli

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

CONTEXT = [
    b"{{{reset}}}",
    b"{{{module:0:prog:elf:aa01}}}",
    b"{{{mmap:0x1000:0x1000:load:0:rx:0}}}",
    b"{{{module:1:lib:elf:0abc}}}",
    b"{{{mmap:0x7f0000000000:0x2000:load:1:rx:0x0}}}",
]

# Each part of a `bt` line: the forms the fast path takes, and the ones it must
# refuse (or take only as far as the reference does). A line has at most one
# odd part, so that runs get long and each odd part is met where it matters.
PARTS = {
    "before": ([b"", b" ", b"[t] ", b"\xc3\xa9 "], [b"{", b"{{", b"{{{", b"\x1b[31m", b"\r"]),
    "number": (
        [b"0", b"7", b"12", b"007", b"18446744073709551615"],
        [b"18446744073709551616", b"1" * 21, b""],
    ),
    "address": (
        [b"0x1001", b"0x1801", b"0x0000000000001800", b"0x7f0000000010"],
        [
            b"0X1800",
            b"0x1000",
            b"0x2000",
            b"0x7F0000001FFF",
            b"0x00000000000001800",
            b"0x",
            b"0x1g",
        ],
    ),
    "kind": ([b"", b":ra", b":pc"], [b":RA", b":rb", b":ra:x", b":"]),
    "end": ([b"}}}"], [b"}}", b"}}}}", b"}}}{{{pc:0x1}}}"]),
    "after": ([b"", b" x", b"\r", b"{", b"}}}"], [b"{{{", b"\x1b[0m", b"\xff{{", b" {{{pc:0x1}}}"]),
}


@st.composite
def bt_lines(draw: st.DrawFn) -> bytes:
    odd = draw(st.sampled_from([None, None, None, *PARTS]))
    part = {
        name.encode(): draw(st.sampled_from(bad if name == odd else good))
        for name, (good, bad) in PARTS.items()
    }
    return b"%(before)s{{{bt:%(number)s:%(address)s%(kind)s%(end)s%(after)s" % part


log_lines = st.one_of(
    bt_lines(),
    bt_lines(),
    bt_lines(),
    st.sampled_from(CONTEXT),
    st.sampled_from([b"plain", b"", b"{{{pc:0x1800}}}", b"{{{bt:1:0x1801}}} {{{pc:0x1000}}}"]),
)


def both_through_cli(raw: bytes) -> None:
    for compat in (False, True):
        compiled = through_cli(raw, compat)
        with pure_python():
            reference = through_cli(raw, compat)
        assert compiled == reference


@settings(max_examples=300, deadline=None)
@given(st.lists(log_lines, max_size=16), st.sampled_from([b"\n", b"\r\n"]))
def test_generated_logs_print_the_same(lines: list[bytes], eol: bytes) -> None:
    both_through_cli(b"".join(CONTEXT[1:3]) + b"\n" + b"".join(line + eol for line in lines))


@pytest.mark.parametrize("seed", range(30))
def test_damaged_logs_print_the_same(seed: int) -> None:
    rng = random.Random(seed)
    lines = [b"\n".join(CONTEXT)] + [
        b"%s{{{bt:%d:0x%x%s}}}%s"
        % (
            rng.choice([b"", b"[t] "]),
            i,
            rng.choice([0x1001, 0x1800, 0x7F0000000011]),
            rng.choice([b"", b":ra", b":pc"]),
            rng.choice([b"", b" x"]),
        )
        for i in range(40)
    ]
    data = bytearray(b"\n".join(lines) + b"\n")
    for _ in range(rng.randrange(1, 12)):
        at = rng.randrange(len(data))
        action = rng.randrange(3)
        byte = rng.choice(b"{}:x0\n\r\x1b\xff9")
        if action == 0:
            data[at] = byte
        elif action == 1:
            data.insert(at, byte)
        else:
            del data[at]
    both_through_cli(bytes(data))


def fresh_bt_lines() -> tuple[BtLines, MarkupContext]:
    context = MarkupContext()
    context.add_module(0, "prog", "aa01")
    context.add_mapping(0x1000, 0x1000, "rx", 0, 0)
    return BtLines(Resolver(fake()), naming(), show_invalid=False), context


@settings(max_examples=200, deadline=None)
@given(st.lists(log_lines, max_size=12), st.data())
def test_runs_stop_at_the_same_place(lines: list[bytes], data: st.DataObject) -> None:
    """Straight to the kernel, from any start to any end (the caller's block
    may end anywhere): the same stop, and the same bytes before it."""
    raw = b"".join(line + b"\n" for line in lines)
    starts = [0] + [i + 1 for i, byte in enumerate(raw) if byte == 10]  # the caller's
    start = data.draw(st.one_of(st.sampled_from(starts), st.integers(0, len(raw))))
    end = data.draw(st.one_of(st.just(len(raw)), st.integers(start, len(raw))))
    results = []
    for pure in (False, True):
        renderer, context = fresh_bt_lines()
        out: list[bytes] = []
        if pure:
            with pure_python():
                stop = renderer.lines_bytes(raw, start, end, context, out)
        else:
            stop = renderer.lines_bytes(raw, start, end, context, out)
        results.append((stop, b"".join(out)))
    assert results[0] == results[1]


def test_a_frame_template_is_made_once_for_both() -> None:
    """The kernel fills the renderer's own template store, as the reference does."""
    renderer, context = fresh_bt_lines()
    raw = b"{{{bt:0:0x1801}}}\n{{{bt:1:0x1801}}}\n"
    out: list[bytes] = []
    assert renderer.lines_bytes(raw, 0, len(raw), context, out) == len(raw)
    assert list(renderer._byte_texts) == [("aa01", "prog", 0x800, "\n")]
    text = b"".join(out).decode()
    assert text.count("(prog+0x800)") == 4  # two inline frames per line
    assert "    #1    0x0000000000001800 D(h) /h.c:5:6 (prog+0x800)\n" in text


def test_modules_unrelated_to_the_context_stop_the_run() -> None:
    renderer, context = fresh_bt_lines()
    context.add_module(1, "other", "0abc")
    context.add_mapping(0x5000, 0x1000, "rx", 1, 0)
    raw = b"{{{bt:0:0x1801}}}\n{{{bt:1:0x9001}}}\n{{{bt:2:0x5001}}}\n"
    for pure in (False, True):
        out: list[bytes] = []
        if pure:
            with pure_python():
                stop = renderer.lines_bytes(raw, 0, len(raw), context, out)
        else:
            stop = renderer.lines_bytes(raw, 0, len(raw), context, out)
        assert stop == raw.index(b"{{{bt:1")  # no mapping covers 0x9000


ADJACENT = [
    b"{{{reset}}}",
    b"{{{module:0:prog:elf:aa01}}}",
    b"{{{mmap:0x1000:0x1000:load:0:r:0x0}}}",
    b"{{{mmap:0x2000:0x1000:load:0:rx:0x800}}}",
    b"{{{module:1:lib:elf:0abc}}}",
    b"{{{mmap:0x3000:0x800:load:1:rx:0x0}}}",
    b"{{{mmap:0x3800:0:load:1:r:0x100}}}",
    b"{{{mmap:0x4000:0x1000:load:1:rx:0x7f0}}}",
    b"{{{mmap:0xfffffffffffff000:0x2000:load:1:rx:0x0}}}",
]
"""Mappings that touch (and one of size zero, one that wraps past 2^64): the
kernel keeps the mapping it found last, and must leave it for any address
that lies outside it."""


@pytest.mark.parametrize("seed", range(20))
def test_runs_across_adjacent_mappings_print_the_same(seed: int) -> None:
    rng = random.Random(seed)
    edges = [0x1000, 0x2000, 0x3000, 0x3800, 0x4000, 0x5000, 0xFFFFFFFFFFFFF000]
    addresses = [(edge + delta) % 2**64 for edge in edges for delta in (-1, 0, 1, 2, 0x7FF)]
    lines = [
        b"{{{bt:%d:0x%x%s}}}" % (i, rng.choice(addresses), rng.choice([b"", b":ra", b":pc"]))
        for i in range(40)
    ]
    both_through_cli(b"\n".join(ADJACENT + lines) + b"\n")
