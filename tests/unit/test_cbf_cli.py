"""`stackmark cbf encode` / `decode` through the command-line entry point."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from stackmark.cli.main import main
from stackmark.formats.imagemap import Image, ImageMap, encode_image_map
from stackmark.formats.swift_backtrace import SwiftBacktrace, encode_base64


def run(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    stdin: str = "",
) -> tuple[int, str, str]:  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


MARKUP = """\
[log] crashed:
{{{bt:0:0x555555555160:pc}}}
{{{bt:1:0x555555555178:ra}}}
   {{{bt:2:0x555555555187}}} trailing text
{{{bt:6:0x7ffff7dfc24a:ra}}}
"""
# pc 0x555555555160 (6 bytes, relative to 0) 15 55 55 55 55 51 60
# ra +0x18 -> 20 18; ra +0xf -> 20 0f; omit 3 -> 42; ra +0x2aaaa28a70c3 -> 25 2a aa a2 8a 70 c3
MARKUP_CBF = "02155555555551602018200f42252aaaa28a70c300"


def test_encode_markup(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _err = run(["cbf", "encode"], capsys, monkeypatch, MARKUP)
    assert (code, out) == (0, MARKUP_CBF + "\n")


def test_encode_formats(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = "pc:0x10\nra 0x20\nomitted:40\nasync:0x30\ntruncated\n"
    # pc 10 10; ra +0x10 20 10; omit 40 external 60 28; async +0x10 30 10; trunc 01
    expected = bytes.fromhex("02 10 10 20 10 60 28 30 10 01")
    assert run(["cbf", "encode"], capsys, monkeypatch, lines)[1] == expected.hex() + "\n"
    out = run(["cbf", "encode", "--format", "base64"], capsys, monkeypatch, lines)[1]
    assert out == encode_base64(expected) + "\n"
    out = run(["cbf", "encode", "--format", "swift-json", "--architecture", "arm64"], capsys,
              monkeypatch, lines)[1]  # fmt: skip
    assert json.loads(out) == {"architecture": "arm64", "backtrace": encode_base64(expected)}
    out16 = run(["cbf", "encode", "--word-bits", "16"], capsys, monkeypatch, "pc:0xfff0\npc:0x10\n")
    assert out16[1] == "0010f0102000\n"


def test_encode_splits_backtraces(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "{{{bt:0:0x10:pc}}}\n{{{bt:1:0x20}}}\n{{{reset}}}\n{{{bt:0:0x30:pc}}}\n{{{bt:0:0x40:pc}}}\n"
    )
    out = run(["cbf", "encode"], capsys, monkeypatch, text)[1].split()
    assert out == ["021010201000", "02103000", "02104000"]


def test_encode_errors_name_the_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["cbf", "encode"], capsys, monkeypatch, "pc:0x10\nra:0xzz\n")
    assert code == 1 and out == ""
    assert "<stdin>: line 2: bad address '0xzz'" in err
    code, _out, err = run(
        ["cbf", "encode", "--word-bits", "16"], capsys, monkeypatch, "pc:0x10000\n"
    )
    assert code == 1 and "does not fit in 16 bits" in err
    code, _out, err = run(["cbf", "encode"], capsys, monkeypatch, "nothing here\n")
    assert code == 1 and "no frames on stdin" in err


def test_decode_to_markup_and_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["cbf", "decode", MARKUP_CBF], capsys, monkeypatch)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "{{{bt:0:0x555555555160:pc}}}",
        "{{{bt:1:0x555555555178:ra}}}",
        "{{{bt:2:0x555555555187:ra}}}",
        "{{{bt:6:0x7ffff7dfc24a:ra}}}",
    ]
    assert run(["cbf", "encode"], capsys, monkeypatch, out)[1] == MARKUP_CBF + "\n"


def test_decode_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _err = run(["cbf", "decode", "--json", "AhAQIBBgKDAQAQ"], capsys, monkeypatch)
    assert code == 0
    assert json.loads(out) == {
        "word_bits": 64,
        "frames": [
            {"kind": "pc", "address": "0x10"},
            {"kind": "ra", "address": "0x20"},
            {"kind": "omitted", "count": 40},
            {"kind": "async", "address": "0x30"},
        ],
        "truncated": True,
        "ending": "trunc",
        "size": 10,
    }


def test_final_omitted_frames_survive_markup(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No frame follows the last omitted run, so no bt number can show it: a line does."""
    # pc 0x10; ra +0x10; omit 3 (inline 42); omit 40 (external 60 28); end
    data = "0210102010426028" + "00"
    out = run(["cbf", "decode", data], capsys, monkeypatch)[1]
    assert out.splitlines() == [
        "{{{bt:0:0x10:pc}}}",
        "{{{bt:1:0x20:ra}}}",
        "... (43 frames omitted)",
    ]
    again = run(["cbf", "encode"], capsys, monkeypatch, out)[1].strip()
    assert run(["cbf", "decode", "--json", again], capsys, monkeypatch)[1].count('"count": 43') == 1
    truncated = run(["cbf", "decode", "0210104201"], capsys, monkeypatch)[1]
    assert truncated.splitlines() == [
        "{{{bt:0:0x10:pc}}}",
        "... (3 frames omitted)",
        "... (backtrace truncated)",
    ]
    assert run(["cbf", "encode"], capsys, monkeypatch, truncated)[1] == "0210104201\n"


