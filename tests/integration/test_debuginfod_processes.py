"""Several processes and one download cache: no corruption, no duplicate work.

Two processes fill one cache at the same time from a slow server; a
process killed with SIGKILL in the middle of a download leaves nothing that
is later trusted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings
from tests.support.build import REPO
from tests.support.debuginfod_programs import Build, build_programs
from tests.support.debuginfod_servers import (
    ScriptedServer,
    Serve,
    StallAfter,
    server_environment,
)

FETCHER = """
import json, sys
from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings
url, cache, *ids = sys.argv[1:]
settings = DebuginfodSettings.from_environment({}, urls=[url], cache_path=cache, timeout=30)
results = DebuginfodClient(settings).prefetch(ids, jobs=4)
print(json.dumps({i: (str(r.path) if r.path else None, r.error) for i, r in results.items()}))
"""


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def start_fetcher(url: str, cache: Path, ids: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", FETCHER, url, str(cache), *ids],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=server_environment(),
    )


def test_two_processes_fill_one_cache(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    served = [b for b in builds.values() if b.debuginfo is not None]
    server.set_routes(
        {
            f"/buildid/{b.build_id}/debuginfo": Serve(b.debuginfo.read_bytes(), delay=0.3)
            for b in served
            if b.debuginfo is not None
        }
    )
    ids = [b.build_id for b in served]
    first = start_fetcher(server.url, tmp_path, ids)
    second = start_fetcher(server.url, tmp_path, list(reversed(ids)))
    outputs = []
    for process in (first, second):
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        outputs.append(json.loads(out))
    assert outputs[0] == outputs[1]
    for build in served:
        path, error = outputs[0][build.build_id]
        assert error is None
        assert build.debuginfo is not None
        assert Path(path).read_bytes() == build.debuginfo.read_bytes()
        with ElfFile.open(path) as elf:
            assert elf.build_id == build.build_id
        # The per-build-ID lock made the second process wait, then use the file.
        assert server.count(f"/buildid/{build.build_id}/debuginfo") == 1
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith((".part", ".tmp"))]


def test_kill_during_download_leaves_nothing_trusted(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    data = alpha.executable.read_bytes()
    path = f"/buildid/{alpha.build_id}/debuginfo"
    server.set_routes({path: StallAfter(data, keep=len(data) // 2)})
    process = start_fetcher(server.url, tmp_path, [alpha.build_id])
    directory = tmp_path / alpha.build_id
    deadline = time.monotonic() + 60
    part: list[Path] = []
    while time.monotonic() < deadline and process.poll() is None:
        part = [p for p in directory.glob(".*.part") if p.stat().st_size >= len(data) // 2]
        if part:
            break
        time.sleep(0.02)
    assert part, "the download never got half way"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)

    target = directory / "debuginfo"
    assert not target.exists()  # only the .part file: never read by anyone
    offline = DebuginfodClient(DebuginfodSettings(cache_path=tmp_path, offline=True))
    assert offline.find_debuginfo(alpha.build_id).path is None

    server.set_routes({path: Serve(data)})
    settings = DebuginfodSettings.from_environment({}, urls=[server.url], cache_path=tmp_path)
    result = DebuginfodClient(settings).find_debuginfo(alpha.build_id)
    assert result.path == target and target.read_bytes() == data
    assert not list(directory.glob("*.part"))  # the next downloader swept it away
