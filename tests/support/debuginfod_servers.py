"""debuginfod servers for tests, all on 127.0.0.1.

- `ElfutilsServer`: Debian's real `debuginfod` (elfutils) scanning a
  directory of programs compiled at test time.
- `ScriptedServer`: a tiny HTTP server of our own that answers each path
  the way a test wants a bad server to: a wrong file, an error status, a
  hang, a body cut short, a slow trickle.

Both are context managers that always stop what they started, with
timeouts, so a failing test leaves no server behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

LOOPBACK = "127.0.0.1"
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A TCP port free on loopback right now (the server binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def http_status(url: str, timeout: float = 5.0) -> int:
    """The status a GET of `url` gets (0 when nothing answers)."""
    try:
        with _direct.open(url, timeout=timeout) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)
    except OSError:
        return 0


def server_environment() -> dict[str, str]:
    """The environment for a server or client subprocess: no proxies, no
    inherited debuginfod settings (a server with DEBUGINFOD_URLS would
    forward misses to them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy"):
        env.pop(name, None)
    return env


# ---------------------------------------------------------------------------
# elfutils debuginfod
# ---------------------------------------------------------------------------


class ElfutilsServer:
    """`debuginfod -F` over `serve_dir`, ready once it serves `wait_for` build IDs.

    Note: elfutils 0.188 has no option to bind one interface; it listens on
    all of them, but the tests only ever talk to it on 127.0.0.1.
    """

    def __init__(
        self,
        serve_dir: Path,
        work_dir: Path,
        wait_for: Iterable[str] = (),
        extra_args: Iterable[str] = (),
    ):
        self.serve_dir = serve_dir
        self.work_dir = work_dir
        self.wait_for = list(wait_for)
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log_path = work_dir / "debuginfod.log"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, ready_timeout: float = 90.0) -> ElfutilsServer:
        binary = shutil.which("debuginfod")
        if binary is None:
            raise RuntimeError("debuginfod is not installed; `make test` installs it")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        last_failure = ""
        for _attempt in range(3):  # another process may grab the free port first
            self.port = free_port()
            database = self.work_dir / f"index-{self.port}.sqlite"
            with open(self.log_path, "wb") as log:
                # -F: scan ELF files; -t 0 -g 0: no rescans or grooming; -c 1: one scanner.
                options = ["-p", str(self.port), "-F", "-d", str(database), "-t", "0", "-g", "0"]
                self.process = subprocess.Popen(
                    [binary, *options, "-c", "1", *self.extra_args, str(self.serve_dir)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=server_environment(),
                    cwd=self.work_dir,
                )
            if self._wait_ready(ready_timeout):
                return self
            last_failure = self.log_path.read_text(errors="replace")[-2000:]
            self.stop()
        raise RuntimeError(f"debuginfod did not become ready:\n{last_failure}")

    def _wait_ready(self, timeout: float) -> bool:
        """Poll /metrics for `ready 1`, then each build ID until it is served."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        pending = list(self.wait_for)
        metrics_ready = False
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if not metrics_ready:
                metrics_ready = _metric_ready(self.url)
            if metrics_ready:
                pending = [
                    b
                    for b in pending
                    if http_status(f"{self.url}/buildid/{b}/executable") != 200
                    and http_status(f"{self.url}/buildid/{b}/debuginfo") != 200
                ]
                if not pending:
                    return True
            time.sleep(0.05)
        return False

    def requests(self, kind: str) -> int:
        """How many `kind` ("debuginfo", "executable", "source") requests it has had."""
        with _direct.open(f"{self.url}/metrics", timeout=5) as response:
            text = response.read().decode("utf-8", "replace")
        prefix = f'http_requests_total{{type="{kind}"}} '
        for line in text.splitlines():
            if line.startswith(prefix):
                return int(float(line[len(prefix) :]))
        return 0

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def kill(self) -> None:
        """Kill it outright, as a crashing server would go."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def __enter__(self) -> ElfutilsServer:
        return self.start() if self.process is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _metric_ready(url: str) -> bool:
    try:
        with _direct.open(f"{url}/metrics", timeout=5) as response:
            text = response.read().decode("utf-8", "replace")
    except OSError:
        return False
    return any(line.strip() == "ready 1" for line in text.splitlines())


# ---------------------------------------------------------------------------
# A scripted server: bad behaviour on demand
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Serve:
    """200 with `data` (optionally `delay` seconds before answering)."""

    data: bytes
    delay: float = 0.0


@dataclass(frozen=True)
class Status:
    """An error status with a short text body."""

    code: int


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (until the server stops)."""


@dataclass(frozen=True)
class Truncate:
    """Announce all of `data` in Content-Length, send `keep` bytes, close."""

    data: bytes
    keep: int


@dataclass(frozen=True)
class Trickle:
    """Send `data` in `step`-byte pieces, `delay` seconds apart."""

    data: bytes
    step: int
    delay: float


@dataclass(frozen=True)
class StallAfter:
    """Announce all of `data`, send `keep` bytes, then hang (until stopped)."""

    data: bytes
    keep: int


Behaviour = Serve | Status | Hang | Truncate | Trickle | StallAfter


@dataclass
class ScriptedServer:
    """An HTTP/1.0 server on 127.0.0.1 answering `routes[path]`; 404 otherwise.

    `requests` records every path asked for, in order.
    """

    routes: dict[str, Behaviour] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((LOOPBACK, 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for p in self.requests if p == path)

    def set_routes(self, routes: Mapping[str, Behaviour]) -> None:
        with self._lock:
            self.routes = dict(routes)

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output clean

            def do_GET(self) -> None:
                with owner._lock:
                    owner.requests.append(self.path)
                    behaviour = owner.routes.get(self.path)
                with contextlib.suppress(OSError):
                    owner._answer(self, behaviour)

        return Handler

    def _answer(self, handler: BaseHTTPRequestHandler, behaviour: Behaviour | None) -> None:
        if behaviour is None:
            self._send(handler, 404, b"not found")
        elif isinstance(behaviour, Serve):
            if behaviour.delay:
                self._stopping.wait(behaviour.delay)
            self._send(handler, 200, behaviour.data)
        elif isinstance(behaviour, Status):
            self._send(handler, behaviour.code, b"scripted failure")
        elif isinstance(behaviour, Hang):
            self._stopping.wait(60)
        elif isinstance(behaviour, Truncate | StallAfter):
            self._headers(handler, 200, len(behaviour.data))
            handler.wfile.write(behaviour.data[: behaviour.keep])
            handler.wfile.flush()
            if isinstance(behaviour, StallAfter):
                self._stopping.wait(60)
            handler.close_connection = True
        elif isinstance(behaviour, Trickle):
            self._headers(handler, 200, len(behaviour.data))
            for at in range(0, len(behaviour.data), behaviour.step):
                if self._stopping.is_set():
                    return
                handler.wfile.write(behaviour.data[at : at + behaviour.step])
                handler.wfile.flush()
                self._stopping.wait(behaviour.delay)

    @staticmethod
    def _headers(handler: BaseHTTPRequestHandler, code: int, length: int) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(length))
        handler.end_headers()

    def _send(self, handler: BaseHTTPRequestHandler, code: int, body: bytes) -> None:
        self._headers(handler, code, len(body))
        handler.wfile.write(body)