def test_decode_truncated_markup(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run(["cbf", "decode", "021010012010"], capsys, monkeypatch)[1]
    assert out.splitlines() == ["{{{bt:0:0x10:pc}}}", "... (backtrace truncated)"]


def test_decode_damaged_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["cbf", "decode", "02 10 10 20 10 9f"], capsys, monkeypatch)
    assert code == 1
    assert out.splitlines() == [
        "{{{bt:0:0x10:pc}}}",
        "{{{bt:1:0x20:ra}}}",
        "... (backtrace truncated)",
    ]
    assert "DATA: offset 0x5: reserved opcode 0x9f; 2 frames before it" in err
    code, out, err = run(["cbf", "decode", "07"], capsys, monkeypatch)
    assert (code, out) == (1, "")
    assert "info byte 0x07: unsupported version 1" in err
    code, out, err = run(["cbf", "decode", "021010"], capsys, monkeypatch)
    assert code == 0 and "no end marker" in err
    code, out, err = run(["cbf", "decode", "0210 1"], capsys, monkeypatch)
    assert code == 1 and "odd number of hex digits" in err


def test_decode_files_raw_and_swift_json_with_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = bytes.fromhex("02 15 55 55 55 55 51 60 20 18 00")
    (tmp_path / "bt.cbf").write_bytes(raw)
    out = run(["cbf", "decode", f"@{tmp_path / 'bt.cbf'}"], capsys, monkeypatch)[1]
    assert out.splitlines() == ["{{{bt:0:0x555555555160:pc}}}", "{{{bt:1:0x555555555178:ra}}}"]
    images = encode_image_map(
        ImageMap(
            "linux",
            [
                Image(
                    "app", "/nonexistent/app", bytes.fromhex("abcd"), 0x555555554000, 0x555555556000
                )
            ],
        )
    )
    (tmp_path / "bt.json").write_text(SwiftBacktrace("x86_64", raw, images).to_json())
    out = run(["cbf", "decode", f"@{tmp_path / 'bt.json'}"], capsys, monkeypatch)[1]
    assert out.splitlines() == [
        "{{{reset}}}",
        "{{{module:0:app:elf:abcd}}}",
        "{{{mmap:0x555555554000:0x2000:load:0:rx:0x0}}}",
        "{{{bt:0:0x555555555160:pc}}}",
        "{{{bt:1:0x555555555178:ra}}}",
    ]
    # The same map given separately, as base64.
    out2 = run(
        ["cbf", "decode", raw.hex(), "--images", encode_base64(images)], capsys, monkeypatch
    )[1]
    assert out2 == out
    code, _out, err = run(["cbf", "decode", "@/nonexistent/file"], capsys, monkeypatch)
    assert code == 1 and "/nonexistent/file: cannot read" in err
