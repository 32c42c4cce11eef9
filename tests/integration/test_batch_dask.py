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


def symbolize_bytes(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """As `symbolize`, with stdout and stderr as bytes (logs that are not UTF-8)."""
    cmd = [sys.executable, "-m", "stackmark", "symbolize", *map(str, args)]
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, timeout=300)


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


def test_a_chunk_size_without_a_scheduler_is_a_usage_error(tmp_path: Path, program: Path) -> None:
    logs = write_logs(tmp_path, program, 1)
    env = cli_environment(tmp_path / "cache")
    done = symbolize("--dask-chunk-size", "1M", logs / "sub" / "000.log", env=env)
    assert isinstance(done, subprocess.CompletedProcess)
    assert (done.returncode, done.stdout) == (2, "")
    assert "--dask-chunk-size needs --dask-scheduler" in done.stderr


# --- large logs cut into chunks ----------------------------------------------------

GONE_BUILD_ID = "deadbeef" * 5


def write_crash_log(path: Path, program: Path, reports: int, frames: int = 40) -> None:
    """A log of `reports` crash reports, each starting with `{{{reset}}}`, with what
    a cut must carry right: CRLF reports, bytes that are not UTF-8, malformed
    elements and frames in no mmap (diagnostics with line and column), a module
    whose symbols are missing (a warning and a note once per report), a module
    info line still open at the next reset, a hexdict over three lines with its
    notes, another left open at the next reset, a timestamped reset, and resets
    that are no boundary (after a coloured line, after another element)."""
    build_id = build_id_of(program).encode()
    start = symbol_address(program, "compute")
    out: list[bytes] = [b"service starting \xff\xfe\n"]
    for n in range(reports):
        eol = b"\r\n" if n % 3 == 1 else b"\n"
        base = 0x7F0000000000 + (n % 7) * 0x100000
        lines: list[bytes] = []
        if n % 8 == 7:
            lines.append(b"\x1b[31mcoloured line before a reset\x1b[0m")
        lines.append(b"[%05d.125] {{{reset}}}" % n if n % 4 == 2 else b"{{{reset}}}")
        if n % 6 == 5:
            lines.append(b"}}} after the reset")  # the previous report's hexdict was given up
        lines.append(b"{{{module:0:%s:elf:%s}}}" % (program.name.encode(), build_id))
        lines.append(b"{{{mmap:%#x:0x100000:load:0:rx:0x0}}}" % base)
        if n % 6 == 5:
            out.extend(line + eol for line in lines)
            continue  # the info line is still open at the next reset
        lines.append(b"report %d caf\xe9 \xff: signal 11" % n)
        if n % 5 == 2:
            gone = 0x7E0000000000
            lines.append(b"{{{module:1:libgone.so:elf:%s}}}" % GONE_BUILD_ID.encode())
            lines.append(b"{{{mmap:%#x:0x1000:load:1:rx:0x0}}}" % gone)
            lines.append(b"{{{bt:0:%#x}}}" % (gone + 0x10))
            lines.append(b"{{{pc:%#x}}} in libgone \xe9" % (gone + 0x20))
        if n % 5 == 3:
            lines.append(b"bad \xff {{{pc:zz}}} here")
            lines.append(b"  {{{bt:3:0x10}}} no mmap")
            lines.append(b"{{{symbol:_Z3foov}}} {{{PC:0x1}}}")
        for i in range(frames):
            lines.append(b"{{{bt:%d:%#x}}}" % (i, base + start + (n + i) % 200))
        if n % 9 == 4:
            lines.append(b"text then {{{pc:%#x}}} {{{reset}}} not a boundary" % (base + start))
        if n % 6 == 3:  # a hexdict over three lines, closed: notes after it
            lines += [b"  {{{hexdict:", b"    pc: %#x" % (base + start + 8), b"  }}}"]
        if n % 6 == 4:
            lines.append(b"  {{{hexdict:")
            lines.append(b"    pc: %#x" % (base + start + 4))
        out.extend(line + eol for line in lines)
    path.write_bytes(b"".join(out) + b"last line without a line feed \xff")


def run_both(
    log: Path, program: Path, tmp_path: Path, cluster: DaskCluster, *extra: str | Path
) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
    """`stackmark symbolize FILE` here, and the same on the cluster cut into 4 kB chunks."""
    env = cli_environment(tmp_path / "cache")
    sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    local = symbolize_bytes(*sources, log, *extra, env=env)
    remote = symbolize_bytes(
        *sources,
        *("--dask-scheduler", cluster.address, "--dask-chunk-size", "4K"),
        *(log, *extra),
        env=env,
    )
    return local, remote


