"""`stackmark symbolize` with binaries that exist only on a debuginfod server.

The oracle is `llvm-symbolizer-19 --filter-markup` with the same
DEBUGINFOD_URLS (its own download cache): `--compat=llvm19` must match it
byte for byte, and the default mode must print the same frame lines. The
misbehaving-server cases use the test's own scripted server.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.build import REPO, build_id_of, compile_program
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
from tests.support.debuginfod_servers import ElfutilsServer, Hang, ScriptedServer, Serve, Trickle


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, builds: dict[str, Build]
) -> Iterator[ElfutilsServer]:
    require_tool("debuginfod")
    work = tmp_path_factory.mktemp("debuginfod-cli")
    serve_dir = populate(work / "serve", builds)
    with ElfutilsServer(serve_dir, work, wait_for=[b.build_id for b in builds.values()]) as srv:
        yield srv


@pytest.fixture(scope="module")
def log(builds: dict[str, Build]) -> str:
    return crash_log(
        [
            LogModule(builds["alpha"], ("alpha_leaf", "alpha_caller", "main")),
            LogModule(builds["split"], ("alpha_caller", "main")),
            LogModule(builds["odd"], ("beta_measure", "main")),
            LogModule(builds["beta_stripped"], offsets=(0x1100,)),
        ]
    )


def frame_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def test_compat_matches_llvm_with_the_same_servers(
    server: ElfutilsServer, log: str, tmp_path: Path
) -> None:
    require_tool("llvm-symbolizer-19")
    empty = tmp_path / "no-debug-files"
    empty.mkdir()
    where = f"--debug-file-directory={empty}"
    theirs = llvm_filter(log, where, env=cli_environment(tmp_path / "llvm-cache", server.url))
    ours = stackmark_cli(
        "symbolize",
        "--compat=llvm19",
        where,
        stdin=log,
        env=cli_environment(tmp_path / "cache", server.url),
    )
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr
    assert "alpha_leaf" in ours.stdout and "beta_measure" in ours.stdout  # really symbolized
    # The default layout prints every frame llvm prints, the same way (and, for
    # the module with no symbols anywhere, a best-effort frame llvm leaves out).
    default = stackmark_cli(
        "symbolize", where, stdin=log, env=cli_environment(tmp_path / "cache", server.url)
    )
    assert default.returncode == 0, default.stderr
    ours_frames = iter(frame_lines(default.stdout))
    assert all(line in ours_frames for line in frame_lines(theirs.stdout))  # in order
    assert "(beta_stripped+0x10ff)" in default.stdout


def test_options_replace_the_environment(server: ElfutilsServer, log: str, tmp_path: Path) -> None:
    env = cli_environment(tmp_path / "unused", "http://127.0.0.1:9")  # nothing listens there
    ours = stackmark_cli(
        "symbolize",
        "--debug-file-directory",
        tmp_path,
        "--debuginfod-url",
        server.url,
        "--debuginfod-cache",
        tmp_path / "cache",
        stdin=log,
        env=env,
    )
    assert ours.returncode == 0, ours.stderr
    assert "alpha_caller" in ours.stdout
    assert (tmp_path / "cache" / next(iter(_ids(log)))).is_dir()
    assert not (tmp_path / "unused").exists()


def _ids(log: str) -> list[str]:
    return [line.split(":")[-1].rstrip("}") for line in log.splitlines() if "{{{module:" in line]


def test_offline_after_a_first_run(server: ElfutilsServer, log: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = stackmark_cli(
        "symbolize",
        "--debug-file-directory",
        tmp_path,
        stdin=log,
        env=cli_environment(cache, server.url),
    )
    # Offline: the same answers from the cache, and the server is never asked.
    before = server.requests("debuginfo"), server.requests("executable")
    again = stackmark_cli(
        "symbolize",
        "--offline",
        "--debug-file-directory",
        tmp_path,
        stdin=log,
        env=cli_environment(cache, server.url),
    )
    assert again.stdout == first.stdout and again.returncode == 0
    assert (server.requests("debuginfo"), server.requests("executable")) == before
    # Offline with an empty cache: best effort, and it says why.
    cold = stackmark_cli(
        "symbolize",
        "--offline",
        "--debug-file-directory",
        tmp_path,
        stdin=log,
        env=cli_environment(tmp_path / "empty-cache", server.url),
    )
    assert "alpha_leaf" not in cold.stdout
    assert "not in the download cache (offline mode)" in cold.stderr


def test_no_debuginfod_ignores_the_environment(log: str, tmp_path: Path) -> None:
    with ScriptedServer() as scripted:
        out = stackmark_cli(
            "symbolize",
            "--no-debuginfod",
            "--debug-file-directory",
            tmp_path,
            stdin=log,
            env=cli_environment(tmp_path / "cache", scripted.url),
        )
        assert scripted.requests == []
    assert "could not find build ID" in out.stderr


def test_wrong_file_from_a_server_is_not_used(builds: dict[str, Build], tmp_path: Path) -> None:
    alpha, beta = builds["alpha"], builds["odd"]
    log = crash_log([LogModule(alpha, ("alpha_leaf",))])
    with ScriptedServer() as scripted:
        scripted.set_routes(
            {
                f"/buildid/{alpha.build_id}/debuginfo": Serve(beta.executable.read_bytes()),
                f"/buildid/{alpha.build_id}/executable": Serve(beta.executable.read_bytes()),
            }
        )
        out = stackmark_cli(
            "symbolize",
            "--debug-file-directory",
            tmp_path,
            stdin=log,
            env=cli_environment(tmp_path / "cache", scripted.url),
        )
    assert "beta" not in "".join(frame_lines(out.stdout))  # no symbol of the wrong build
    assert "(alpha+0x" in out.stdout  # best effort instead
    assert f"rejected: the file has build ID {beta.build_id}, not the one asked for" in out.stderr
    assert not (tmp_path / "cache" / alpha.build_id / "debuginfo").exists()


def test_timeout_option(builds: dict[str, Build], tmp_path: Path) -> None:
    alpha = builds["alpha"]
    log = crash_log([LogModule(alpha, ("alpha_leaf",))])
    with ScriptedServer() as scripted:
        scripted.set_routes(
            {
                f"/buildid/{alpha.build_id}/debuginfo": Hang(),
                f"/buildid/{alpha.build_id}/executable": Hang(),
            }
        )
        out = stackmark_cli(
            "symbolize",
            "--debuginfod-timeout",
            "0.5",
            "--debug-file-directory",
            tmp_path,
            stdin=log,
            env=cli_environment(tmp_path / "cache", scripted.url),
            timeout=60,
        )
    assert out.returncode == 0
    assert out.stderr.count("timed out after 0.5 s") == 2  # debuginfo, then executable
    assert out.stdout.count("[crash]") == 3  # every line still there


def test_bad_settings_are_named(log: str, tmp_path: Path) -> None:
    out = stackmark_cli(
        "symbolize", stdin=log, env=cli_environment(tmp_path / "cache", "ftp://example.org")
    )
    assert out.returncode != 0
    assert "DEBUGINFOD_URLS: 'ftp://example.org' is not an http:// or https:// URL" in out.stderr
    assert "Traceback" not in out.stderr


def test_progress_is_quiet_off_a_terminal(server: ElfutilsServer, log: str, tmp_path: Path) -> None:
    """Progress lines are for terminals: a redirected stderr never sees them."""
    out = stackmark_cli(
        "symbolize",
        "--debug-file-directory",
        tmp_path,
        stdin=log,
        env=cli_environment(tmp_path / "cache", server.url),
    )
    assert "downloading" not in out.stderr and "\r" not in out.stderr


def test_server_dying_while_a_module_is_fetched(builds: dict[str, Build], tmp_path: Path) -> None:
    """The server goes away during a download: that module is reported, the rest stands."""
    alpha, split = builds["alpha"], builds["split"]
    assert split.debuginfo is not None
    log = crash_log([LogModule(alpha, ("alpha_leaf",)), LogModule(split, ("alpha_caller",))])
    scripted = ScriptedServer()
    try:
        scripted.set_routes(
            {
                f"/buildid/{alpha.build_id}/debuginfo": Serve(alpha.executable.read_bytes()),
                f"/buildid/{split.build_id}/debuginfo": Hang(),
            }
        )
        hang = f"/buildid/{split.build_id}/debuginfo"

        def kill_when_asked() -> None:
            for _ in range(600):
                if scripted.count(hang):
                    scripted.stop()
                    return
                threading.Event().wait(0.05)

        killer = threading.Thread(target=kill_when_asked)
        killer.start()
        out = stackmark_cli(
            "symbolize",
            "--debug-file-directory",
            tmp_path,
            stdin=log,
            env=cli_environment(tmp_path / "cache", scripted.url),
            timeout=120,
        )
        killer.join(timeout=60)
    finally:
        scripted.stop()
    assert "alpha_leaf" in out.stdout
    assert "(split+0x" in out.stdout
    assert 'could not find build ID for ELF module #0x1 "split"' in out.stderr
    dead = ("closed the connection", "connection reset", "connection refused")
    assert any(reason in out.stderr for reason in dead), out.stderr


def test_gsym_entries_from_downloaded_files(
    server: ElfutilsServer, builds: dict[str, Build], log: str, tmp_path: Path
) -> None:
    """`--gsym-cache build` makes GSYM entries from downloads as from local files."""
    env = cli_environment(tmp_path / "cache", server.url)
    nodebug = ("--debug-file-directory", tmp_path)
    gsym_dir = tmp_path / "gsym"
    built = stackmark_cli(
        "symbolize",
        *nodebug,
        "--gsym-cache",
        "build",
        "--gsym-cache-dir",
        gsym_dir,
        stdin=log,
        env=env,
    )
    dwarf = stackmark_cli("symbolize", *nodebug, "--gsym-cache", "off", stdin=log, env=env)
    assert built.returncode == 0, built.stderr
    assert built.stdout == dwarf.stdout
    for name in ("alpha", "split", "odd"):
        build_id = builds[name].build_id
        assert (gsym_dir / "gsym-v1" / build_id[:2] / f"{build_id[2:]}.gsym").is_file()
    stripped = builds["beta_stripped"].build_id  # no DWARF anywhere: no entry
    assert not (gsym_dir / "gsym-v1" / stripped[:2] / f"{stripped[2:]}.gsym").exists()


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    """With stderr on a terminal, a large download shows one status line, erased at the end."""
    large = compile_program("debuginfod_large", ["debuginfod_large.c"], flags=["-g", "-O1"])
    build = Build("large", build_id_of(large), large, large, large)
    log = crash_log([LogModule(build, ("large_lookup",))])
    data = large.read_bytes()
    controller, terminal = pty.openpty()
    try:
        with ScriptedServer() as scripted:
            scripted.set_routes(
                {f"/buildid/{build.build_id}/debuginfo": Trickle(data, step=1 << 18, delay=0.15)}
            )
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "stackmark",
                    "symbolize",
                    "--debug-file-directory",
                    str(tmp_path),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=terminal,
                cwd=REPO,
                env=cli_environment(tmp_path / "cache", scripted.url),
                text=True,
            )
            os.close(terminal)
            terminal = -1
            out, _ = process.communicate(log, timeout=120)
        shown = _read_all(controller)
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert "large_lookup" in out
    assert f"downloading debuginfo {build.build_id[:12]}: " in shown
    assert "of 3.0 MiB" in shown
    assert shown.endswith("\r\x1b[K")  # erased when done


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")
