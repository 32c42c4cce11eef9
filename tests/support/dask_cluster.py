"""A real Dask cluster on 127.0.0.1: `dask scheduler` and `dask worker` processes.

    with DaskCluster(work, workers=2) as cluster:
        ... stackmark symbolize --dask-scheduler cluster.address ...
        cluster.kill_worker(0)

Workers run with one thread each, their caches under `work`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from tests.support.build import REPO
from tests.support.debuginfod_servers import LOOPBACK, free_port, server_environment

DASK = str(Path(sys.executable).parent / "dask")


class DaskCluster:
    def __init__(self, work: Path, workers: int = 2) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.address = f"tcp://{LOOPBACK}:{self.port}"
        self.env = server_environment()
        self.env["XDG_CACHE_HOME"] = str(work / "xdg")
        self.env["PYTHONPATH"] = str(REPO)
        self.env.pop("DEBUGINFOD_URLS", None)
        self.processes: list[subprocess.Popen[bytes]] = []
        try:
            self._start_all(workers)
        except BaseException:
            self.stop()
            raise

    def _start_all(self, workers: int) -> None:
        self.scheduler = self._start(
            "scheduler",
            [DASK, "scheduler", "--host", LOOPBACK, "--port", str(self.port), "--no-dashboard"],
        )
        self.workers = [
            self._start(
                f"worker{i}",
                [
                    *(DASK, "worker", self.address, "--nthreads", "1", "--no-dashboard"),
                    *("--host", LOOPBACK, "--name", f"w{i}"),
                ],
            )
            for i in range(workers)
        ]
        self.wait_for_workers(workers)

    def _start(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 - inherited by the child
        process = subprocess.Popen(
            cmd,
            env=self.env,
            cwd=self.work,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.processes.append(process)
        return process

    def wait_for_workers(self, count: int, timeout: float = 60.0) -> None:
        from distributed import Client

        stop = time.monotonic() + timeout
        with Client(self.address, timeout="30s") as client:
            while len(client.scheduler_info()["workers"]) < count:
                if time.monotonic() > stop:
                    raise RuntimeError(f"{count} Dask workers did not connect")
                time.sleep(0.2)

    def kill_worker(self, number: int) -> None:
        """SIGKILL worker `number` and its children (the nanny's worker process)."""
        os.killpg(self.workers[number].pid, signal.SIGKILL)
        self.workers[number].wait()

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def __enter__(self) -> DaskCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
