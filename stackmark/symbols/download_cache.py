"""The on-disk cache of files downloaded from debuginfod servers.

Layout (the one elfutils' client uses, so a cache directory can be shared
with gdb, systemd-coredump and `debuginfod-find` through
`DEBUGINFOD_CACHE_PATH`):

    <root>/<build-id>/debuginfo
    <root>/<build-id>/executable
    <root>/<build-id>/source##usr##include##stdio.h   ('/' -> '##', '#' -> '#_')

plus stackmark's own bookkeeping, which other clients ignore:

    <root>/<build-id>/.lock                  one downloader per build ID at a time
    <root>/<build-id>/.<name>.XXXX.part      a download in progress (never trusted)
    <root>/<build-id>/<name>.missing         a remembered miss (negative_cache.py)

Why it is safe to share between threads and processes: a file only ever
appears under its final name by `rename` after it was completely written,
fsync'ed and checked, so a reader sees either nothing or a whole file, and
a process killed mid-download leaves only a `.part` file, which nothing
reads and the next downloader of that build ID removes. The lock only
avoids downloading the same file twice; losing it (e.g. to `cache clear`)
costs a duplicate download, never a corrupt file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from stackmark.symbols.buildid import is_valid_build_id, validate_build_id
from stackmark.symbols.negative_cache import MISS_SUFFIX

LOCK_NAME = ".lock"
PART_SUFFIX = ".part"
STALE_PART_SECONDS = 3600.0
"""A `.part` file this old belongs to a dead process (prune removes it)."""
STALE_MISS_SECONDS = 86400.0
"""Remembered misses older than this are dropped by prune (any TTL is shorter)."""

MAX_NAME_BYTES = 240
"""Longer escaped source names are replaced by a hash (NAME_MAX is 255)."""


def default_cache_root() -> Path:
    """`$XDG_CACHE_HOME/stackmark/debuginfod`, else `~/.cache/stackmark/debuginfod`.

    (`DEBUGINFOD_CACHE_PATH`, when set, wins; see DebuginfodSettings.)
    """
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "stackmark" / "debuginfod"


def source_cache_name(source_path: str) -> str:
    """The cache file name of a source file, as elfutils names it."""
    escaped = source_path.replace("#", "#_").replace("/", "##")
    name = "source" + escaped
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        digest = hashlib.sha256(source_path.encode("utf-8", "surrogateescape")).hexdigest()
        name = "source-" + digest
    return name


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One downloaded file in the cache."""

    path: Path
    build_id: str
    size: int
    last_used: float  # UNIX time of the last download or hit


