"""The compiled address scan of the language server's bulk frame check
(`stackmark._native._logindex.frame_span`) against its pure-Python reference,
`scan.FRAME_ADDRESS.findall` read with `int(a, 16)` (`Index._check_frames`).

Both run on the same text: frames spelled every way the pattern takes or
refuses (numbers and addresses at their width limits, `0X`, missing parts,
braces before and inside), other elements, text that is not ASCII, the
same text cut anywhere, and random characters from the pattern's alphabet.
The count, the lowest and the highest address must be equal; a text of
wider characters is given back (None).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stackmark_lsp import index, scan

from stackmark._native import forced_pure

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

PIECES = [
    "{{{bt:0:0x1000}}}", "{{{bt:12:0x7f0000000010:ra}}}", "{{{bt:1234567890123456789:0x1}}}",
    "{{{bt:12345678901234567890:0x2}}}", "{{{bt::0x3}}}", "{{{bt:1:0X4}}}", "{{{bt:1:0x}}}",
    "{{{pc:0xffffffffffffffff}}}", "{{{pc:0x1ffffffffffffffff}}}", "{{{pc:0xABCdef}}}",
    "{{{data:0x10}}}", "{{{data:10}}}", "{{{dat:0x5}}}", "{{{{bt:3:0x30}}}", "{{bt:3:0x31}}}",
    "{{{bt:3:{{{pc:0x32}}}", "{{{module:0:a:elf:ab}}}", "{{{mmap:0x1:0x2:load:0:rx:0x0}}}",
    "{{{reset}}}", "{{{PC:0x6}}}", "{{{pc: 0x7}}}", "{{{pc:0x٣}}}", "{{{bt:١:0x8}}}",
    "[1] ", "text ", "\n", "\u00e9", "{", "{{", "{{{", "0x", ":", "bt:",
]  # fmt: skip


def reference(text: str, begin: int, end: int) -> tuple[int, int, int]:
    found = [int(a, 16) for a in scan.FRAME_ADDRESS.findall(text, begin, end)]
    return (len(found), min(found), max(found)) if found else (0, 0, 0)


def compiled(text: str, begin: int, end: int) -> tuple[int, int, int] | None:
    assert index._native is not None, "the compiled module is built (test_native.py)"
    result: tuple[int, int, int] | None = index._native.frame_span(text, begin, end)
    return result


def random_text(rng: random.Random, pieces: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(pieces))


def test_pieces_and_every_cut_agree() -> None:
    rng = random.Random(18)
    for _ in range(300):
        text = random_text(rng, rng.randint(0, 30))
        if not text.isascii() and max(map(ord, text)) > 0xFF:
            assert compiled(text, 0, len(text)) is None
            continue
        for begin, end in [(0, len(text))] + [
            sorted((rng.randint(0, len(text)), rng.randint(0, len(text)))) for _ in range(20)
        ]:
            assert compiled(text, begin, end) == reference(text, begin, end), (text, begin, end)


def test_a_typical_run_of_frames() -> None:
    lines = [f"[{n}] {{{{{{bt:{n}:0x{0x5552E6B43000 + n * 37:x}:ra}}}}}}\n" for n in range(500)]
    text = "".join(lines)
    assert compiled(text, 0, len(text)) == (500, 0x5552E6B43000, 0x5552E6B43000 + 499 * 37)
    assert compiled(text, 0, len(text)) == reference(text, 0, len(text))
    assert compiled(text, 5, len(text) - 3) == reference(text, 5, len(text) - 3)


def test_out_of_range_positions_are_clamped_as_the_regex_does() -> None:
    text = "{{{pc:0x10}}} {{{pc:0x20}}}"
    for begin, end in [(-5, 100), (0, 10**9), (30, 3), (26, 27), (0, 0)]:
        assert compiled(text, begin, end) == reference(text, begin, end)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="{}btpcdaxX0123456789:afF \n\u00e9", max_size=120), st.data())
def test_random_text_agrees(text: str, data: st.DataObject) -> None:
    begin = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(begin, len(text)))
    assert compiled(text, begin, end) == reference(text, begin, end)
