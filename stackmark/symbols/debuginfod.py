"""A debuginfod client: files by build ID from HTTP servers, checked and cached.

The protocol (elfutils' debuginfod(8), section "WEBAPI") is plain HTTP GET:

    <server>/buildid/<hex build ID>/debuginfo     the file with DWARF
    <server>/buildid/<hex build ID>/executable    the file with the code
    <server>/buildid/<hex build ID>/source<path>  a source file; <path> is
        absolute (relative DWARF names are prefixed with the CU's
        DW_AT_comp_dir and a '/'), %-escaped except for '/'

200 means here it is, 404 means "not here" (ask the next server). Servers
are tried in the order `DEBUGINFOD_URLS` lists them.

What this client adds to the bare protocol, and why:
- every ELF download is checked: its build ID must be the one asked for
  (a confused proxy or server must not make us print wrong lines);
- files reach the cache atomically (download_cache.py), so threads and
  processes can share one cache and a kill leaves nothing half-written;
- one download per file: threads asking for the same file wait for the
  first, processes take a per-build-ID lock;
- "not found anywhere" is remembered on disk for a while
  (negative_cache.py), so a log full of frames from a missing module asks
  once, not once per frame or per process;
- problems (HTTP errors, timeouts, wrong files) are reported once per
  module through a callback and never stop the lookups of other modules.

Environment, as elfutils' client reads it: `DEBUGINFOD_URLS`,
`DEBUGINFOD_TIMEOUT`, `DEBUGINFOD_CACHE_PATH`, `DEBUGINFOD_MAXSIZE`,
`DEBUGINFOD_MAXTIME`, `DEBUGINFOD_HEADERS_FILE`; a `cache_miss_s` file in
the cache directory sets how long misses are remembered. Constructor
options override all of them.
"""

from __future__ import annotations

import errno
import http.client
import ipaddress
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from stackmark import __version__
from stackmark.elf import ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.symbols.buildid import InvalidBuildIdError, validate_build_id
from stackmark.symbols.download_cache import (
    DownloadCache,
    PartialFile,
    default_cache_root,
    source_cache_name,
)
from stackmark.symbols.negative_cache import DEFAULT_TTL_SECONDS, NegativeCache

ENV_URLS = "DEBUGINFOD_URLS"
ENV_TIMEOUT = "DEBUGINFOD_TIMEOUT"
ENV_CACHE_PATH = "DEBUGINFOD_CACHE_PATH"
ENV_MAXSIZE = "DEBUGINFOD_MAXSIZE"
ENV_MAXTIME = "DEBUGINFOD_MAXTIME"
ENV_HEADERS_FILE = "DEBUGINFOD_HEADERS_FILE"
CACHE_MISS_CONTROL_FILE = "cache_miss_s"

DEFAULT_TIMEOUT_SECONDS = 90.0
"""elfutils' default for DEBUGINFOD_TIMEOUT."""

TIMEOUT_MIN_BYTES = 100 * 1024
"""DEBUGINFOD_TIMEOUT means: a server that has not sent this much within
that many seconds is given up on (elfutils' definition)."""

CHUNK_BYTES = 64 * 1024

DEBUGINFO = "debuginfo"
EXECUTABLE = "executable"
_MODULE_FILE = "module file"  # memo key of find_module_file's answers
_NEVER_EXPIRES = float("inf")  # "remembered at" of adopted answers: always fresh


class DebuginfodConfigError(StackmarkError):
    """A debuginfod setting (environment variable or option) is unusable."""


