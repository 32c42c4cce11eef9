"""The debuginfod client against Debian's real `debuginfod` (elfutils) on 127.0.0.1.

The server scans a directory of programs compiled at test time; what the
client downloads is compared byte for byte with those files, and the cache
layout is checked against elfutils' own client, `debuginfod-find`.
(`llvm-debuginfod-19` in Debian 12 is built without its HTTP library and
cannot serve, so elfutils' server is the only real one here; see
test_debuginfod_llvm_server.py.)
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings, DownloadProgress
from stackmark.symbols.download_cache import source_cache_name
from tests.conftest import require_tool
from tests.support.debuginfod_programs import Build, build_programs, populate
from tests.support.debuginfod_servers import ElfutilsServer, server_environment

UNKNOWN_ID = "00" * 20


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, builds: dict[str, Build]) -> Iterator[str]:
    require_tool("debuginfod")
    work = tmp_path_factory.mktemp("debuginfod")
    serve_dir = populate(work / "serve", builds)
    with ElfutilsServer(serve_dir, work, wait_for=[b.build_id for b in builds.values()]) as srv:
        yield srv.url


def client_for(url: str, cache: Path, **options: object) -> DebuginfodClient:
    settings = DebuginfodSettings.from_environment({}, urls=[url], cache_path=cache, timeout=30)
    return DebuginfodClient(settings, **options)  # type: ignore[arg-type]


def test_unstripped_binary_is_the_debuginfo(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    result = client_for(server, tmp_path).find_module_file(alpha.build_id)
    assert result.path == tmp_path / alpha.build_id / "debuginfo"
    assert result.artifact == "debuginfo" and not result.from_cache
    assert result.path.read_bytes() == alpha.executable.read_bytes()


def test_split_debug_file_and_stripped_executable(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    split = builds["split"]
    assert split.debuginfo is not None
    client = client_for(server, tmp_path)
    debuginfo = client.find_debuginfo(split.build_id)
    executable = client.find_executable(split.build_id)
    assert debuginfo.path is not None and executable.path is not None
    assert debuginfo.path.read_bytes() == split.debuginfo.read_bytes()
    assert executable.path.read_bytes() == split.executable.read_bytes()
    with ElfFile.open(debuginfo.path) as elf:
        assert elf.has_dwarf
    with ElfFile.open(executable.path) as elf:
        assert not elf.has_dwarf
    assert client.find_module_file(split.build_id).path == debuginfo.path


def test_executable_when_the_server_has_no_debuginfo(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    beta = builds["beta_stripped"]
    result = client_for(server, tmp_path).find_module_file(beta.build_id)
    assert result.artifact == "executable"
    assert result.path is not None
    assert result.path.read_bytes() == beta.executable.read_bytes()
    assert [a.problem for a in result.attempts] == [None]  # the debuginfo 404
    # The 404 for debuginfo is remembered on disk for the next process.
    assert (tmp_path / beta.build_id / "debuginfo.missing").exists()


def test_unknown_build_id(server: str, tmp_path: Path) -> None:
    reports: list[str] = []
    client = client_for(server, tmp_path, report=reports.append)
    result = client.find_module_file(UNKNOWN_ID)
    assert result.path is None
    assert result.error == "not found on the debuginfod server"
    assert result.searched[1] == f"{server}/buildid/{UNKNOWN_ID}/debuginfo"
    assert reports == []  # "not found" is an answer, not a server problem
    again = client_for(server, tmp_path).find_module_file(UNKNOWN_ID)
    assert again.attempts == ()  # answered from the negative cache
    assert again.error is not None and "remembered" in again.error


def test_sources_for_go_to_definition(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    client = client_for(server, tmp_path)
    result = client.find_source(alpha.build_id, str(alpha.source))
    assert result.path == tmp_path / alpha.build_id / source_cache_name(str(alpha.source))
    assert result.path.read_bytes() == alpha.source.read_bytes()
    # A relative DWARF name joined with its compilation directory.
    relative = client.find_source(
        alpha.build_id, alpha.source.name, comp_dir=str(alpha.source.parent)
    )
    assert relative.path == result.path
    missing = client.find_source(alpha.build_id, "/no/such/file.c")
    assert missing.path is None and missing.error == "not found on the debuginfod server"


def test_source_path_that_needs_escaping(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    odd = builds["odd"]
    assert " " in str(odd.source) and "#" in str(odd.source) and "+" in str(odd.source)
    result = client_for(server, tmp_path).find_source(odd.build_id, str(odd.source))
    assert result.path is not None
    assert result.path.read_bytes() == odd.source.read_bytes()
    assert result.searched[1].endswith("/odd%20dir%231%2B2/beta%20copy%2B1.c")


def test_second_client_is_served_from_the_cache(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    alpha = builds["alpha"]
    assert client_for(server, tmp_path).find_module_file(alpha.build_id).path is not None
    offline = DebuginfodClient(
        DebuginfodSettings(urls=(server,), cache_path=tmp_path, offline=True)
    )
    result = offline.find_module_file(alpha.build_id)
    assert result.from_cache and result.path is not None
    assert result.path.read_bytes() == alpha.executable.read_bytes()


def test_cache_is_shared_with_elfutils_client(
    server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    """Files `debuginfod-find` downloaded are found offline, and vice versa."""
    find = require_tool("debuginfod-find")
    alpha, beta = builds["alpha"], builds["beta_stripped"]
    env = server_environment() | {"DEBUGINFOD_URLS": server, "DEBUGINFOD_CACHE_PATH": str(tmp_path)}
    theirs = subprocess.run(
        [find, "debuginfo", alpha.build_id], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    ours = DebuginfodClient(DebuginfodSettings(cache_path=tmp_path, offline=True))
    assert ours.find_debuginfo(alpha.build_id).path == Path(theirs)

    downloaded = client_for(server, tmp_path).find_executable(beta.build_id).path
    env["DEBUGINFOD_URLS"] = "http://127.0.0.1:9"  # nothing listens: only the cache can answer
    found = subprocess.run(
        [find, "executable", beta.build_id], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(found) == downloaded


def test_threads_share_one_download(server: str, builds: dict[str, Build], tmp_path: Path) -> None:
    alpha = builds["alpha"]
    finished: list[DownloadProgress] = []
    client = client_for(server, tmp_path, progress=lambda p: finished.append(p) if p.done else None)
    barrier = threading.Barrier(8)
    paths: list[Path | None] = []

    def fetch() -> None:
        barrier.wait()
        paths.append(client.find_module_file(alpha.build_id).path)

    threads = [threading.Thread(target=fetch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(paths) == 8 and len(set(paths)) == 1 and paths[0] is not None
    assert len(finished) == 1  # one download, seven waiters
    assert finished[0].received == alpha.executable.stat().st_size


def test_server_going_away(
    tmp_path_factory: pytest.TempPathFactory, builds: dict[str, Build], tmp_path: Path
) -> None:
    """What was downloaded stays usable; the rest fails once, clearly, per module."""
    work = tmp_path_factory.mktemp("debuginfod-dying")
    serve_dir = populate(work / "serve", builds)
    alpha, split = builds["alpha"], builds["split"]
    reports: list[str] = []
    with ElfutilsServer(serve_dir, work, wait_for=[alpha.build_id, split.build_id]) as srv:
        client = client_for(srv.url, tmp_path, report=reports.append)
        assert client.find_module_file(alpha.build_id).path is not None
        srv.kill()
        lost = client.find_module_file(split.build_id)
        client.find_module_file(split.build_id)
    assert lost.path is None
    assert lost.error is not None and "connection refused" in lost.error
    assert reports == [f"debuginfod: build ID {split.build_id}: {lost.error}"]
    assert client.find_module_file(alpha.build_id).path is not None
    # A refused connection is not "not found": nothing is remembered on disk.
    assert not (tmp_path / split.build_id / "debuginfo.missing").exists()
