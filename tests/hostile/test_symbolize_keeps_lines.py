"""`stackmark symbolize` keeps every input line, in order, for any bytes.

Property tests (hypothesis) over the real filter and the real symbolizer
(the markup fixture program's debug directory): input built from real
module/mmap/pc/bt/data/hexdict lines of that program, fragments of markup,
SGR codes, CR, and arbitrary bytes including invalid UTF-8. Checked:

- every input line without markup comes out byte for byte, as a line of
  its own (with its own terminator), in input order;
- of the other lines, the text outside elements and SGR codes comes out,
  in order (elements are replaced by what they symbolize to);
- invalid UTF-8 passes through unchanged (it is part of the above).
"""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stackmark.cli import symbolize
from stackmark.symbols.api import SymbolizerAPI
from tests.fuzz.targets import check_lines_kept
from tests.support.markup_programs import program_log


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], argparse.Namespace]:
    log = program_log("pie", tmp_path_factory.mktemp("symbolize"))
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    args = parser.parse_args([log.debug_option, "--gsym-cache=off"])
    return log.log.splitlines(), args


_symbolizers: dict[int, SymbolizerAPI] = {}


def _run(raw: bytes, args: argparse.Namespace) -> bytes:
    symbolizer = _symbolizers.get(id(args))
    if symbolizer is None:
        symbolizer = _symbolizers[id(args)] = symbolize._make_symbolizer(args)
    out = io.BytesIO()
    status = symbolize.run_streams(
        [("log", io.BytesIO(raw))],
        out,
        lambda _t: None,
        args,
        symbolizer,
        symbolize._make_naming(args),
    )
    assert status in (0, 1)
    return out.getvalue()


FRAGMENTS = [
    b"{{{",
    b"}}}",
    b":",
    b"{{{reset}}}",
    b"{{{pc:0x1010}}}",
    b"{{{bt:0:0x1010:ra}}}",
    b"{{{data:0x4010}}}",
    b"{{{hexdict:",
    b"  rax: 0x1000",
    b"{{{symbol:_Z1fv}}}",
    b"{{{dumpfile:llvm:x}}}",
    b"\x1b[31m",
    b"\x1b[0m",
    b"\r",
    b"\xff\xfe",
    b"\xc3",
    b"\xe2\x82",
    b"\xed\xa0\x80",  # an encoded surrogate: not UTF-8
    b" ",
]


def _lines(real: list[bytes]) -> st.SearchStrategy[bytes]:
    piece = st.one_of(
        st.sampled_from(FRAGMENTS),
        st.sampled_from(real),
        st.binary(max_size=6).filter(lambda b: b"\n" not in b),
    )
    return st.lists(piece, max_size=6).map(b"".join)


def _split(data: bytes) -> list[bytes]:
    """Lines with their terminators, split at LF only (CR alone is text)."""
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


def _plain_lines_kept(raw: bytes, output: bytes) -> None:
    """Markup-free input lines are whole output lines, in order."""
    out_lines = _split(output)
    position = 0
    for line in _split(raw):
        if b"{{{" in line or b"\x1b" in line or b"}}}" in line:
            continue
        if not line.endswith(b"\n"):  # the last line, unterminated
            assert output.endswith(line), (line, output[-200:])
            continue
        while position < len(out_lines) and out_lines[position] != line:
            position += 1
        assert position < len(out_lines), f"line lost or out of order: {line!r}"
        position += 1


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_line_comes_out_in_order(
    setup: tuple[list[bytes], argparse.Namespace], data: st.DataObject
) -> None:
    real, args = setup
    lines = data.draw(st.lists(_lines(real), max_size=14), label="lines")
    eols = data.draw(
        st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=len(lines), max_size=len(lines))
    )
    last = data.draw(st.sampled_from([b"", b"tail without newline \xff"]))
    raw = b"".join(line + eol for line, eol in zip(lines, eols, strict=True)) + last
    output = _run(raw, args)
    _plain_lines_kept(raw, output)
    check_lines_kept(raw, output)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=400))
def test_arbitrary_bytes_come_out_unchanged(raw: bytes) -> None:
    """Without `{{{` or ESC there is nothing to symbolize: the output is the input."""
    args = argparse.Namespace(**vars(_default_args()))
    cleaned = raw.replace(b"{{{", b"{{").replace(b"\x1b", b"")
    assert _run(cleaned, args) == cleaned


def _default_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    return parser.parse_args(["--gsym-cache=off", "--debug-file-directory=/nonexistent"])


def test_real_log_with_garbage_between_every_line(
    setup: tuple[list[bytes], argparse.Namespace], tmp_path: Path
) -> None:
    """The whole program log, each line followed by a line of invalid UTF-8:
    through the command itself, every garbage line survives in place."""
    import subprocess
    import sys

    real, args = setup
    garbage = [b"\xff garbage %d \xc3\x28 \xed\xa0\x80" % i for i in range(len(real))]
    raw = b"".join(line + b"\n" + junk + b"\n" for line, junk in zip(real, garbage, strict=True))
    debug = next(a for a in vars(args).get("debug_file_directory", []))
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", "--gsym-cache=off",
         f"--debug-file-directory={debug}"],
        input=raw, capture_output=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    out_lines = proc.stdout.split(b"\n")
    indexes = [out_lines.index(junk) for junk in garbage]
    assert indexes == sorted(indexes)
    check_lines_kept(raw, proc.stdout)
