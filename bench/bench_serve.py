"""Load test of `stackmark serve` on 127.0.0.1, beside a local run of the same work.

A bounded loop: REQUESTS Symbolication API v5 requests (one job, FRAMES frames
in a program compiled here, inline chains included), CONCURRENCY of them in
flight at once from an asyncio client (one connection per request). Every
answer is compared with the answer the core gives in this process for the
same request (the local run, timed too), so a lost or wrong answer counts.
Reported per worker count: throughput, p50/p95/p99 latency, the service's
resident memory (every process of it) after the run. Then, with two workers,
one worker is killed (SIGKILL) in the middle of a run: the requests it had
in flight fail (the connection drops: a client sees no answer, a proxy in
front would answer 502), every other answer must be right, and uvicorn
starts a new worker.

    .venv/bin/python bench/bench_serve.py [--requests N] [--concurrency C]

Prints Markdown (docs/benchmarks.md keeps the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from stackmark.markup.naming import NameOptions  # noqa: E402
from stackmark.markup.stream import make_naming  # noqa: E402
from stackmark.service.symbolication_v5 import V5Limits, parse_request, symbolicate  # noqa: E402
from stackmark.symbols.deadline import Background, Deadline  # noqa: E402
from stackmark.symbols.debug_id import debug_id_from_build_id  # noqa: E402
from stackmark.symbols.debug_id_modules import DebugIdModules  # noqa: E402
from stackmark.symbols.setup import SymbolSettings, build_symbolizer  # noqa: E402
from tests.support.build import build_id_of, compile_program  # noqa: E402
from tests.support.debuginfod_servers import free_port, server_environment  # noqa: E402
from tests.support.symbolizer_oracle import line_table_addresses  # noqa: E402

FRAMES = 40


def requests_for(program: Path, count: int) -> list[bytes]:
    """`count` request bodies, each FRAMES addresses from the program's line table."""
    addresses = line_table_addresses(program)
    debug_id = debug_id_from_build_id(build_id_of(program))
    bodies = []
    for number in range(count):
        frames = [[0, addresses[(number * 7 + i) % len(addresses)]] for i in range(FRAMES)]
        payload = {"jobs": [{"memoryMap": [[program.name, debug_id]], "stacks": [frames]}]}
        bodies.append(json.dumps(payload).encode())
    return bodies


def local_answers(program: Path, bodies: list[bytes], cache: Path) -> tuple[list[bytes], float]:
    """The core's answers in this process, and the seconds they took (warm: after one)."""
    settings = SymbolSettings(
        symbol_paths=[str(program.parent)], gsym_cache="build", gsym_cache_dir=str(cache)
    )
    modules = DebugIdModules(build_symbolizer(settings))
    naming = make_naming(NameOptions())
    background = Background()

    def answer(body: bytes) -> bytes:
        jobs = parse_request(json.loads(body), V5Limits())
        result = symbolicate(jobs, modules, naming, background, Deadline(60))
        return json.dumps(result, separators=(",", ":")).encode()

    answer(bodies[0])
    start = time.perf_counter()
    answers = [answer(body) for body in bodies]
    return answers, time.perf_counter() - start


async def post(port: int, body: bytes) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = (
            f"POST /symbolicate/v5 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        status_line = await reader.readline()
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        data = await reader.readexactly(length)
        return int(status_line.split()[1]), data
    finally:
        writer.close()


async def load(
    port: int, bodies: list[bytes], expected: list[bytes], concurrency: int, on_half=None
) -> dict[str, object]:
    """Send every body, `concurrency` at a time; count right, wrong and failed answers."""
    limit = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    outcome = {"right": 0, "wrong": 0, "5xx": 0, "dropped": 0}
    done = 0

    async def one(index: int) -> None:
        nonlocal done
        async with limit:
            started = time.perf_counter()
            try:
                status, data = await asyncio.wait_for(post(port, bodies[index]), 120)
            except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError, IndexError):
                outcome["dropped"] += 1
            else:
                if status >= 500:
                    outcome["5xx"] += 1
                elif status == 200 and json.loads(data) == json.loads(expected[index]):
                    outcome["right"] += 1
                    latencies.append(time.perf_counter() - started)
                else:
                    outcome["wrong"] += 1
            done += 1
            if on_half is not None and done == len(bodies) // 3:
                on_half()

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(len(bodies))))
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        **outcome,
        "seconds": elapsed,
        "throughput": outcome["right"] / elapsed,
        "p50": pct(0.50),
        "p95": pct(0.95),
        "p99": pct(0.99),
        "mean": statistics.mean(latencies) * 1000,
    }


