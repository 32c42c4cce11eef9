"""The client against LLVM's own server, `llvm-debuginfod-19`, where it serves.

Debian 12's llvm-19 is built without LLVM's HTTP library: started as it
would serve (`llvm-debuginfod-19 -i 127.0.0.1 -p PORT -t 1 DIR`), it prints
`no httplib` and exits with status 1 before it binds a port. While that is
its answer, the test is an expected failure that says so (anything else it
does, such as a crash, fails the test); a build that can serve gets the same
checks as elfutils' server (tests/integration/test_debuginfod_elfutils.py):
the client's downloads equal the served files, and `stackmark symbolize`
prints the frames llvm-symbolizer-19 prints with the same DEBUGINFOD_URLS.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings
from tests.conftest import require_tool
from tests.support.debuginfod_programs import (
    Build,
    LogModule,
    build_programs,
    cli_environment,
    crash_log,
    llvm_filter,
    populate,
    stackmark_cli,
)
from tests.support.debuginfod_servers import LOOPBACK, free_port, http_status, server_environment

NO_HTTPLIB = "no httplib"


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture(scope="module")
def llvm_server(
    tmp_path_factory: pytest.TempPathFactory, builds: dict[str, Build]
) -> Iterator[str]:
    binary = require_tool("llvm-debuginfod-19")
    work = tmp_path_factory.mktemp("llvm-debuginfod")
    serve_dir = populate(work / "serve", builds)
    port = free_port()
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [binary, "-i", LOOPBACK, "-p", str(port), "-t", "1", str(serve_dir)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_environment(),
        )
    url = f"http://{LOOPBACK}:{port}"
    try:
        deadline = time.monotonic() + 60
        pending = [b.build_id for b in builds.values()]
        while pending and time.monotonic() < deadline:
            if process.poll() is not None:
                break
            pending = [b for b in pending if http_status(f"{url}/buildid/{b}/executable") != 200]
            time.sleep(0.1)
        output = log_path.read_text(errors="replace")
        if process.poll() is not None:
            if process.returncode == 1 and output.strip() == NO_HTTPLIB:
                pytest.xfail(f"llvm-debuginfod-19 cannot serve: it says {NO_HTTPLIB!r}")
            pytest.fail(f"llvm-debuginfod-19 exited with {process.returncode}:\n{output}")
        if pending:
            pytest.fail(f"llvm-debuginfod-19 did not serve {pending} within 60 s:\n{output}")
        yield url
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_downloads_equal_the_served_files(
    llvm_server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    settings = DebuginfodSettings.from_environment(
        {}, urls=[llvm_server], cache_path=tmp_path, timeout=30
    )
    client = DebuginfodClient(settings)
    alpha = builds["alpha"]
    result = client.find_module_file(alpha.build_id)
    assert result.path is not None, result.error
    assert result.path.read_bytes() == alpha.executable.read_bytes()
    split = builds["split"]
    assert split.debuginfo is not None
    debuginfo = client.find_debuginfo(split.build_id)
    assert debuginfo.path is not None
    assert debuginfo.path.read_bytes() == split.debuginfo.read_bytes()
    assert client.find_module_file("00" * 20).path is None


def test_symbolize_prints_what_llvm_prints(
    llvm_server: str, builds: dict[str, Build], tmp_path: Path
) -> None:
    require_tool("llvm-symbolizer-19")
    log = crash_log(
        [
            LogModule(builds["alpha"], ("alpha_leaf", "alpha_caller", "main")),
            LogModule(builds["split"], ("alpha_caller", "main")),
        ]
    )
    empty = tmp_path / "no-debug-files"
    empty.mkdir()
    where = f"--debug-file-directory={empty}"
    theirs = llvm_filter(log, where, env=cli_environment(tmp_path / "llvm-cache", llvm_server))
    ours = stackmark_cli(
        "symbolize",
        "--compat=llvm19",
        where,
        stdin=log,
        env=cli_environment(tmp_path / "cache", llvm_server),
    )
    assert "alpha_leaf" in ours.stdout
    assert ours.stdout == theirs.stdout
