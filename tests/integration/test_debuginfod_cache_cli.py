"""`stackmark cache info | prune --max-size | clear` over downloads and GSYM entries.

The download cache is filled by a real `stackmark symbolize` run against a
server on 127.0.0.1, the GSYM cache by the GSYM cache's own builder; the
figures `cache info` prints are checked against the files on disk.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from stackmark.symbols.cache import GsymCache
from tests.support.debuginfod_programs import (
    Build,
    LogModule,
    build_programs,
    cli_environment,
    crash_log,
    stackmark_cli,
)
from tests.support.debuginfod_servers import ScriptedServer, Serve


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


def filled(tmp_path: Path, builds: dict[str, Build]) -> tuple[dict[str, str], Path, Path]:
    """(environment, download cache, GSYM root) holding 2 downloads, 1 miss, 2 GSYM entries."""
    downloads = tmp_path / "downloads"
    env = cli_environment(downloads)
    gsym_root = Path(env["XDG_CACHE_HOME"]) / "stackmark"
    alpha, odd = builds["alpha"], builds["odd"]
    log = crash_log(
        [LogModule(alpha, ("alpha_leaf",)), LogModule(odd, ("main",)), LogModule(None, (), (1,))]
    )
    with ScriptedServer() as scripted:
        scripted.set_routes(
            {
                f"/buildid/{b.build_id}/debuginfo": Serve(b.executable.read_bytes())
                for b in (alpha, odd)
            }
        )
        run = stackmark_cli(
            "symbolize",
            "--debug-file-directory",
            tmp_path,
            "--debuginfod-url",
            scripted.url,
            stdin=log,
            env=env,
        )
    assert "alpha_leaf" in run.stdout, run.stderr
    gsym = GsymCache(gsym_root)
    for build in (alpha, odd):
        gsym.get_or_build(build.build_id, str(build.executable))
    return env, downloads, gsym_root


def info(env: dict[str, str]) -> dict[str, dict[str, object]]:
    out = stackmark_cli("cache", "info", "--json", env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def set_last_use(paths: list[Path], when: float) -> None:
    for path in paths:
        os.utime(path, (when, when))


def test_info_counts_what_is_on_disk(builds: dict[str, Build], tmp_path: Path) -> None:
    env, downloads, gsym_root = filled(tmp_path, builds)
    figures = info(env)
    files = [p for p in downloads.rglob("debuginfo")]
    gsym_files = [*gsym_root.rglob("*.gsym"), *gsym_root.rglob("*.gsymx")]
    assert figures["downloads"] == {
        "path": str(downloads),
        "items": 2,
        "build_ids": 2,
        "bytes": sum(p.stat().st_size for p in files),
        "misses": 2,  # the missing module's debuginfo and executable
    }
    assert figures["gsym"] == {
        "path": str(gsym_root / "gsym-v1"),
        "items": 2,
        "build_ids": 2,
        "bytes": sum(p.stat().st_size for p in gsym_files),
    }
    text = stackmark_cli("cache", env=env).stdout  # `info` is the default action
    assert f"downloads (debuginfod): {downloads}" in text
    assert "2 GSYM entries for 2 build ID(s)" in text


def test_prune_deletes_least_recently_used_across_both(
    builds: dict[str, Build], tmp_path: Path
) -> None:
    env, downloads, gsym_root = filled(tmp_path, builds)
    alpha, odd = builds["alpha"], builds["odd"]
    now = time.time()
    alpha_download = downloads / alpha.build_id / "debuginfo"
    odd_download = downloads / odd.build_id / "debuginfo"
    alpha_gsym = sorted(gsym_root.rglob(f"{alpha.build_id[2:]}.gsym*"))
    odd_gsym = sorted(gsym_root.rglob(f"{odd.build_id[2:]}.gsym*"))
    set_last_use([alpha_download], now - 400)  # oldest
    set_last_use(alpha_gsym, now - 300)
    set_last_use([odd_download], now - 200)
    set_last_use(odd_gsym, now - 100)  # newest
    total = info(env)["total_bytes"]
    assert isinstance(total, int)
    keep = total - alpha_download.stat().st_size - sum(p.stat().st_size for p in alpha_gsym)
    out = stackmark_cli("cache", "prune", "--max-size", str(keep), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("removed 2 item(s)")
    assert not alpha_download.exists() and not any(p.exists() for p in alpha_gsym)
    assert odd_download.exists() and all(p.exists() for p in odd_gsym)
    assert info(env)["total_bytes"] == keep


def test_prune_leaves_an_entry_being_built(builds: dict[str, Build], tmp_path: Path) -> None:
    env, _downloads, gsym_root = filled(tmp_path, builds)
    _gsym, _extras, lock_path = GsymCache(gsym_root).entry_paths(builds["odd"].build_id)
    with open(lock_path, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # as a builder holds it
        out = stackmark_cli("cache", "prune", "--max-size", "0", env=env)
    assert out.returncode == 0, out.stderr
    figures = info(env)
    assert figures["downloads"]["items"] == 0
    assert figures["gsym"]["items"] == 1


def test_clear(builds: dict[str, Build], tmp_path: Path) -> None:
    env, downloads, _gsym_root = filled(tmp_path, builds)
    (downloads / "cache_clean_interval_s").write_text("86400")  # elfutils' file: not ours
    out = stackmark_cli("cache", "clear", "--gsym", env=env)
    assert out.returncode == 0 and out.stdout.startswith("removed 2 item(s)")
    figures = info(env)
    assert figures["gsym"]["items"] == 0 and figures["downloads"]["items"] == 2
    stackmark_cli("cache", "clear", env=env)
    figures = info(env)
    assert figures["downloads"]["items"] == 0 and figures["downloads"]["misses"] == 0
    assert sorted(p.name for p in downloads.iterdir()) == ["cache_clean_interval_s"]


def test_bad_size_is_a_usage_error(tmp_path: Path) -> None:
    out = stackmark_cli("cache", "prune", "--max-size", "lots", env=cli_environment(tmp_path))
    assert out.returncode == 2
    assert "'lots' is not a size" in out.stderr
