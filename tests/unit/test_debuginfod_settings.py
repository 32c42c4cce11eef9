"""debuginfod settings, build-ID validation and cache bookkeeping, without a server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from stackmark.symbols.buildid import (
    InvalidBuildIdError,
    build_id_debug_relpath,
    validate_build_id,
)
from stackmark.symbols.debuginfod import (
    DEFAULT_TIMEOUT_SECONDS,
    DebuginfodClient,
    DebuginfodConfigError,
    DebuginfodSettings,
    parse_urls,
)
from stackmark.symbols.download_cache import DownloadCache, source_cache_name
from stackmark.symbols.negative_cache import NegativeCache

BUILD_ID = "50eafc00e2926f02e29c6b99bee34922a25350df"


# -- build IDs -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["../../etc/passwd", "ab/cd", "abc", "", "zz", "ab cd", "a" * 130, "0x1234", "ab\0cd", ".."],
)
def test_bad_build_ids_are_rejected(text: str) -> None:
    with pytest.raises(InvalidBuildIdError):
        validate_build_id(text)


def test_build_id_is_lower_cased_and_placed() -> None:
    assert validate_build_id(BUILD_ID.upper()) == BUILD_ID
    assert build_id_debug_relpath(BUILD_ID) == f".build-id/50/{BUILD_ID[2:]}.debug"


def test_client_never_builds_a_path_from_a_bad_build_id(tmp_path: Path) -> None:
    client = DebuginfodClient(DebuginfodSettings(cache_path=tmp_path / "cache", offline=True))
    result = client.find_module_file("../../../../etc")
    assert result.path is None
    assert result.error is not None and "not hexadecimal" in result.error
    assert not (tmp_path / "cache").exists()


# -- settings ------------------------------------------------------------------


def test_environment_is_read(tmp_path: Path) -> None:
    env = {
        "DEBUGINFOD_URLS": "http://a.example:8002/  https://b.example/debuginfod ima:enforcing",
        "DEBUGINFOD_TIMEOUT": "7",
        "DEBUGINFOD_CACHE_PATH": str(tmp_path),
    }
    settings = DebuginfodSettings.from_environment(env)
    assert settings.urls == ("http://a.example:8002", "https://b.example/debuginfod")
    assert settings.timeout == 7
    assert settings.cache_path == tmp_path


def test_options_override_the_environment(tmp_path: Path) -> None:
    env = {"DEBUGINFOD_URLS": "http://a.example", "DEBUGINFOD_TIMEOUT": "7"}
    settings = DebuginfodSettings.from_environment(
        env, urls=["http://c.example"], timeout=0, cache_path=tmp_path, offline=True
    )
    assert settings.urls == ("http://c.example",)
    assert settings.timeout is None  # 0 means no timeout, as in elfutils
    assert settings.cache_path == tmp_path
    assert settings.offline


def test_defaults_without_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    settings = DebuginfodSettings.from_environment({})
    assert settings.urls == ()
    assert settings.timeout == DEFAULT_TIMEOUT_SECONDS
    assert settings.cache_path == tmp_path / "stackmark" / "debuginfod"


@pytest.mark.parametrize("word", ["ftp://x.example", "x.example", "http://", "http://x/?q=1"])
def test_bad_urls_are_named(word: str) -> None:
    with pytest.raises(DebuginfodConfigError, match="DEBUGINFOD_URLS"):
        parse_urls(f"http://ok.example {word}")


def test_bad_timeout_is_named() -> None:
    with pytest.raises(DebuginfodConfigError, match="DEBUGINFOD_TIMEOUT"):
        DebuginfodSettings.from_environment({"DEBUGINFOD_TIMEOUT": "soon"})


def test_headers_file(tmp_path: Path) -> None:
    headers = tmp_path / "headers"
    headers.write_text("Authorization: Bearer x\n\nX-Team: crash\n")
    settings = DebuginfodSettings.from_environment({"DEBUGINFOD_HEADERS_FILE": str(headers)})
    assert settings.headers == (("Authorization", "Bearer x"), ("X-Team", "crash"))
    headers.write_text("no colon here\n")
    with pytest.raises(DebuginfodConfigError, match=r"headers:1"):
        DebuginfodSettings.from_environment({"DEBUGINFOD_HEADERS_FILE": str(headers)})


def test_cache_miss_control_file_sets_the_ttl(tmp_path: Path) -> None:
    (tmp_path / "cache_miss_s").write_text("42\n")
    assert DebuginfodSettings.from_environment({}, cache_path=tmp_path).negative_ttl == 42
    settings = DebuginfodSettings.from_environment({}, cache_path=tmp_path, negative_ttl=5)
    assert settings.negative_ttl == 5


# -- cache layout -----------------------------------------------------------------


def test_source_names_follow_elfutils() -> None:
    # As elfutils 0.188's debuginfod-find names them (checked by hand).
    assert source_cache_name("/tmp/dtest/a.c") == "source##tmp##dtest##a.c"
    assert source_cache_name("/tmp/sp ace#x/b+c.c") == "source##tmp##sp ace#_x##b+c.c"
    long_name = source_cache_name("/" + "d/" * 200 + "f.c")
    assert long_name.startswith("source-") and "/" not in long_name


def test_artifact_names_cannot_escape(tmp_path: Path) -> None:
    cache = DownloadCache(tmp_path)
    for name in ("../x", "a/b", "..", ""):
        with pytest.raises(ValueError):
            cache.artifact_path(BUILD_ID, name)
    with pytest.raises(InvalidBuildIdError):
        cache.artifact_path("../" + BUILD_ID, "debuginfo")


def _put(cache: DownloadCache, build_id: str, name: str, size: int, age: float) -> Path:
    path = cache.prepare(build_id) / name
    path.write_bytes(b"x" * size)
    when = time.time() - age
    os.utime(path, (when, when))
    return path


def test_prune_removes_least_recently_used_first(tmp_path: Path) -> None:
    cache = DownloadCache(tmp_path)
    old = _put(cache, "aa" * 20, "debuginfo", 1000, age=300)
    mid = _put(cache, "bb" * 20, "debuginfo", 1000, age=200)
    new = _put(cache, "cc" * 20, "executable", 1000, age=100)
    cache.touch(old)  # used just now: the oldest becomes the newest
    (tmp_path / "not-a-build-id").mkdir()
    removed = cache.prune(2000)
    assert [e.path for e in removed] == [mid]
    assert old.exists() and new.exists() and not mid.exists()
    assert not (tmp_path / ("bb" * 20)).exists()  # emptied directories go too
    assert (tmp_path / "not-a-build-id").exists()  # foreign things are never touched


def test_clear_keeps_foreign_files(tmp_path: Path) -> None:
    cache = DownloadCache(tmp_path)
    _put(cache, "aa" * 20, "debuginfo", 10, age=0)
    (tmp_path / "cache_clean_interval_s").write_text("86400")
    removed = cache.clear()
    assert len(removed) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache_clean_interval_s"]


def test_empty_files_are_not_downloads(tmp_path: Path) -> None:
    """elfutils marks a failed query with an empty file; it is not a hit."""
    cache = DownloadCache(tmp_path)
    marker = _put(cache, "aa" * 20, "debuginfo", 0, age=0)
    assert not cache.present(marker)
    assert cache.entries() == []


# -- negative cache -------------------------------------------------------------------


def test_misses_expire_and_depend_on_the_servers(tmp_path: Path) -> None:
    artifact = tmp_path / BUILD_ID / "debuginfo"
    misses = NegativeCache(["http://a.example"], ttl=60)
    misses.remember(artifact, "not found")
    assert misses.lookup(artifact) is not None
    assert misses.lookup(artifact, now=time.time() + 61) is None
    assert NegativeCache(["http://a.example", "http://b.example"], 60).lookup(artifact) is None
    assert NegativeCache(["http://a.example"], ttl=0).lookup(artifact) is None
    misses.forget(artifact)
    assert misses.lookup(artifact) is None


def test_corrupt_miss_records_are_ignored(tmp_path: Path) -> None:
    artifact = tmp_path / "debuginfo"
    NegativeCache.marker_for(artifact).write_text("{not json")
    assert NegativeCache(["http://a.example"]).lookup(artifact) is None


def test_offline_client_uses_only_the_cache(tmp_path: Path) -> None:
    client = DebuginfodClient(
        DebuginfodSettings(urls=("http://127.0.0.1:9",), cache_path=tmp_path, offline=True)
    )
    result = client.find_module_file(BUILD_ID)
    assert result.path is None
    assert result.error is not None and "offline" in result.error
    assert result.attempts == ()