def test_a_large_log_cut_into_chunks_comes_out_as_the_whole_log_does(
    tmp_path: Path, program: Path
) -> None:
    from stackmark.markup.chunks import split_log

    log = tmp_path / "crashes.log"
    write_crash_log(log, program, 60)
    data = log.read_bytes()
    chunks = split_log(data, 4000)
    assert len(chunks) >= 10  # the cluster gets many chunks
    # Some chunk starts where a hexdict was left open.
    assert any(b"{{{hexdict:" in data[c.start - 60 : c.start] for c in chunks[1:])
    assert b"\r\n" in data and b"\xff" in data
    with DaskCluster(tmp_path / "cluster") as cluster:
        local, remote = run_both(log, program, tmp_path, cluster)
        local_json, remote_json = run_both(
            log, program, tmp_path, cluster, "--output-style", "json"
        )
        # llvm 19's output depends on what came before a reset: never cut.
        local_llvm, remote_llvm = run_both(log, program, tmp_path, cluster, "--compat=llvm19")
        env = cli_environment(tmp_path / "cache")
        sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
        batch_local = symbolize_bytes(*sources, log, "-o", tmp_path / "local", env=env)
        batch_remote = symbolize_bytes(
            *sources,
            *("--dask-scheduler", cluster.address, "--dask-chunk-size", "4K"),
            *(log, "-o", tmp_path / "remote"),
            env=env,
        )
    # Diagnostics from late chunks, named by their line in the whole log.
    lines = data.split(b"\n")
    late = next(i for i in range(len(lines) - 1, 0, -1) if b"{{{pc:zz}}}" in lines[i])
    assert late > len(lines) // 2
    assert b"crashes.log:%d:13: error: expected address; found 'zz'" % (late + 1) in local.stderr
    assert b"BuildID=" + GONE_BUILD_ID.encode() in local.stderr
    assert b"\r\n" in local.stdout and b"\xff" in local.stdout
    assert (remote.returncode, remote.stdout, remote.stderr) == (
        local.returncode,
        local.stdout,
        local.stderr,
    )
    assert local.returncode == 1
    assert (remote_json.stdout, remote_json.stderr) == (local_json.stdout, local_json.stderr)
    assert b'"line": %d' % (late + 1) in local_json.stdout
    assert b"[[[reset]]]" in local_llvm.stdout
    assert (remote_llvm.stdout, remote_llvm.stderr) == (local_llvm.stdout, local_llvm.stderr)
    # With -o: the same file, written once, whole.
    assert batch_remote.stderr == batch_local.stderr
    assert tree(tmp_path / "local") == {"crashes.log": local.stdout}
    assert tree(tmp_path / "remote") == tree(tmp_path / "local")


def test_a_large_log_without_a_boundary_stays_one_task(tmp_path: Path, program: Path) -> None:
    """Its context is declared once at the top: a cut anywhere would lose it."""
    build_id = build_id_of(program)
    start = symbol_address(program, "compute")
    base = 0x7F0000000000
    lines = ["{{{reset}}}", f"{{{{{{module:0:{program.name}:elf:{build_id}}}}}}}"]
    lines.append(f"{{{{{{mmap:{base:#x}:0x100000:load:0:rx:0x0}}}}}}")
    for i in range(3000):
        lines.append(f"{{{{{{bt:{i % 50}:{base + start + i % 200:#x}}}}}}}")
        if i % 500 == 499:
            lines.append("\x1b[32mgreen\x1b[0m")
            lines.append("{{{reset}}} after a coloured line is no boundary")
            lines.append(f"{{{{{{module:0:{program.name}:elf:{build_id}}}}}}}")
            lines.append(f"{{{{{{mmap:{base:#x}:0x100000:load:0:rx:0x0}}}}}}")
    log = tmp_path / "one.log"
    log.write_text("\n".join(lines) + "\n")
    from stackmark.markup.chunks import split_log

    assert len(log.read_bytes()) > 4000 and len(split_log(log.read_bytes(), 4000)) == 1
    with DaskCluster(tmp_path / "cluster") as cluster:
        local, remote = run_both(log, program, tmp_path, cluster)
    assert b"compute" in local.stdout and local.returncode == 0
    assert (remote.returncode, remote.stdout, remote.stderr) == (
        local.returncode,
        local.stdout,
        local.stderr,
    )


def test_a_worker_killed_while_chunks_are_in_flight_loses_nothing(
    tmp_path: Path, program: Path
) -> None:
    from distributed import Client

    log = tmp_path / "big.log"
    write_crash_log(log, program, 80, frames=600)
    env = cli_environment(tmp_path / "cache")
    sources = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    local = symbolize_bytes(*sources, log, "-o", tmp_path / "local", env=env)
    assert local.returncode == 1
    out = tmp_path / "remote"
    with DaskCluster(tmp_path / "cluster") as cluster:
        cmd = [sys.executable, "-m", "stackmark", "symbolize", *sources, "-o", str(out)]
        cmd += ["--dask-scheduler", cluster.address, "--dask-chunk-size", "64K", str(log)]
        client = subprocess.Popen(
            cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        with Client(cluster.address, timeout="30s") as observer:
            victim = next(
                address
                for address, info in observer.scheduler_info()["workers"].items()
                if info["name"] == "w0"
            )
            stop = time.monotonic() + 120
            running: list[str] = []
            while not running and time.monotonic() < stop:
                running = [
                    str(key)
                    for key in observer.processing().get(victim, [])
                    if "symbolize_chunk_task" in str(key)
                ]
                time.sleep(0.05)
        assert running, "chunks must be in flight on the worker killed"
        cluster.kill_worker(0)
        _stdout, stderr = client.communicate(timeout=300)
    assert client.returncode == 1, stderr  # the log's own element errors, as locally
    assert b"failed" not in stderr
    assert stderr == local.stderr
    assert tree(out) == tree(tmp_path / "local")  # the output whole, no .part left
