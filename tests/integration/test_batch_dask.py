"""`stackmark symbolize --dask-scheduler` on a real cluster (a `dask scheduler` and two
`dask worker` processes on 127.0.0.1): outputs byte-identical to the local batch,
a worker killed mid-batch losing nothing, failures listed as the local batch lists them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.build import REPO, build_id_of, compile_program
from tests.support.dask_cluster import DaskCluster
from tests.support.debuginfod_programs import cli_environment, symbol_address


@pytest.fixture(scope="module")
def program() -> Path:
    return compile_program(
        "service_inline", ["gsym_inline.c", "gsym_inline_b.c"], flags=["-g", "-O2"]
    )


def write_logs(root: Path, program: Path, count: int, frames: int = 3) -> Path:
    """`count` logs under root/logs (one in a subdirectory), plus a binary file."""
    logs = root / "logs"
    (logs / "sub").mkdir(parents=True)
    build_id = build_id_of(program)
    start = symbol_address(program, "compute")
    for number in range(count):
        base = 0x7F0000000000 + number * 0x100000
        lines = [f"log {number}", "{{{reset}}}"]
        lines.append(f"{{{{{{module:0:{program.name}:elf:{build_id}}}}}}}")
        lines.append(f"{{{{{{mmap:{base:#x}:0x100000:load:0:rx:0x0}}}}}}")
        lines += [
            f"{{{{{{bt:{i}:{base + start + (number + i) % 200:#x}}}}}}}" for i in range(frames)
        ]
        where = logs / "sub" if number == 0 else logs
        (where / f"{number:03d}.log").write_text("\n".join(lines) + "\n")
    (logs / "core.bin").write_bytes(b"\x7fELF\0\0\0binary")
    return logs


def symbolize(
    *args: str | Path, env: dict[str, str], background: bool = False
) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "stackmark", "symbolize", *map(str, args)]
    if background:
        return subprocess.Popen(
            cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=300)


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_cluster_outputs_are_byte_identical_to_the_local_batch(
    tmp_path: Path, program: Path
) -> None:
    logs = write_logs(tmp_path, program, 12)
    env = cli_environment(tmp_path / "cache")
    sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    local = symbolize(*sources, logs, "-o", tmp_path / "local", "-j", "2", env=env)
    with DaskCluster(tmp_path / "cluster") as cluster:
        remote = symbolize(
            *sources,
            "--dask-scheduler",
            cluster.address,
            logs,
            "-o",
            tmp_path / "remote",
            env=env,
        )
    assert isinstance(local, subprocess.CompletedProcess)
    assert isinstance(remote, subprocess.CompletedProcess)
    assert remote.returncode == local.returncode == 2
    expected = tree(tmp_path / "local")
    assert len(expected) == 12
    assert tree(tmp_path / "remote") == expected
    # The failing file is listed at the end with its reason, as the local batch does.
    failure = "stackmark symbolize: 1 of 13 inputs failed:\n"
    failure += f"  {logs}/core.bin: binary data (NUL bytes), not a text log\n"
    assert local.stderr.endswith(failure)
    assert remote.stderr.endswith(failure)


def test_without_an_output_directory_outputs_follow_each_other_in_input_order(
    tmp_path: Path, program: Path
) -> None:
    logs = write_logs(tmp_path, program, 5)
    (logs / "core.bin").unlink()
    env = cli_environment(tmp_path / "cache")
    sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    local = symbolize(*sources, logs, "-j", "2", env=env)
    with DaskCluster(tmp_path / "cluster") as cluster:
        remote = symbolize(*sources, "--dask-scheduler", cluster.address, logs, env=env)
    assert isinstance(local, subprocess.CompletedProcess)
    assert isinstance(remote, subprocess.CompletedProcess)
    assert (remote.returncode, remote.stdout) == (local.returncode, local.stdout)
    assert "log 4" in remote.stdout


def test_a_worker_killed_mid_batch_loses_nothing(tmp_path: Path, program: Path) -> None:
    logs = write_logs(tmp_path, program, 40, frames=3000)
    (logs / "core.bin").unlink()
    env = cli_environment(tmp_path / "cache")
    sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    local = symbolize(*sources, logs, "-o", tmp_path / "local", "-j", "2", env=env)
    assert isinstance(local, subprocess.CompletedProcess) and local.returncode == 0
    out = tmp_path / "remote"
    with DaskCluster(tmp_path / "cluster") as cluster:
        client = symbolize(
            *sources,
            "--dask-scheduler",
            cluster.address,
            logs,
            "-o",
            out,
            env=env,
            background=True,
        )
        assert isinstance(client, subprocess.Popen)
        stop = time.monotonic() + 120
        while not any(out.rglob("*.log")) and time.monotonic() < stop:
            time.sleep(0.05)
        written_before = len(list(out.rglob("*.log")))
        cluster.kill_worker(0)
        _stdout, stderr = client.communicate(timeout=300)
    assert 0 < written_before < 40, "the worker must die in the middle of the batch"
    assert client.returncode == 0, stderr
    assert "failed" not in stderr
    assert tree(out) == tree(tmp_path / "local")  # every output whole, no .part left


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path, program: Path) -> None:
    logs = write_logs(tmp_path, program, 1)
    env = cli_environment(tmp_path / "cache")
    done = symbolize("--dask-scheduler", "tcp://127.0.0.1:9", logs, env=env)
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 2
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:9" in done.stderr
