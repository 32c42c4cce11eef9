"""`stackmark serve` started for real on 127.0.0.1, and a small HTTP client for it.

    with Service(work, ["--symbol-path", str(bin_dir)]) as service:
        status, headers, body = service.request("POST", "/symbolicate/v5", json_body)

The server runs as `python -m stackmark serve` with its caches (XDG_CACHE_HOME,
the debuginfod cache) under `work`, in `work/cwd`, on a port free at start.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from tests.support.build import REPO
from tests.support.debuginfod_servers import LOOPBACK, free_port, server_environment

START_SECONDS = 60.0


class Service:
    def __init__(self, work: Path, args: list[str], *, workers: int = 1) -> None:
        self.work = work
        self.port = free_port()
        self.cache = work / "xdg"
        self.cwd = work / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        env = server_environment()
        env["XDG_CACHE_HOME"] = str(self.cache)
        env["DEBUGINFOD_CACHE_PATH"] = str(self.cache / "debuginfod")
        env["HOME"] = str(work / "home")
        env.pop("DEBUGINFOD_URLS", None)
        env["PYTHONPATH"] = str(REPO)
        self.log = open(work / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "stackmark", "serve"),
                *("--port", str(self.port), "--workers", str(workers)),
                *args,
            ],
            cwd=self.cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self) -> None:
        stop = time.monotonic() + START_SECONDS
        while time.monotonic() < stop:
            if self.process.poll() is not None:
                raise RuntimeError(f"stackmark serve exited: {self.output()}")
            try:
                if self.request("GET", "/__lbheartbeat__")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"stackmark serve did not start: {self.output()}")

    def output(self) -> str:
        self.log.flush()
        return (self.work / "serve.log").read_text(errors="replace")

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | object = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60.0,
    ) -> tuple[int, dict[str, str], bytes]:
        if body is not None and not isinstance(body, bytes | str):
            body = json.dumps(body)
        connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            connection.close()

    def v5(self, payload: object, headers: dict[str, str] | None = None) -> tuple[int, object]:
        status, _headers, body = self.request("POST", "/symbolicate/v5", payload, headers)
        return status, json.loads(body)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()

    def __enter__(self) -> Service:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