def rss_mib(root: int) -> float:
    """Resident memory of `root` and all its descendants."""
    total = 0
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total / 1024


def worker_pids(root: int) -> list[int]:
    """uvicorn's worker processes under `root` (multiprocessing's spawned children)."""
    children: list[int] = []
    for task in Path(f"/proc/{root}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    workers = []
    for pid in children:
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                workers.append(pid)
        except OSError:
            continue
    return workers


def start_service(program: Path, workers: int, work: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = server_environment()
    env["XDG_CACHE_HOME"] = str(work / "xdg")
    env["PYTHONPATH"] = str(REPO)
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "stackmark", "serve", "--port", str(port)),
            *("--workers", str(workers), "--symbol-path", str(program.parent)),
            "--no-debuginfod",
        ],
        env=env,
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    import http.client

    for _ in range(600):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/__lbheartbeat__")
            if connection.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.1)
    return process, port


def stop_service(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=200)
    options = parser.parse_args()
    program = compile_program(
        "service_inline", ["gsym_inline.c", "gsym_inline_b.c"], flags=["-g", "-O2"]
    )
    bodies = requests_for(program, options.requests)
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as temp:
        work = Path(temp)
        expected, local_seconds = local_answers(program, bodies, work / "xdg" / "stackmark")
        print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared with other work)\n")
        print(
            f"{options.requests} v5 requests of {FRAMES} frames, "
            f"{options.concurrency} in flight at once\n"
        )
        print("| run | right | wrong | failed | req/s | p50 ms | p95 ms | p99 ms | RSS MiB |")
        print("|---|---|---|---|---|---|---|---|---|")
        print(
            f"| local, in process (no HTTP) | {len(bodies)} | 0 | 0 | "
            f"{len(bodies) / local_seconds:.0f} | {local_seconds / len(bodies) * 1000:.2f} "
            "(mean) | | | |"
        )
        for workers in (1, 2):
            process, port = start_service(program, workers, work)
            try:
                asyncio.run(load(port, bodies[:50], expected[:50], 10))  # warm each worker
                result = asyncio.run(load(port, bodies, expected, options.concurrency))
                memory = rss_mib(process.pid)
            finally:
                stop_service(process)
            failed = result["5xx"] + result["dropped"]  # type: ignore[operator]
            print(
                f"| serve, {workers} worker{'s' if workers > 1 else ''} | {result['right']} | "
                f"{result['wrong']} | {failed} | {result['throughput']:.0f} | "
                f"{result['p50']:.0f} | {result['p95']:.0f} | {result['p99']:.0f} | {memory:.0f} |"
            )
        process, port = start_service(program, 2, work)
        killed: list[int] = []

        def kill_one() -> None:
            victim = worker_pids(process.pid)[0]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

        try:
            asyncio.run(load(port, bodies[:50], expected[:50], 10))
            before = worker_pids(process.pid)
            result = asyncio.run(
                load(port, bodies, expected, options.concurrency, on_half=kill_one)
            )
            time.sleep(2)
            after = worker_pids(process.pid)
        finally:
            stop_service(process)
        print(
            f"| serve, 2 workers, one killed mid-run | {result['right']} | {result['wrong']} | "
            f"{result['5xx']} 5xx + {result['dropped']} dropped | {result['throughput']:.0f} | "
            f"{result['p50']:.0f} | {result['p95']:.0f} | {result['p99']:.0f} | |"
        )
        print(
            f"\nkilled worker {killed[0]}; workers after the run: {len(after)} "
            f"(uvicorn started {len([p for p in after if p not in before])} in its place)"
        )
        return 0 if result["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
