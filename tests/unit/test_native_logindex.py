"""The compiled kernels of the language server's log index against their
pure-Python references: the bulk frame check's address scan
(`stackmark._native._logindex.frame_span`) against `scan.FRAME_ADDRESS.findall`
read with `int(a, 16)` (`Index._check_frames`), and the reading of a run of
contextual lines (`_logindex.context_rows`) against `scan.context_rows`
(`Index._read_context`).

Both run on the same text: frames spelled every way the pattern takes or
refuses (numbers and addresses at their width limits, `0X`, missing parts,
braces before and inside), other elements, text that is not ASCII, the
same text cut anywhere, and random characters from the pattern's alphabet.
The count, the lowest and the highest address must be equal; a text of
wider characters is given back (None). The contextual rows likewise: rows
spelled every way `scan.CONTEXT_ROW` takes or refuses, runs of them cut and
damaged anywhere, random characters, and the benchmark's own crash-report
headers; the rows read and the position after the run must be equal.
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


CONTEXT_PIECES = [
    "{{{reset}}}\n", "  {{{reset}}} tail }\n", "{{{reset}}}", "{{{reset}}}{\n", "{{{RESET}}}\n",
    "{{{module:0:big-O2:elf:85c609013237c6f18163dd4142204b5631720bb4}}}\n",
    "[1] {{{module:0x1F:libc.so.6:elf:ABC}}} x\n", "{{{module:0X0:\u00e9t\u00e9:elf:0}}}\n",
    "{{{module:1234567890123456789::elf:ab}}}\n", "{{{module:12345678901234567890:a:elf:ab}}}\n",
    "{{{module:00:a:elf:ab}}}\n", "{{{module:0x:a:elf:ab}}}\n", "{{{module:1:a:b:elf:ab}}}\n",
    "{{{module:1:a:elf:}}}\n", "{{{module:1:a:elf:xy}}}\n",
    "{{{module:0x11111111111111111:a:elf:1}}}\n",
    "{{{mmap:0x5552e6b43000:0x2f000:load:0:r:0x0}}}\n",
    "{{{mmap:0x1:10:load:0x1:RwX:0xffffffffffffffff}}}\n",
    "{{{mmap:0x1:0x2:load:0:wx:0x3}}}\n", "{{{mmap:0x1:0x2:load:0:xr:0x3}}}\n",
    "{{{mmap:0x1:0x2:load:0::0x3}}}\n", "{{{mmap:0X1:0x2:load:0:r:0x3}}}\n",
    "{{{mmap:0x10000000000000000:0x2:load:0:r:0x3}}}\n", "{{{mmap:0x1:0x2:load:0:r:0x}}}\n",
    "{{{mmap:0x1:0x2:load:0:r:0x3:extra}}}\n", "{{{mmap:0x1:0x2:store:0:r:0x3}}}\n",
    "{{{mmap:0x1:9999999999999999999:load:0:w:0x3}}}\n", "{{{bt:0:0x1}}}\n", "plain\n", "\n",
    "{", "}}}", ":", "\u00e9",
]  # fmt: skip


def compiled_rows(text: str, pos: int) -> tuple[int, list[scan.ContextRow]] | None:
    assert index._native is not None, "the compiled module is built (test_native.py)"
    result: tuple[int, list[scan.ContextRow]] | None = index._native.context_rows(text, pos)
    return result


def test_context_pieces_runs_and_cuts_agree() -> None:
    rng = random.Random(1818)
    agreed_rows = 0
    for _ in range(400):
        text = "".join(rng.choice(CONTEXT_PIECES) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.3:
            text = text[: rng.randint(0, len(text))]
        for pos in [0, rng.randint(0, len(text)), len(text)] + [
            i + 1 for i, c in enumerate(text) if c == "\n"
        ]:
            expected = scan.context_rows(text, pos)
            assert compiled_rows(text, pos) == expected, (text, pos)
            agreed_rows += len(expected[1])
    assert agreed_rows > 500  # the runs were not all refused


def test_the_benchmark_crash_report_header() -> None:
    header = (
        "{{{reset}}}\n{{{module:0:big-O2:elf:85c609013237c6f18163dd4142204b5631720bb4}}}\n"
        "{{{mmap:0x5552e6b43000:0x2f000:load:0:r:0x0}}}\n"
        "{{{mmap:0x5552e6b72000:0x76b000:load:0:rx:0x2f000}}}\n"
        "[22:13:20.014769] FATAL worker-25: signal 11 (SIGSEGV)\n"
    )
    end, rows = scan.context_rows(header, 0)
    assert rows[2] == (0, 0x5552E6B43000, 0x2F000, 0, "r", 0)
    assert compiled_rows(header, 0) == (end, rows)
    assert end == header.index("[22:")


def test_context_rows_of_wider_text_are_given_back() -> None:
    assert compiled_rows("{{{reset}}}\n\u0101\n", 0) is None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(CONTEXT_PIECES), max_size=8),
    st.text(alphabet="{}:0123456789abcdefxXrwRW\nelmodupsat", max_size=40),
    st.data(),
)
def test_random_context_text_agrees(pieces: list[str], noise: str, data: st.DataObject) -> None:
    text = "".join(pieces)
    at = data.draw(st.integers(0, len(text)))
    text = text[:at] + noise + text[at:]
    pos = data.draw(st.integers(0, len(text)))
    assert compiled_rows(text, pos) == scan.context_rows(text, pos)
