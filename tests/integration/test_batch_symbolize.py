"""`stackmark symbolize` over many logs: directories, -o DIR, both cores, bad files.

Every batch output is compared with `stackmark symbolize FILE` run on that
file alone (itself checked against llvm in test_debuginfod_symbolize.py).
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

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.support.build import REPO
from tests.support.debuginfod_programs import (
    Build,
    LogModule,
    build_programs,
    cli_environment,
    crash_log,
    populate,
    stackmark_cli,
)
from tests.support.debuginfod_servers import ElfutilsServer, Hang, ScriptedServer, Serve


@pytest.fixture(scope="module")
def builds() -> dict[str, Build]:
    return build_programs()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, builds: dict[str, Build]
) -> Iterator[ElfutilsServer]:
    require_tool("debuginfod")
    work = tmp_path_factory.mktemp("debuginfod-batch")
    serve_dir = populate(work / "serve", builds)
    with ElfutilsServer(serve_dir, work, wait_for=[b.build_id for b in builds.values()]) as srv:
        yield srv


def write_logs(root: Path, builds: dict[str, Build], count: int = 6) -> list[Path]:
    """`count` logs over the server's builds (and one missing module), some in a subdirectory."""
    mixes = [
        [LogModule(builds["alpha"], ("alpha_leaf", "main"))],
        [LogModule(builds["split"], ("alpha_caller",)), LogModule(None, offsets=(0x1000,))],
        [LogModule(builds["odd"], ("beta_measure",)), LogModule(builds["alpha"], ("main",))],
    ]
    paths = []
    for i in range(count):
        path = root / ("nested" if i % 3 == 2 else "") / f"crash-{i}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(crash_log(mixes[i % len(mixes)], title=f"crash {i}"))
        paths.append(path)
    return paths


def alone(
    path: Path, env: dict[str, str], *options: str | Path
) -> subprocess.CompletedProcess[str]:
    return stackmark_cli("symbolize", *options, path, env=env)


