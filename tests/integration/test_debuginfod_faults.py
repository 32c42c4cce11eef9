"""The debuginfod client against a server that misbehaves on purpose.

A small HTTP server of the test's own, on 127.0.0.1, answers each URL as
scripted: the wrong file, an error status, a hang, a body cut short, a
trickle. The client must reject or give up cleanly, leave nothing
half-written in the cache, and say what happened once per module.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.symbols.debuginfod import (
    DebuginfodClient,
    DebuginfodSettings,
    DownloadProgress,
)
from tests.support.debuginfod_programs import Build, build_programs
from tests.support.debuginfod_servers import (
    Hang,
    ScriptedServer,
    Serve,
    Status,
    Trickle,
    Truncate,
)


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def make_client(
    urls: list[str], cache: Path, *, timeout: float = 10, **options: object
) -> DebuginfodClient:
    settings = DebuginfodSettings.from_environment({}, urls=urls, cache_path=cache, timeout=timeout)
    return DebuginfodClient(settings, **options)  # type: ignore[arg-type]


def debuginfo(build_id: str) -> str:
    return f"/buildid/{build_id}/debuginfo"


def executable(build_id: str) -> str:
    return f"/buildid/{build_id}/executable"


def leftovers(cache: Path) -> list[str]:
    """Anything in the cache that is neither bookkeeping nor a finished file."""
    return sorted(
        p.name for p in cache.rglob("*") if p.name.endswith(".part") or p.name.endswith(".tmp")
    )


def test_wrong_file_is_rejected(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha, beta = builds["alpha"], builds["beta_stripped"]
    wrong = beta.executable.read_bytes()
    server.set_routes(
        {debuginfo(alpha.build_id): Serve(wrong), executable(alpha.build_id): Serve(wrong)}
    )
    reports: list[str] = []
    client = make_client([server.url], tmp_path, report=reports.append)
    result = client.find_module_file(alpha.build_id)
    assert result.path is None
    assert all(a.rejected for a in result.attempts) and len(result.attempts) == 2
    assert f"the file has build ID {beta.build_id}, not the one asked for" in (result.error or "")
    assert len(reports) == 1 and alpha.build_id in reports[0]
    assert not (tmp_path / alpha.build_id / "debuginfo").exists()
    assert not (tmp_path / alpha.build_id / "executable").exists()
    assert leftovers(tmp_path) == []
    # A wrong file is a server problem, not "not found": it is not remembered on disk.
    assert not (tmp_path / alpha.build_id / "debuginfo.missing").exists()


def test_not_elf_is_rejected(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    server.set_routes({debuginfo(alpha.build_id): Serve(b"<html>proxy login</html>")})
    result = make_client([server.url], tmp_path).find_debuginfo(alpha.build_id)
    assert result.path is None
    assert "rejected: not a readable ELF file" in (result.error or "")


def test_next_server_after_a_wrong_file(builds: dict[str, Build], tmp_path: Path) -> None:
    alpha, beta = builds["alpha"], builds["beta_stripped"]
    with ScriptedServer() as bad, ScriptedServer() as good:
        bad.set_routes({debuginfo(alpha.build_id): Serve(beta.executable.read_bytes())})
        good.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes())})
        reports: list[str] = []
        client = make_client([bad.url, good.url], tmp_path, report=reports.append)
        result = client.find_module_file(alpha.build_id)
    assert result.path is not None
    assert result.path.read_bytes() == alpha.executable.read_bytes()
    # Even though the second server had it, the bad one is worth a word.
    assert len(reports) == 1 and bad.url in reports[0] and "rejected" in reports[0]


def test_servers_are_tried_in_order(builds: dict[str, Build], tmp_path: Path) -> None:
    alpha = builds["alpha"]
    with ScriptedServer() as first, ScriptedServer() as second:
        second.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes())})
        result = make_client([first.url, second.url], tmp_path).find_module_file(alpha.build_id)
        assert first.requests == [debuginfo(alpha.build_id)]
        assert second.requests == [debuginfo(alpha.build_id)]
    assert result.path is not None and [a.problem for a in result.attempts] == [None]


def test_server_error_is_reported_once_and_not_remembered(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    server.set_routes(
        {debuginfo(alpha.build_id): Status(500), executable(alpha.build_id): Status(503)}
    )
    reports: list[str] = []
    client = make_client([server.url], tmp_path, report=reports.append)
    first = client.find_module_file(alpha.build_id)
    second = client.find_module_file(alpha.build_id)
    assert first.path is None and second == first
    assert "HTTP 500 Internal Server Error" in (first.error or "")
    assert "HTTP 503 Service Unavailable" in (first.error or "")
    assert reports == [f"debuginfod: build ID {alpha.build_id}: {first.error}"]
    assert server.count(debuginfo(alpha.build_id)) == 1  # the process remembers
    # Another process asks again: a server error may be over by then.
    make_client([server.url], tmp_path).find_module_file(alpha.build_id)
    assert server.count(debuginfo(alpha.build_id)) == 2


def test_hanging_server_times_out(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    server.set_routes({debuginfo(alpha.build_id): Hang(), executable(alpha.build_id): Hang()})
    result = make_client([server.url], tmp_path, timeout=0.5).find_module_file(alpha.build_id)
    assert result.path is None
    assert result.error is not None and result.error.count("timed out after 0.5 s") == 2


def test_trickling_server_times_out(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    """DEBUGINFOD_TIMEOUT: 100 KiB within the timeout, however steadily bytes arrive."""
    alpha = builds["alpha"]
    data = alpha.executable.read_bytes()
    server.set_routes({debuginfo(alpha.build_id): Trickle(data, step=64, delay=0.1)})
    result = make_client([server.url], tmp_path, timeout=0.5).find_debuginfo(alpha.build_id)
    assert result.path is None
    assert "timed out: only" in (result.error or "")
    assert leftovers(tmp_path) == []


def test_truncated_body_is_not_kept(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    data = alpha.executable.read_bytes()
    server.set_routes({debuginfo(alpha.build_id): Truncate(data, keep=len(data) // 2)})
    result = make_client([server.url], tmp_path).find_debuginfo(alpha.build_id)
    assert result.path is None
    assert f"{len(data) // 2} of {len(data)} bytes" in (result.error or "")
    assert not (tmp_path / alpha.build_id / "debuginfo").exists()
    assert leftovers(tmp_path) == []


def test_size_limit(server: ScriptedServer, builds: dict[str, Build], tmp_path: Path) -> None:
    alpha = builds["alpha"]
    server.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes())})
    settings = DebuginfodSettings.from_environment(
        {"DEBUGINFOD_URLS": server.url, "DEBUGINFOD_MAXSIZE": "1000"}, cache_path=tmp_path
    )
    result = DebuginfodClient(settings).find_debuginfo(alpha.build_id)
    assert result.path is None and "over DEBUGINFOD_MAXSIZE=1000" in (result.error or "")


def test_not_found_is_remembered_across_clients(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    for _ in range(3):
        assert make_client([server.url], tmp_path).find_module_file(alpha.build_id).path is None
    assert server.count(debuginfo(alpha.build_id)) == 1
    assert server.count(executable(alpha.build_id)) == 1
    # Once the miss has expired, the server is asked again and its new file used.
    marker = tmp_path / alpha.build_id / "debuginfo.missing"
    record = json.loads(marker.read_text())
    record["time"] -= 3600
    marker.write_text(json.dumps(record))
    server.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes())})
    result = make_client([server.url], tmp_path).find_module_file(alpha.build_id)
    assert result.path is not None and not marker.exists()
    # Adding a server makes the old misses irrelevant.
    with ScriptedServer() as other:
        make_client([server.url, other.url], tmp_path).find_executable(alpha.build_id)
        assert other.count(executable(alpha.build_id)) == 1


def test_progress_reports_every_chunk(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    data = alpha.executable.read_bytes()
    server.set_routes({debuginfo(alpha.build_id): Trickle(data, step=4096, delay=0.05)})
    events: list[DownloadProgress] = []
    make_client([server.url], tmp_path, progress=events.append).find_debuginfo(alpha.build_id)
    received = [e.received for e in events]
    assert received == sorted(received) and received[0] == 0 and len(events) > 3
    assert events[-1].done and events[-1].received == events[-1].total == len(data)
    assert all(e.artifact == "debuginfo" and e.build_id == alpha.build_id for e in events)


def test_concurrent_threads_one_request(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    server.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes(), delay=0.3)})
    client = make_client([server.url], tmp_path)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(client.find_debuginfo(alpha.build_id)))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == 6 and all(r.path is not None for r in results)
    assert server.count(debuginfo(alpha.build_id)) == 1


def test_corrupt_cached_file_is_fetched_again(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha, beta = builds["alpha"], builds["beta_stripped"]
    cached = tmp_path / alpha.build_id / "debuginfo"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(beta.executable.read_bytes())  # e.g. left by a client that does not check
    server.set_routes({debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes())})
    result = make_client([server.url], tmp_path).find_debuginfo(alpha.build_id)
    assert result.path == cached and not result.from_cache
    assert cached.read_bytes() == alpha.executable.read_bytes()


def test_seeded_results_are_answered_without_asking(
    server: ScriptedServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    """A batch's workers adopt what the parent found, including its failures."""
    alpha, split = builds["alpha"], builds["split"]
    server.set_routes(
        {
            debuginfo(alpha.build_id): Serve(alpha.executable.read_bytes()),
            debuginfo(split.build_id): Status(500),
            executable(split.build_id): Status(500),
        }
    )
    parent = make_client([server.url], tmp_path)
    parent.prefetch([alpha.build_id, split.build_id])
    asked = list(server.requests)
    reports: list[str] = []
    # Even with misses forgotten at once, adopted answers hold for the batch.
    settings = DebuginfodSettings.from_environment(
        {}, urls=[server.url], cache_path=tmp_path, negative_ttl=0
    )
    worker = DebuginfodClient(settings, report=reports.append)
    worker.seed(parent.snapshot())
    time.sleep(1.1)  # longer than any in-memory TTL of failures
    assert worker.find_module_file(alpha.build_id) == parent.find_module_file(alpha.build_id)
    assert worker.find_module_file(split.build_id) == parent.find_module_file(split.build_id)
    assert worker.find_debuginfo(alpha.build_id) == parent.find_debuginfo(alpha.build_id)
    assert server.requests == asked and reports == []
