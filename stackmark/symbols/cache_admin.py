"""Looking after stackmark's two on-disk caches as one: what `stackmark cache` runs.

- downloads: files fetched from debuginfod servers (download_cache.py);
- GSYM: one GSYM file and its extras per build ID (cache.py).

Both grow without bound as new builds come along, so they share one size
budget: `prune` deletes whatever was used least recently, of either kind,
until the total fits. A GSYM entry (GSYM + extras) goes as a pair, under
the entry's build lock so that no builder is writing it at that moment
(an entry being built is skipped). A download may be deleted while a
process has it open: the process keeps reading it, the next one fetches
it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from stackmark.symbols.buildid import is_valid_build_id
from stackmark.symbols.cache import LAYOUT, VERIFIED_SUFFIX, GsymCache
from stackmark.symbols.download_cache import DownloadCache
from stackmark.symbols.negative_cache import MISS_SUFFIX

DOWNLOADS = "downloads"
GSYM = "gsym"


@dataclass(frozen=True, slots=True)
class CacheItem:
    """One unit that is kept or deleted as a whole: a download, or a GSYM pair."""

    kind: str  # DOWNLOADS or GSYM
    build_id: str
    paths: tuple[Path, ...]
    size: int
    last_used: float


@dataclass(frozen=True, slots=True)
class CacheSummary:
    """How much a cache holds."""

    kind: str
    root: Path
    items: int
    build_ids: int
    size: int
    misses: int = 0  # remembered "not found" answers (downloads only)


class Caches:
    """The download cache at `downloads` and the GSYM cache under `gsym_root`."""

    def __init__(self, downloads: Path, gsym_root: Path):
        self.downloads = DownloadCache(downloads)
        self.gsym = GsymCache(gsym_root)

    @property
    def gsym_directory(self) -> Path:
        return self.gsym.root / LAYOUT

    # -- listing ----------------------------------------------------------------

    def items(self) -> list[CacheItem]:
        """Everything in both caches, least recently used first."""
        found = [
            CacheItem(DOWNLOADS, e.build_id, (e.path,), e.size, e.last_used)
            for e in self.downloads.entries()
        ]
        found.extend(self._gsym_items())
        found.sort(key=lambda i: i.last_used)
        return found

    def _gsym_items(self) -> Iterator[CacheItem]:
        try:
            shards = sorted(self.gsym_directory.iterdir())
        except OSError:
            return
        for shard in shards:
            if not shard.is_dir() or not re.fullmatch(r"[0-9a-f]{2}", shard.name):
                continue
            for gsym in sorted(shard.glob("*.gsym")):
                build_id = shard.name + gsym.stem
                if not is_valid_build_id(build_id):
                    continue
                gsym_path, extras_path, _lock = self.gsym.entry_paths(build_id)
                paths = tuple(p for p in (gsym_path, extras_path) if p.exists())
                size = 0
                last_used = 0.0
                for path in paths:
                    with contextlib.suppress(OSError):
                        st = path.stat()
                        size += st.st_size
                        last_used = max(last_used, st.st_atime, st.st_mtime)
                yield CacheItem(GSYM, build_id, paths, size, last_used)

    def summaries(self) -> list[CacheSummary]:
        items = self.items()
        downloads = [i for i in items if i.kind == DOWNLOADS]
        gsyms = [i for i in items if i.kind == GSYM]
        misses = sum(
            1
            for directory in self.downloads.build_id_directories()
            for child in directory.glob("*" + MISS_SUFFIX)
        )
        return [
            CacheSummary(
                DOWNLOADS,
                self.downloads.root,
                len(downloads),
                len({i.build_id for i in downloads}),
                sum(i.size for i in downloads),
                misses,
            ),
            CacheSummary(
                GSYM,
                self.gsym_directory,
                len(gsyms),
                len({i.build_id for i in gsyms}),
                sum(i.size for i in gsyms),
            ),
        ]

    # -- deleting ---------------------------------------------------------------

    def prune(self, max_bytes: int) -> list[CacheItem]:
        """Delete least recently used items until both caches together hold at
        most `max_bytes`; returns what was deleted."""
        items = self.items()
        total = sum(i.size for i in items)
        removed: list[CacheItem] = []
        for item in items:
            if total <= max_bytes:
                break
            if self._remove(item):
                total -= item.size
                removed.append(item)
        # Leftovers of killed downloads, old misses, emptied directories.
        self.downloads.prune(max_bytes=1 << 62)
        return removed

    def clear(self, kinds: tuple[str, ...] = (DOWNLOADS, GSYM)) -> list[CacheItem]:
        """Delete every item of the given kinds (and the remembered misses)."""
        removed: list[CacheItem] = []
        if GSYM in kinds:
            removed += [i for i in self._gsym_items() if self._remove(i)]
        if DOWNLOADS in kinds:
            removed += [
                CacheItem(DOWNLOADS, e.build_id, (e.path,), e.size, e.last_used)
                for e in self.downloads.clear()
            ]
        return removed

    def _remove(self, item: CacheItem) -> bool:
        if item.kind == DOWNLOADS:
            for path in item.paths:
                self.downloads.remove(path)
            return True
        return self._remove_gsym(item)

    def _remove_gsym(self, item: CacheItem) -> bool:
        """Delete a GSYM pair under its build lock; False if a builder holds it."""
        gsym_path, extras_path, lock_path = self.gsym.entry_paths(item.build_id)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # being built right now: leave it
            # The GSYM first: without it the pair is not an entry, whatever the extras.
            verified_path = gsym_path.with_suffix(VERIFIED_SUFFIX)
            for path in (gsym_path, extras_path, verified_path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        finally:
            os.close(fd)  # the lock file stays: a builder may be waiting on it
        return True


_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """Bytes in `text`: a number with an optional suffix, as ccache reads them:
    K, M, G, T are powers of 1000; Ki, Mi, Gi, Ti powers of 1024; a final B
    is allowed (`500M`, `2GiB`, `1.5G`, `1000000`)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size (examples: 500M, 2G, 1GiB)")
    number, unit, binary = match.groups()
    if binary and not unit:
        raise ValueError(f"{text!r} is not a size (examples: 500M, 2G, 1GiB)")
    base = 1024 if binary else 1000
    return int(float(number) * base ** _POWERS[unit.lower()])


def format_size(size: int) -> str:
    """`size` bytes for people, in powers of 1000 like the K/M/G input: 1.2 MB."""
    if size < 1000:
        return f"{size} B"
    value = size / 1000
    units = ["kB", "MB", "GB", "TB"]
    while value >= 1000 and len(units) > 1:
        value /= 1000
        units.pop(0)
    return f"{value:.1f} {units[0]}"