def test_directory_to_output_dir(
    server: ElfutilsServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    paths = write_logs(logs, builds)
    env = cli_environment(tmp_path / "cache", server.url)
    nodebug = ("--debug-file-directory", tmp_path)
    out = stackmark_cli("symbolize", *nodebug, "-j", "2", logs, "-o", tmp_path / "out", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    produced = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out").rglob("*.log"))
    assert produced == sorted(p.relative_to(logs) for p in paths)
    for path in paths:
        single = alone(path, env, *nodebug)
        assert (tmp_path / "out" / path.relative_to(logs)).read_text() == single.stdout
    assert "alpha_leaf" in (tmp_path / "out" / "crash-0.log").read_text()


def test_many_files_to_stdout_in_input_order(
    server: ElfutilsServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    paths = write_logs(tmp_path / "logs", builds)
    order = [paths[4], paths[0], paths[2], paths[1]]
    env = cli_environment(tmp_path / "cache", server.url)
    nodebug = ("--debug-file-directory", tmp_path)
    out = stackmark_cli("symbolize", *nodebug, "-j", "2", *order, env=env)
    # Each alone with a cold cache, as the batch had (a warm one words its notes differently).
    singles = [
        alone(p, cli_environment(tmp_path / f"cache-{i}", server.url), *nodebug)
        for i, p in enumerate(order)
    ]
    assert out.stdout == "".join(s.stdout for s in singles)
    # Diagnostics come file by file, in the same order (warnings for the missing module).
    assert out.stderr == "".join(s.stderr for s in singles)


def test_bad_files_are_skipped_and_listed(
    server: ElfutilsServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    paths = write_logs(logs, builds, count=3)
    (logs / "core.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00binary\x00data")
    os.mkfifo(logs / "a-fifo")
    env = cli_environment(tmp_path / "cache", server.url)
    out = stackmark_cli(
        "symbolize",
        "--debug-file-directory",
        tmp_path,
        logs,
        tmp_path / "nowhere.log",
        "-o",
        tmp_path / "out",
        env=env,
    )
    assert out.returncode == 2
    summary = out.stderr[out.stderr.index("stackmark symbolize: 2 of 5 inputs failed:") :]
    assert summary.splitlines()[1:] == [
        f"  {logs / 'core.gz'}: binary data (NUL bytes), not a text log",
        f"  {tmp_path / 'nowhere.log'}: no such file or directory",
    ]
    for path in paths:  # the good files are all there, complete
        assert (tmp_path / "out" / path.relative_to(logs)).read_text().endswith("done\n")
    assert not (tmp_path / "out" / "core.gz").exists()
    assert not list((tmp_path / "out").rglob("*.part"))


def test_outputs_never_overwrite_inputs_or_each_other(
    builds: dict[str, Build], tmp_path: Path
) -> None:
    first = tmp_path / "a" / "same.log"
    second = tmp_path / "b" / "same.log"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(crash_log([LogModule(None, offsets=(0x10,))]))
    env = cli_environment(tmp_path / "cache")
    out = stackmark_cli("symbolize", first, second, "-o", tmp_path / "a", env=env)
    assert out.returncode == 2
    assert f"its output {tmp_path / 'a' / 'same.log'} is one of the inputs" in out.stderr
    assert f"already the output of {second}" not in out.stderr
    assert first.read_text().startswith("[crash] service started\n{{{reset}}}")  # untouched


def test_each_build_id_is_resolved_once_per_batch(builds: dict[str, Build], tmp_path: Path) -> None:
    alpha = builds["alpha"]
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(8):
        log = crash_log([LogModule(alpha, ("alpha_leaf",)), LogModule(None, offsets=(0x20,))])
        (logs / f"{i}.log").write_text(log)
    missing = "ab" * 20
    with ScriptedServer() as scripted:
        scripted.set_routes(
            {f"/buildid/{alpha.build_id}/debuginfo": Serve(alpha.executable.read_bytes())}
        )
        out = stackmark_cli(
            "symbolize",
            "--debug-file-directory",
            tmp_path,
            "-j",
            "2",
            logs,
            "-o",
            tmp_path / "out",
            env=cli_environment(tmp_path / "cache", scripted.url),
        )
        assert out.returncode == 0, out.stderr
        assert sorted(scripted.requests) == sorted(
            [
                f"/buildid/{alpha.build_id}/debuginfo",
                f"/buildid/{missing}/debuginfo",
                f"/buildid/{missing}/executable",
            ]
        )
    assert all("alpha_leaf" in p.read_text() for p in (tmp_path / "out").iterdir())


def test_server_killed_mid_batch(builds: dict[str, Build], tmp_path: Path) -> None:
    """The server dies while the batch fetches: downloaded modules are used, the
    lost one is reported once for the whole batch, every file still comes out."""
    alpha, split = builds["alpha"], builds["split"]
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(6):
        modules = [LogModule(alpha, ("alpha_leaf",)), LogModule(split, ("alpha_caller",))]
        (logs / f"{i}.log").write_text(crash_log(modules))
    scripted = ScriptedServer()
    hang = f"/buildid/{split.build_id}/debuginfo"
    scripted.set_routes(
        {f"/buildid/{alpha.build_id}/debuginfo": Serve(alpha.executable.read_bytes()), hang: Hang()}
    )

    alpha_cached = tmp_path / "cache" / alpha.build_id / "debuginfo"

    def kill_when_asked() -> None:
        # The fetches run in parallel: stop once the hanging one is pending and
        # alpha's download is complete (the cache renames a finished file in).
        for _ in range(1200):
            if scripted.count(hang) and alpha_cached.exists():
                scripted.stop()
                return
            threading.Event().wait(0.05)

    killer = threading.Thread(target=kill_when_asked)
    killer.start()
    try:
        out = stackmark_cli(
            "symbolize",
            "--debug-file-directory",
            tmp_path,
            logs,
            "-o",
            tmp_path / "out",
            env=cli_environment(tmp_path / "cache", scripted.url),
            timeout=120,
        )
    finally:
        killer.join(timeout=70)
        scripted.stop()
    reports = [line for line in out.stderr.splitlines() if line.startswith("stackmark: ")]
    assert len(reports) == 1 and split.build_id in reports[0], out.stderr
    outputs = sorted((tmp_path / "out").iterdir())
    assert len(outputs) == 6
    for path in outputs:
        text = path.read_text()
        assert "alpha_leaf" in text and "(split+0x" in text
    with ElfFile.open(tmp_path / "cache" / alpha.build_id / "debuginfo") as elf:
        assert elf.build_id == alpha.build_id
    assert not (tmp_path / "cache" / split.build_id / "debuginfo").exists()


def test_two_batches_fill_one_cache(
    server: ElfutilsServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, builds)
    env = cli_environment(tmp_path / "cache", server.url)
    before = server.requests("debuginfo")
    command = [
        sys.executable,
        "-m",
        "stackmark",
        "symbolize",
        "--debug-file-directory",
        str(tmp_path),
        "-j",
        "2",
        str(logs),
        "-o",
    ]
    runs = [
        subprocess.Popen(
            [*command, str(tmp_path / name)],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("out1", "out2")
    ]
    for process in runs:
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    for path in (tmp_path / "out1").rglob("*.log"):
        assert (
            path.read_text()
            == (tmp_path / "out2" / path.relative_to(tmp_path / "out1")).read_text()
        )
    downloads = [p for p in (tmp_path / "cache").rglob("debuginfo")]
    assert len(downloads) == 3  # alpha, split, odd
    for path in downloads:
        with ElfFile.open(path) as elf:
            assert elf.build_id == path.parent.name
    # Each file was downloaded once, whichever batch got the lock first
    # (the missing module's 404 was asked by at most both).
    assert server.requests("debuginfo") - before <= 3 + 2
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.name.endswith((".part", ".tmp"))]


def test_batch_builds_gsym_entries_once_before_the_workers(
    server: ElfutilsServer, builds: dict[str, Build], tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    write_logs(logs, builds)
    env = cli_environment(tmp_path / "cache", server.url)
    nodebug = ("--debug-file-directory", tmp_path)
    gsym = ("--gsym-cache", "build", "--gsym-cache-dir", tmp_path / "gsym")
    out = stackmark_cli("symbolize", *nodebug, *gsym, logs, "-o", tmp_path / "out", env=env)
    assert out.returncode == 0, out.stderr
    entries = sorted(p.name for p in (tmp_path / "gsym").rglob("*.gsym"))
    assert entries == sorted(f"{builds[n].build_id[2:]}.gsym" for n in ("alpha", "split", "odd"))
    reference = stackmark_cli(
        "symbolize", *nodebug, "--gsym-cache", "off", logs, "-o", tmp_path / "dwarf", env=env
    )
    assert reference.returncode == 0, reference.stderr
    for path in (tmp_path / "dwarf").rglob("*.log"):
        assert (
            tmp_path / "out" / path.relative_to(tmp_path / "dwarf")
        ).read_text() == path.read_text()


def test_usage_errors(tmp_path: Path) -> None:
    env = cli_environment(tmp_path / "cache")
    no_inputs = stackmark_cli("symbolize", "-o", tmp_path / "out", env=env)
    assert no_inputs.returncode == 2
    assert "--output-dir needs input files" in no_inputs.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x\n")
    not_a_dir = stackmark_cli("symbolize", a_file, "-o", a_file, env=env)
    assert not_a_dir.returncode == 2
    assert f"{a_file} is not a directory" in not_a_dir.stderr
    assert a_file.read_text() == "x\n"
    with_stdin = stackmark_cli("symbolize", "-", a_file, a_file, env=env, stdin="y\n")
    assert with_stdin.returncode == 2 and "stdin (-) cannot be one of many" in with_stdin.stderr


def test_progress_on_a_terminal(builds: dict[str, Build], tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(3):
        (logs / f"{i}.log").write_text(crash_log([LogModule(builds["alpha"], ("main",))]))
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "stackmark",
                "symbolize",
                "--obj",
                str(builds["alpha"].executable),
                str(logs),
                "-o",
                str(tmp_path / "out"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            cwd=REPO,
            env=cli_environment(tmp_path / "cache"),
        )
        os.close(terminal)
        terminal = -1
        process.communicate(timeout=120)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert process.returncode == 0
    assert b"\r\x1b[Ksymbolizing: 3 of 3 files" in shown
    assert shown.endswith(b"\r\x1b[K")