class PartialFile:
    """A download in progress, written beside its target under a temporary name.

    Use as a context manager: `write` the bytes, `finish()` to flush them to
    disk (and get the temporary path to check), then `commit()` to rename it
    into place. Leaving the block without `commit()` deletes it.
    """

    def __init__(self, target: Path):
        self.target = target
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name[:100]}.", suffix=PART_SUFFIX, dir=target.parent
        )
        self.path = Path(name)
        self._file = os.fdopen(fd, "wb", buffering=0)  # chunks are large already
        self.size = 0
        self._committed = False

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def finish(self) -> Path:
        """Flush everything to stable storage; the file is complete from here on."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return self.path

    def commit(self) -> Path:
        """Move the finished file to its final name (atomically) and return that."""
        if not self._file.closed:
            self.finish()
        os.replace(self.path, self.target)
        self._committed = True
        _fsync_directory(self.target.parent)
        return self.target

    def discard(self) -> None:
        if not self._file.closed:
            self._file.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def __enter__(self) -> PartialFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._committed:
            self.discard()


class DownloadCache:
    """Files downloaded for build IDs, under `root` (created on first write)."""

    def __init__(self, root: Path):
        self.root = root

    # -- where things are ----------------------------------------------------

    def directory(self, build_id: str) -> Path:
        return self.root / validate_build_id(build_id)

    def artifact_path(self, build_id: str, name: str) -> Path:
        """`<root>/<build-id>/<name>`; `name` is "debuginfo", "executable" or a
        `source_cache_name`, never a path."""
        if not name or "/" in name or "\0" in name or name in (".", ".."):
            raise ValueError(f"not a cache file name: {name!r}")
        return self.directory(build_id) / name

    # -- reading ---------------------------------------------------------------

    def present(self, path: Path) -> bool:
        """True when a complete (non-empty) file is at `path`.

        Empty files are what elfutils' client leaves for a failed query;
        they are not downloads.
        """
        try:
            st = path.stat()
        except OSError:
            return False
        return st.st_size > 0 and path.is_file()

    def touch(self, path: Path) -> None:
        """Record a use of `path` (its access time drives `prune`)."""
        with contextlib.suppress(OSError):
            st = path.stat()
            os.utime(path, (time.time(), st.st_mtime))

    def remove(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            path.unlink()

    # -- writing -----------------------------------------------------------------

    def prepare(self, build_id: str) -> Path:
        """Create the build ID's directory (mode 0700, like elfutils)."""
        directory = self.directory(build_id)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        return directory

    @contextlib.contextmanager
    def locked(self, build_id: str) -> Iterator[None]:
        """Hold the build ID's download lock (threads and processes alike).

        flock locks belong to an open file description, so two threads that
        each open the lock file exclude each other too. A process killed
        while holding it releases it with its file descriptors.
        """
        directory = self.prepare(build_id)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._remove_leftover_parts(directory)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _remove_leftover_parts(self, directory: Path) -> None:
        """Delete `.part` files: while we hold the lock, nobody else is writing
        one here, so any found were left by a killed process."""
        with contextlib.suppress(OSError):
            for child in directory.iterdir():
                if child.name.endswith(PART_SUFFIX):
                    self.remove(child)

    # -- housekeeping (`stackmark cache`) -------------------------------------------

    def build_id_directories(self) -> list[Path]:
        """Directories under root named like build IDs (nothing else is ever touched)."""
        try:
            children = list(self.root.iterdir())
        except OSError:
            return []
        return sorted(c for c in children if c.is_dir() and is_valid_build_id(c.name))

    def entries(self) -> list[CacheEntry]:
        """Every downloaded file, least recently used first."""
        found: list[CacheEntry] = []
        for directory in self.build_id_directories():
            for child in _files_in(directory):
                if _is_bookkeeping(child.name):
                    continue
                try:
                    st = child.stat()
                except OSError:
                    continue
                if st.st_size == 0:
                    continue
                found.append(
                    CacheEntry(child, directory.name, st.st_size, max(st.st_atime, st.st_mtime))
                )
        found.sort(key=lambda e: e.last_used)
        return found

    def prune(self, max_bytes: int, *, now: float | None = None) -> list[CacheEntry]:
        """Delete least recently used files until the total is at most `max_bytes`.

        Also drops stale `.part` files and build-ID directories left empty.
        Returns what was deleted.
        """
        current = time.time() if now is None else now
        removed: list[CacheEntry] = []
        entries = self.entries()
        total = sum(e.size for e in entries)
        for entry in entries:
            if total <= max_bytes:
                break
            self.remove(entry.path)
            total -= entry.size
            removed.append(entry)
        for directory in self.build_id_directories():
            for child in _files_in(directory):
                with contextlib.suppress(OSError):
                    age = current - child.stat().st_mtime
                    if (child.name.endswith(PART_SUFFIX) and age > STALE_PART_SECONDS) or (
                        child.name.endswith(MISS_SUFFIX) and age > STALE_MISS_SECONDS
                    ):
                        self.remove(child)
            self._remove_if_empty(directory)
        return removed

    def clear(self) -> list[CacheEntry]:
        """Delete every download and remembered miss; returns the downloads deleted."""
        removed = self.entries()
        for directory in self.build_id_directories():
            shutil.rmtree(directory, ignore_errors=True)
        return removed

    def _remove_if_empty(self, directory: Path) -> None:
        """Remove a build ID's directory when nothing but its lock file is left."""
        children = _files_in(directory)
        if all(c.name == LOCK_NAME for c in children):
            for child in children:
                self.remove(child)
            with contextlib.suppress(OSError):
                directory.rmdir()


def _files_in(directory: Path) -> list[Path]:
    try:
        return [c for c in directory.iterdir() if not c.is_dir()]
    except OSError:
        return []


def _is_bookkeeping(name: str) -> bool:
    """Locks, partial files and temporaries are hidden; misses end in `.missing`."""
    return name.startswith(".") or name.endswith(MISS_SUFFIX)


def _fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable (so a crash cannot undo it)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
