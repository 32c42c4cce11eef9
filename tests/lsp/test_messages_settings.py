"""The server's messages (English, Japanese) and settings, without a server."""

from __future__ import annotations

from pathlib import Path

import pytest
from stackmark_lsp.index import NO_MMAP
from stackmark_lsp.messages import EN, JA, Messages, language_of
from stackmark_lsp.settings import parse

from stackmark.markup.context import MarkupContext
from stackmark.markup.diagnostics import Diagnostic
from stackmark.markup.elements import MmapElement, ModuleElement, decode
from stackmark.markup.parser import parse_line


def core_diagnostics() -> list[Diagnostic]:
    """One diagnostic of every kind the core gives for markup (and the index's no-mmap)."""
    found: list[Diagnostic] = []
    for text in ["{{{PC:0x1}}}", "{{{reset:x}}}", "{{{pc}}}", "{{{pc:0x1:ra:x}}}",
                 "{{{pc:zz}}}", "{{{module:0:a:coff:ab}}}", "{{{mmap:0x1:0x1:heap:0:r:0}}}",
                 "{{{hexdict:a: 0xzz}}}"]:  # fmt: skip
        for element in parse_line(text).elements:
            found.extend(decode(element).diagnostics)
    context = MarkupContext()
    module = decode(parse_line("{{{module:0:a:elf:ab}}}").elements[0])
    assert isinstance(module, ModuleElement)
    context.declare_module(module)
    duplicate = context.declare_module(module)
    assert isinstance(duplicate, Diagnostic)
    found.append(duplicate)
    for text in ["{{{mmap:0x1000:0x1000:load:0:r:0}}}", "{{{mmap:0x1800:0x10:load:0:r:0}}}",
                 "{{{mmap:0x5000:0x10:load:7:r:0}}}"]:  # fmt: skip
        mmap = decode(parse_line(text).elements[0])
        assert isinstance(mmap, MmapElement)
        result = context.map_segment(mmap)
        if isinstance(result, Diagnostic):
            found.append(result)
    found.append(Diagnostic(found[0].severity, NO_MMAP, 0, 0, 1, "no-mmap"))
    return found


def test_every_core_diagnostic_reads_in_japanese() -> None:
    diagnostics = core_diagnostics()
    codes = {d.code for d in diagnostics}
    assert codes >= {"bad-tag", "field-count", "too-few-fields", "too-many-fields", "bad-field",
                     "unknown-module-type", "unknown-mmap-type", "duplicate-id",
                     "unknown-module", "overlapping-mmap", "no-mmap", "bad-hex-value"}  # fmt: skip
    english, japanese = Messages("en-US"), Messages("ja")
    for diag in diagnostics:
        assert english.diagnostic(diag) == diag.message
        translated = japanese.diagnostic(diag)
        assert translated != diag.message, diag
        assert any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in translated)
        for number in "".join(c if c.isdigit() else " " for c in diag.message).split():
            assert number in translated  # the values stay


def test_languages() -> None:
    assert [language_of(x) for x in ("ja", "ja-JP", "JA_jp", "en", "fr", "", None, "jax")] == [
        "ja",
        "ja",
        "ja",
        "en",
        "en",
        "en",
        "en",
        "en",
    ]
    assert set(EN) == set(JA)
    assert Messages("ja")("lens.symbolize") != Messages("de")("lens.symbolize") == "Symbolize"


def test_settings_layers_and_paths(tmp_path: Path) -> None:
    init = {"debugFileDirectories": ["~/debug"], "objects": "rel/a.out", "cacheDir": "$HOME/c"}
    config = {"stackmark": {"debugFileDirectories": [], "symbolPaths": ["/s"],
                            "gsymPaths": ["g"], "sourcePathMap": {"/b": "/x", "/b/src": "/y"},
                            "debuginfodUrls": "http://a http://b"}}  # fmt: skip
    settings, problems = parse([init, config], str(tmp_path))
    assert problems == []
    assert settings.debug_file_directories == (str(Path.home() / "debug"),)  # [] = default
    assert settings.objects == (str(tmp_path / "rel" / "a.out"),)
    assert settings.cache_dir == str(Path.home() / "c")
    assert settings.symbol_paths == ("/s",)
    assert settings.gsym_paths == (str(tmp_path / "g"),)
    assert settings.debuginfod_urls == ("http://a", "http://b")
    assert (settings.debuginfod_timeout, settings.debuginfod_offline) == (None, False)
    more, problems = parse(
        [config, {"debuginfodTimeout": 0, "debuginfodCachePath": "dl", "debuginfodOffline": True}],
        str(tmp_path),
    )
    assert problems == []
    assert more.debuginfod_timeout == 0.0  # no limit, as DEBUGINFOD_TIMEOUT=0
    assert more.debuginfod_cache_path == str(tmp_path / "dl")
    assert more.debuginfod_offline is True
    assert settings.map_source("/b/src/f.c") == "/y/f.c"  # the longest prefix wins
    assert settings.map_source("/b/lib/g.c") == "/x/lib/g.c"
    assert settings.map_source("/bin/h.c") == "/bin/h.c"  # a prefix of a name is not one


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"objects": 3}, "not-a-list"),
        ({"cacheDir": ["a"]}, "not-a-string"),
        ({"sourcePathMap": ["a"]}, "not-an-object"),
        ({"debuginfodUrls": {"a": 1}}, "not-a-list"),
        ({"debuginfodTimeout": "10"}, "not-a-number"),
        ({"debuginfodTimeout": -1}, "not-a-number"),
        ({"debuginfodTimeout": True}, "not-a-number"),
        ({"debuginfodCachePath": 3}, "not-a-string"),
        ({"debuginfodOffline": "yes"}, "not-a-boolean"),
        ({"colour": True}, "unknown-key"),
    ],
)
def test_settings_problems(value: dict[str, object], reason: str) -> None:
    settings, problems = parse([value])
    assert [p.reason for p in problems] == [reason]
    assert settings == parse([{}])[0]  # the bad value is ignored