# ---------------------------------------------------------------------------
# Settings
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DebuginfodSettings:
    """Everything the client needs to know; see `from_environment`.

    `timeout` None means no timeout; `max_size`/`max_time` None mean no limit.
    """

    urls: tuple[str, ...] = ()
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS
    cache_path: Path = field(default_factory=default_cache_root)
    offline: bool = False
    negative_ttl: float = DEFAULT_TTL_SECONDS
    max_size: int | None = None
    max_time: float | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        urls: Sequence[str] | None = None,
        timeout: float | None = None,
        cache_path: str | os.PathLike[str] | None = None,
        offline: bool = False,
        negative_ttl: float | None = None,
    ) -> DebuginfodSettings:
        """Settings from `environ` (default `os.environ`), each overridden by
        the option of the same meaning when that option is given.

        `timeout` <= 0 means no timeout (as DEBUGINFOD_TIMEOUT=0 does).
        Raises DebuginfodConfigError naming the variable or option at fault.
        """
        env = os.environ if environ is None else environ
        if urls is not None:
            url_list = parse_urls(" ".join(urls), origin="--debuginfod-url")
        else:
            url_list = parse_urls(env.get(ENV_URLS, ""), origin=ENV_URLS)

        if timeout is not None:
            seconds: float | None = timeout
        else:
            seconds = _env_number(env, ENV_TIMEOUT, DEFAULT_TIMEOUT_SECONDS)
        if seconds is not None and seconds <= 0:
            seconds = None

        if cache_path is not None:
            root = Path(cache_path)
        elif env.get(ENV_CACHE_PATH):
            root = Path(env[ENV_CACHE_PATH])
        else:
            root = default_cache_root()

        if negative_ttl is not None:
            ttl = negative_ttl
        else:
            ttl = _cache_miss_control(root)

        max_size = _env_number(env, ENV_MAXSIZE, None)
        max_time = _env_number(env, ENV_MAXTIME, None)
        headers = _read_headers_file(env[ENV_HEADERS_FILE]) if env.get(ENV_HEADERS_FILE) else ()
        return cls(
            urls=tuple(url_list),
            timeout=seconds,
            cache_path=root,
            offline=offline,
            negative_ttl=ttl,
            max_size=int(max_size) if max_size and max_size > 0 else None,
            max_time=max_time if max_time and max_time > 0 else None,
            headers=headers,
        )


def parse_urls(text: str, *, origin: str = ENV_URLS) -> list[str]:
    """Server URLs from a space-separated list, in order, without trailing '/'.

    `ima:` policy words (newer elfutils) are skipped. Anything that is not
    an http(s) URL is an error naming `origin`.
    """
    urls: list[str] = []
    for word in text.split():
        if word.startswith("ima:"):
            continue
        parsed = urllib.parse.urlsplit(word)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise DebuginfodConfigError(f"{origin}: {word!r} is not an http:// or https:// URL")
        if parsed.query or parsed.fragment:
            raise DebuginfodConfigError(f"{origin}: {word!r} has a query or fragment")
        url = word.rstrip("/")
        if url not in urls:
            urls.append(url)
    return urls


def _env_number(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise DebuginfodConfigError(f"{name}={raw!r} is not a number") from None


def _cache_miss_control(root: Path) -> float:
    """elfutils' `cache_miss_s` control file, if the cache has one."""
    try:
        raw = (root / CACHE_MISS_CONTROL_FILE).read_text(encoding="ascii").strip()
        return float(raw)
    except (OSError, ValueError, UnicodeDecodeError):
        return DEFAULT_TTL_SECONDS


def _read_headers_file(path: str) -> tuple[tuple[str, str], ...]:
    """`Name: value` lines to send with every request (DEBUGINFOD_HEADERS_FILE)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DebuginfodConfigError(f"{ENV_HEADERS_FILE}={path}: cannot read: {exc}") from None
    headers: list[tuple[str, str]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
            raise DebuginfodConfigError(
                f"{path}:{number}: expected 'Name: value', got {line.strip()!r}"
            )
        headers.append((name.strip(), value.strip()))
    return tuple(headers)


# ---------------------------------------------------------------------------
# Results and callbacks
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one server said: `problem` is None for a plain 404."""

    url: str
    problem: str | None = None
    rejected: bool = False  # the server sent a file that failed the check


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of one request: a path in the cache, or why not.

    `searched` lists the cache path and URLs consulted, for messages such
    as ModuleResolution.searched. `attempts` says what each server did.
    """

    build_id: str
    artifact: str  # "debuginfo", "executable" or "source /abs/path"
    path: Path | None
    from_cache: bool = False
    error: str | None = None
    searched: tuple[str, ...] = ()
    attempts: tuple[Attempt, ...] = ()

    @property
    def found(self) -> bool:
        return self.path is not None

    @property
    def server_problems(self) -> tuple[Attempt, ...]:
        """Attempts that failed for another reason than "not found"."""
        return tuple(a for a in self.attempts if a.problem is not None)


@dataclass(frozen=True, slots=True)
class DownloadProgress:
    """Where a download stands; `total` is None when the server did not say."""

    build_id: str
    artifact: str
    url: str
    received: int
    total: int | None
    done: bool = False


ProgressCallback = Callable[[DownloadProgress], None]
ReportCallback = Callable[[str], None]


class _NotFound(Exception):
    """The server does not have it (HTTP 404)."""


class _ServerProblem(Exception):
    """The server failed us (error status, timeout, bad or cut-short file)."""

    def __init__(self, message: str, *, rejected: bool = False):
        super().__init__(message)
        self.rejected = rejected


class _CacheProblem(Exception):
    """The cache itself cannot be written: no other server would help."""


@dataclass(frozen=True, slots=True)
class _Request:
    """One artifact to fetch: what to ask for, where to keep it, how to check it."""

    build_id: str
    artifact: str  # for messages
    url_path: str  # appended to a server URL
    cache_name: str
    check_build_id: bool


# ---------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------


class DebuginfodClient:
    """Finds files by build ID in the download cache, else on the servers.

    Thread-safe: share one client between threads. `progress` is called as
    files arrive; `report` is called once per module (build ID) with a
    one-line description of servers that failed, never more often. Front
    ends that show each failed lookup's `searched` list themselves (the
    markup filter does) set `report_failures=False`: `report` then only
    hears of servers that sent a wrong file when another had the right one.
    `executables=False` makes `find_module_file` ask for debuginfo only, as
    llvm-symbolizer does (its compatibility mode needs that).
    """

    def __init__(
        self,
        settings: DebuginfodSettings | None = None,
        *,
        progress: ProgressCallback | None = None,
        report: ReportCallback | None = None,
        report_failures: bool = True,
        executables: bool = True,
    ):
        self.settings = settings if settings is not None else DebuginfodSettings.from_environment()
        self.progress = progress
        self.report = report
        self.report_failures = report_failures
        self.executables = executables
        self.cache = DownloadCache(self.settings.cache_path)
        self._misses = NegativeCache(self.settings.urls, self.settings.negative_ttl)
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, str], threading.Event] = {}
        self._results: dict[tuple[str, str], tuple[FetchResult, float]] = {}
        self._reported_keys: set[str] = set()

    @property
    def online(self) -> bool:
        """True when servers may be asked (some are configured, not offline)."""
        return bool(self.settings.urls) and not self.settings.offline

    # -- public requests ----------------------------------------------------------

    def find_debuginfo(self, build_id: str) -> FetchResult:
        """The file with DWARF for `build_id` (a split debug file or an unstripped binary)."""
        return self._reported(self._find_elf(build_id, DEBUGINFO))

    def find_executable(self, build_id: str) -> FetchResult:
        """The file with the code for `build_id`."""
        return self._reported(self._find_elf(build_id, EXECUTABLE))

    def find_module_file(self, build_id: str) -> FetchResult:
        """The best file to symbolize `build_id` with: debuginfo, else the executable.

        Reports (once per build ID) when servers failed and nothing was found.
        """
        key = (build_id.lower(), _MODULE_FILE)
        with self._lock:
            remembered = self._results.get(key)
        if remembered is not None and self._still_good(*remembered):
            return remembered[0]
        debuginfo = self._find_elf(build_id, DEBUGINFO)
        if debuginfo.found or not self.executables:
            result = debuginfo
        else:
            executable = self._find_elf(build_id, EXECUTABLE)
            result = FetchResult(
                executable.build_id,
                executable.artifact if executable.found else DEBUGINFO,
                executable.path,
                executable.from_cache,
                None if executable.found else _combine_errors(debuginfo, executable),
                debuginfo.searched + executable.searched,
                debuginfo.attempts + executable.attempts,
            )
        with self._lock:
            self._results[key] = (result, time.monotonic())
        return self._reported(result)

    def find_source(self, build_id: str, path: str, comp_dir: str | None = None) -> FetchResult:
        """A source file of the build `build_id`, for go-to-definition without local sources.

        `path` as DWARF names it; a relative one needs the compilation
        directory `comp_dir` (the protocol wants `comp_dir + '/' + path`).
        """
        try:
            canonical = validate_build_id(build_id)
        except InvalidBuildIdError as exc:
            return FetchResult(build_id, f"source {path}", None, error=str(exc))
        if not path.startswith("/"):
            if not comp_dir:
                return FetchResult(
                    canonical,
                    f"source {path}",
                    None,
                    error=f"source path {path!r} is relative and no compilation directory is known",
                )
            path = comp_dir.rstrip("/") + "/" + path
        if "\0" in path:
            return FetchResult(canonical, "source", None, error="source path contains NUL")
        artifact = f"source {path}"
        request = _Request(
            canonical,
            artifact,
            f"/buildid/{canonical}/source" + urllib.parse.quote(path, safe="/"),
            source_cache_name(path),
            check_build_id=False,
        )
        return self._reported(self._fetch(request), key=f"{canonical} {path}")

    def prefetch(self, build_ids: Iterable[str], *, jobs: int = 4) -> dict[str, FetchResult]:
        """`find_module_file` for many build IDs at once, `jobs` downloads in parallel."""
        unique = list(dict.fromkeys(build_ids))
        if not unique:
            return {}
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(unique)))) as pool:
            return dict(zip(unique, pool.map(self.find_module_file, unique), strict=True))

    def snapshot(self) -> dict[tuple[str, str], FetchResult]:
        """Every answer this client has given, for `seed` in another process."""
        with self._lock:
            return {key: result for key, (result, _at) in self._results.items()}

    def seed(self, results: Mapping[tuple[str, str], FetchResult]) -> None:
        """Adopt the answers of another client (a batch's parent process), so
        this one gives the same file or the same error for them without
        asking any server again, and without reporting them again. Adopted
        answers do not expire: the parent decided for the whole batch."""
        with self._lock:
            for key, result in results.items():
                self._results[key] = (result, _NEVER_EXPIRES)
                self._reported_keys.add(result.build_id)

    def forget_failures(self) -> None:
        """Drop failures remembered in memory (e.g. after the settings changed)."""
        with self._lock:
            self._results = {k: v for k, v in self._results.items() if v[0].found}

    # -- one artifact: memory, single flight ------------------------------------------

    def _find_elf(self, build_id: str, kind: str) -> FetchResult:
        try:
            canonical = validate_build_id(build_id)
        except InvalidBuildIdError as exc:
            return FetchResult(build_id, kind, None, error=str(exc))
        return self._fetch(_Request(canonical, kind, f"/buildid/{canonical}/{kind}", kind, True))

    def _fetch(self, request: _Request) -> FetchResult:
        """Fetch once per process: later callers get the remembered result, and
        callers arriving during a download wait for it rather than repeat it."""
        key = (request.build_id, request.cache_name)
        while True:
            with self._lock:
                remembered = self._results.get(key)
                if remembered is not None and self._still_good(*remembered):
                    return remembered[0]
                waiter = self._inflight.get(key)
                owner = waiter is None
                if waiter is None:
                    waiter = self._inflight[key] = threading.Event()
            if owner:
                break
            waiter.wait()
        try:
            result = self._fetch_uncached(request)
            with self._lock:
                self._results[key] = (result, time.monotonic())
            return result
        finally:
            with self._lock:
                del self._inflight[key]
            waiter.set()

    def _still_good(self, result: FetchResult, at: float) -> bool:
        if result.path is not None:
            return result.path.exists()  # `cache prune` may have removed it
        return time.monotonic() - at < max(self.settings.negative_ttl, 1.0)

    # -- one artifact: cache, then servers --------------------------------------------

    def _fetch_uncached(self, request: _Request) -> FetchResult:
        target = self.cache.artifact_path(request.build_id, request.cache_name)
        searched = [str(target)]

        def result(
            path: Path | None,
            *,
            from_cache: bool = False,
            error: str | None = None,
            attempts: Sequence[Attempt] = (),
        ) -> FetchResult:
            return FetchResult(
                request.build_id,
                request.artifact,
                path,
                from_cache,
                error,
                tuple(searched),
                tuple(attempts),
            )

        if self._cached_file_ok(target, request):
            return result(target, from_cache=True)
        if self.settings.offline:
            return result(None, error="not in the download cache (offline mode)")
        if not self.settings.urls:
            return result(None, error="not in the download cache and no debuginfod server is set")
        miss = self._misses.lookup(target)
        if miss is not None:
            return result(None, error=f"{miss.reason} (remembered)")
        try:
            with self.cache.locked(request.build_id):
                # Another process may have fetched it, or given up, while we waited.
                if self._cached_file_ok(target, request):
                    return result(target, from_cache=True)
                miss = self._misses.lookup(target)
                if miss is not None:
                    return result(None, error=f"{miss.reason} (remembered)")
                attempts: list[Attempt] = []
                for server in self.settings.urls:
                    url = server + request.url_path
                    searched.append(url)
                    try:
                        path = self._download(url, target, request)
                    except _NotFound:
                        attempts.append(Attempt(url))
                        continue
                    except _ServerProblem as problem:
                        attempts.append(Attempt(url, str(problem), problem.rejected))
                        continue
                    self._misses.forget(target)
                    return result(path, attempts=attempts)
                if all(a.problem is None for a in attempts):
                    reason = f"not found on {_servers(len(attempts))}"
                    self._misses.remember(target, reason)
                    return result(None, error=reason, attempts=attempts)
                return result(None, error=_describe_attempts(attempts), attempts=attempts)
        except (OSError, _CacheProblem) as exc:
            return result(None, error=f"cannot write the download cache {self.cache.root}: {exc}")

    def _cached_file_ok(self, target: Path, request: _Request) -> bool:
        """A complete file is cached and (for ELF) has the right build ID.

        A cached ELF file with another build ID (tampered with, or written by
        a client that does not check) is removed so it is fetched again.
        """
        if not self.cache.present(target):
            return False
        if request.check_build_id and _build_id_problem(target, request.build_id) is not None:
            self.cache.remove(target)
            return False
        self.cache.touch(target)
        return True

    # -- one download -------------------------------------------------------------

    def _download(self, url: str, target: Path, request: _Request) -> Path:
        """GET `url` into the cache as `target`; raises _NotFound or _ServerProblem."""
        headers = {"User-Agent": f"stackmark/{__version__}", "Accept-Encoding": "identity"}
        headers.update(self.settings.headers)
        http_request = urllib.request.Request(url, headers=headers)
        timeout = self.settings.timeout
        try:
            response = _opener_for(url).open(http_request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 404:
                raise _NotFound from None
            raise _ServerProblem(f"HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            raise _ServerProblem(_describe_network_error(exc.reason, timeout)) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _ServerProblem(_describe_network_error(exc, timeout)) from None
        with response:
            total = _content_length(response.headers.get("Content-Length"))
            announced = (
                total
                if total is not None
                else _content_length(response.headers.get("X-DEBUGINFOD-SIZE"))
            )
            limit = self.settings.max_size
            if limit is not None and announced is not None and announced > limit:
                raise _ServerProblem(f"file is {announced} bytes, over DEBUGINFOD_MAXSIZE={limit}")
            try:
                part = PartialFile(target)
            except OSError as exc:
                raise _CacheProblem(exc.strerror or str(exc)) from None
            with part:
                received = self._receive(response, part, url, request, announced)
                if total is not None and received != total:
                    raise _ServerProblem(
                        f"transfer cut short: {received} of {total} bytes received"
                    )
                try:
                    finished = part.finish()
                except OSError as exc:
                    raise _CacheProblem(exc.strerror or str(exc)) from None
                if request.check_build_id:
                    problem = _build_id_problem(finished, request.build_id)
                    if problem is not None:
                        raise _ServerProblem(f"rejected: {problem}", rejected=True)
                try:
                    return part.commit()
                except OSError as exc:
                    raise _CacheProblem(exc.strerror or str(exc)) from None

    def _receive(
        self,
        response: http.client.HTTPResponse,
        part: PartialFile,
        url: str,
        request: _Request,
        announced: int | None,
    ) -> int:
        """Copy the body into `part`, enforcing the timeout rules; bytes received."""
        timeout = self.settings.timeout
        max_time = self.settings.max_time
        limit = self.settings.max_size
        started = time.monotonic()
        received = 0
        self._progress(request, url, 0, announced, done=False)
        while True:
            try:
                chunk = response.read1(CHUNK_BYTES)
            except (OSError, http.client.HTTPException) as exc:
                raise _ServerProblem(
                    f"transfer failed after {received} bytes: "
                    + _describe_network_error(exc, timeout)
                ) from None
            if not chunk:
                break
            try:
                part.write(chunk)
            except OSError as exc:
                raise _CacheProblem(exc.strerror or str(exc)) from None
            received += len(chunk)
            elapsed = time.monotonic() - started
            if timeout is not None and received < TIMEOUT_MIN_BYTES and elapsed > timeout:
                raise _ServerProblem(
                    f"timed out: only {received} bytes in {_seconds(timeout)} "
                    f"(DEBUGINFOD_TIMEOUT wants {TIMEOUT_MIN_BYTES // 1024} KiB by then)"
                )
            if max_time is not None and elapsed > max_time:
                raise _ServerProblem(f"download took over DEBUGINFOD_MAXTIME={_seconds(max_time)}")
            if limit is not None and received > limit:
                raise _ServerProblem(f"file exceeds DEBUGINFOD_MAXSIZE={limit} bytes")
            self._progress(request, url, received, announced, done=False)
        self._progress(request, url, received, announced, done=True)
        return received

    def _progress(
        self, request: _Request, url: str, received: int, total: int | None, *, done: bool
    ) -> None:
        if self.progress is not None:
            self.progress(
                DownloadProgress(request.build_id, request.artifact, url, received, total, done)
            )

    # -- reporting ----------------------------------------------------------------

    def _reported(self, result: FetchResult, key: str | None = None) -> FetchResult:
        """Tell `report` about server problems behind `result`, once per `key`
        (the build ID unless given), and return `result`.

        Nothing found: every failure that was not a plain "not found".
        Found: only servers that sent a wrong file, which deserve a word even
        when another server had the right one.
        """
        if self.report is None:
            return result
        if result.found:
            problems = [a for a in result.attempts if a.rejected]
            detail = _describe_attempts(problems)
        elif self.report_failures:
            problems = list(result.server_problems)
            detail = result.error or _describe_attempts(problems)
        else:
            return result
        if problems:
            if result.artifact.startswith("source"):
                subject = f"{result.artifact} (build ID {result.build_id})"
            else:
                subject = f"build ID {result.build_id}"
            self._report_once(key or result.build_id, f"debuginfod: {subject}: {detail}")
        return result

    def _report_once(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._reported_keys:
                return
            self._reported_keys.add(key)
        if self.report is not None:
            self.report(message)


# ---------------------------------------------------------------------------
# The symbol store's last resort
# ---------------------------------------------------------------------------


def store_step(
    client: DebuginfodClient,
) -> Callable[[str, bool, list[str]], Iterator[tuple[str, str]]]:
    """A `SymbolStore` last resort asking `client`: the debuginfo file, and
    the executable too when nothing local has the code (`want_code`).
    What the servers said is noted in `searched`, one entry per server."""

    def step(build_id: str, want_code: bool, searched: list[str]) -> Iterator[tuple[str, str]]:
        result = client.find_module_file(build_id) if want_code else client.find_debuginfo(build_id)
        if result.path is not None:
            yield str(result.path), f"debuginfod {result.artifact}"
            return
        if result.attempts:
            searched.extend(f"{a.url}: {a.problem or 'not found'}" for a in result.attempts)
        else:
            searched.append(f"debuginfod: {result.error}")

    return step


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _build_id_problem(path: Path, build_id: str) -> str | None:
    """Why the ELF file at `path` is not the build `build_id`, or None if it is."""
    try:
        with ElfFile.open(path) as elf:
            found = elf.build_id
    except FormatError as exc:
        return f"not a readable ELF file ({exc.reason})"
    if found is None:
        return "the file has no build ID"
    if found != build_id:
        return f"the file has build ID {found}, not the one asked for"
    return None


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
_direct_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _opener_for(url: str) -> urllib.request.OpenerDirector:
    """Loopback servers are always reached directly; others honour *_proxy variables."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in _LOOPBACK_NAMES:
        return _direct_opener
    try:
        if ipaddress.ip_address(host).is_loopback:
            return _direct_opener
    except ValueError:
        pass
    return urllib.request.build_opener()


def _content_length(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _describe_network_error(reason: object, timeout: float | None) -> str:
    """One short phrase for a connection or transfer failure."""
    if isinstance(reason, TimeoutError):
        return f"timed out after {_seconds(timeout)}" if timeout else "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return f"cannot resolve host name ({reason.strerror})"
    if isinstance(reason, ConnectionResetError):
        return "connection reset by the server"
    if isinstance(reason, http.client.IncompleteRead):
        return "the server closed the connection mid-transfer"
    if isinstance(reason, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(reason, OSError) and reason.errno is not None:
        return reason.strerror or errno.errorcode.get(reason.errno, str(reason))
    return str(reason) or type(reason).__name__


def _seconds(value: float | None) -> str:
    if value is None:
        return "no limit"
    return f"{value:g} s"


def _servers(count: int) -> str:
    return "the debuginfod server" if count == 1 else f"any of {count} debuginfod servers"


def _describe_attempts(attempts: Sequence[Attempt]) -> str:
    return "; ".join(f"{a.url}: {a.problem or 'not found'}" for a in attempts)


def _combine_errors(debuginfo: FetchResult, executable: FetchResult) -> str:
    """One message for a module for which neither file could be had."""
    if not debuginfo.attempts and not executable.attempts:
        return executable.error or debuginfo.error or "not found"
    if not debuginfo.server_problems and not executable.server_problems:
        count = len({a.url.split("/buildid/")[0] for a in debuginfo.attempts + executable.attempts})
        return f"not found on {_servers(count)}"
    return _describe_attempts(debuginfo.attempts + executable.attempts)
