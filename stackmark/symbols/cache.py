"""The GSYM cache: one GSYM file (and its extras) per build ID, made once.

Layout (see docs/gsym-cache.md):

    $XDG_CACHE_HOME/stackmark/        (else ~/.cache/stackmark, or --cache-dir)
      gsym-v1/
        ab/cdef...0123.gsym           GSYM, the bytes llvm-gsymutil-19 writes
        ab/cdef...0123.gsymx          extras: names, columns (formats.gsym.extras)
        ab/cdef...0123.lock           serialises builders of this entry
        ab/cdef...0123.verified       identity of the pair when last checked in full

`gsym-v1` is the layout version: a change of layout or of what the extras
hold moves to a new directory, so old entries are simply ignored.

Writes are atomic (temporary file in the same directory, fsync, rename),
extras first, then the GSYM. A builder holds an exclusive `flock` on the
entry's lock file and checks again, under the lock, whether another
process finished the entry meanwhile. Readers never lock: they validate
what they open (the GSYM header and UUID against the build ID, the extras
against the GSYM's size and CRC, and their own CRC), and a failed
validation (a torn pair, a corrupt or truncated file, something other than
a regular file) sends them to rebuild the entry under the lock. Temporary
files of a builder that was killed are removed by a later build once stale.

The CRC-32 passes read every byte of both files (about 50 MB for a large
binary: most of a warm first answer), so a pair that passed them is
recorded in `.verified` by its identity (size, mtime, inode and ctime of
each file, read from the open descriptors). A reader that opens the same
identity again skips the two passes and checks the rest (headers, sizes,
pairing by size); any write to a file changes its ctime, and a rebuilt
file is a new inode, so those are checked in full again. Reads stay
bounds-checked either way.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from stackmark._native import load
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.gsym.extras import check_extras_header
from stackmark.formats.gsym.reader import GsymReader
from stackmark.plain import FrozenRecord
from stackmark.process_end import keep_until_exit
from stackmark.symbols.buildid import is_valid_build_id

if TYPE_CHECKING:
    import threading
    from array import array

    from stackmark.dwarf.split_files import SplitDwarfLoad
    from stackmark.dwarf.supplementary import SupplementaryLoad
    from stackmark.formats.gsym.convert import ProgressSink
    from stackmark.formats.gsym.from_dwarf import ExtrasCollector

LAYOUT = "gsym-v1"


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/stackmark, else ~/.cache/stackmark."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "stackmark"
    return Path.home() / ".cache" / "stackmark"


class CacheEntry(FrozenRecord):
    """A sound entry; `identity` is that of its two files as checked (see `open_pair`)."""

    __slots__ = _fields = __match_args__ = ("gsym", "extras", "identity")
    gsym: Path
    extras: Path
    identity: str

    def __init__(self, gsym: Path, extras: Path, identity: str = "") -> None:
        object.__setattr__(self, "gsym", gsym)
        object.__setattr__(self, "extras", extras)
        object.__setattr__(self, "identity", identity)


VERIFIED_SUFFIX = ".verified"


def _identity(status: os.stat_result) -> str:
    return f"{status.st_size}:{status.st_mtime_ns}:{status.st_ino}:{status.st_ctime_ns}"


def open_pair(gsym_path: Path, extras_path: Path) -> tuple[mmap.mmap, mmap.mmap, str]:
    """Both files of an entry mapped read-only, and the pair's identity, taken from the
    descriptors that were mapped (so it describes exactly the bytes read).

    Raises FormatError for an empty file or one that is not a regular file."""
    maps: list[mmap.mmap] = []
    identities = []
    try:
        for path in (gsym_path, extras_path):
            with open(path, "rb") as f:
                status = os.fstat(f.fileno())
                if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
                    raise FormatError("empty, or not a regular file", source=str(path))
                maps.append(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
                identities.append(_identity(status))
    except BaseException:
        for data in maps:
            data.close()
        raise
    return maps[0], maps[1], " ".join(identities)


def _read_verified(path: Path) -> str:
    try:
        with open(path, encoding="ascii") as f:
            return f.read(200).strip()
    except (OSError, ValueError):
        return ""


def _write_verified(path: Path, identity: str) -> None:
    """Record `identity` as checked (atomically; a cache we cannot write to just
    checks in full every time)."""
    import tempfile  # only here: a first check; it costs a warm start ~5 ms to import

    try:
        fd, tmp = tempfile.mkstemp(prefix=".gsym-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(identity + "\n")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def _valid_build_id(build_id: str) -> bool:
    """Canonical (lower-case hex, whole bytes, at most 64) and long enough for the layout."""
    return len(build_id) >= 4 and build_id == build_id.lower() and is_valid_build_id(build_id)


class GsymCache:
    """Finds, validates and (re)builds cache entries."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, jobs: int = 0):
        self.root = Path(root) if root is not None else default_cache_dir()
        self.jobs = jobs

    def entry_paths(self, build_id: str) -> tuple[Path, Path, Path]:
        if not _valid_build_id(build_id):
            raise StackmarkError(f"invalid build ID {build_id!r} for the GSYM cache")
        directory = self.root / LAYOUT / build_id[:2]
        stem = build_id[2:]
        return (
            directory / f"{stem}.gsym",
            directory / f"{stem}.gsymx",
            directory / f"{stem}.lock",
        )

    def validate(self, build_id: str) -> CacheEntry | None:
        """The entry for `build_id` if it exists and is sound, else None (the CRC-32
        passes are skipped for a pair whose identity was recorded as checked)."""
        gsym_path, extras_path, _ = self.entry_paths(build_id)
        verified_path = gsym_path.with_suffix(VERIFIED_SUFFIX)
        try:
            if not (gsym_path.is_file() and extras_path.is_file()):
                return None  # missing, or a FIFO or directory (opening a FIFO would block)
            gsym_data, extras_data, identity = open_pair(gsym_path, extras_path)
            known = _read_verified(verified_path) == identity
            with GsymReader(gsym_data, str(gsym_path)) as reader, extras_data:
                uuid = reader.uuid.hex()
                if uuid and not build_id.startswith(uuid):
                    return None
                check_extras_header(extras_data, reader.data, str(extras_path), checksums=not known)
        except (FormatError, OSError, ValueError):
            return None
        if not known:
            _write_verified(verified_path, identity)
        return CacheEntry(gsym_path, extras_path, identity)

    def get_or_build(
        self,
        build_id: str,
        dwarf_file: str,
        progress: ProgressSink | None = None,
        *,
        load_supplementary: SupplementaryLoad | None = None,
        load_split: SplitDwarfLoad | None = None,
    ) -> CacheEntry:
        """The sound entry for `build_id`, made from `dwarf_file` when missing
        (`progress`, if given, hears how the conversion goes). `load_supplementary`
        finds a dwz supplementary file and `load_split` split DWARF's files as
        the symbolizer does (`ModuleFiles`' own, looking in the user's
        debug-file directories and where llvm looks; None: none is looked
        for)."""
        entry = self.validate(build_id)
        if entry is not None:
            return entry
        gsym_path, extras_path, lock_path = self.entry_paths(build_id)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                entry = self.validate(build_id)
                if entry is not None:
                    return entry
                _remove_stale_temporaries(lock_path.parent)
                self._build(
                    dwarf_file, gsym_path, extras_path, progress, load_supplementary, load_split
                )
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        entry = self.validate(build_id)
        if entry is None:
            raise StackmarkError(f"the GSYM cache entry for {build_id} failed to validate")
        return entry

    def _build(
        self,
        dwarf_file: str,
        gsym_path: Path,
        extras_path: Path,
        progress: ProgressSink | None = None,
        load_supplementary: SupplementaryLoad | None = None,
        load_split: SplitDwarfLoad | None = None,
    ) -> None:
        # The converter is imported here, not at the top: a warm lookup
        # (the common case) never needs it, and it costs ~30 ms to import.
        from stackmark.conversion.files import write_atomically
        from stackmark.formats.gsym.convert import convert_elf
        from stackmark.formats.gsym.extras import ExtrasBuilder
        from stackmark.formats.gsym.from_dwarf import ExtrasCollector
        from stackmark.formats.gsym.gc_pause import gc_paused

        with gc_paused():
            collector = ExtrasCollector()
            columns = _ColumnPoints(collector)
            try:
                result = convert_elf(
                    dwarf_file,
                    jobs=self.jobs,
                    extras=collector,
                    progress=progress,
                    load_supplementary=load_supplementary,
                    load_split=load_split,
                    dwarf_done=columns.start,
                )
            finally:
                columns.wait()  # a failed conversion leaves no thread behind
            points = columns.result()
            if progress is not None:
                progress.update(EXTRAS_LABEL, 0, 1)
            builder = ExtrasBuilder(points)
            builder.add_functions(
                result.functions, [collector.function_nodes(info) for info in result.functions]
            )
            extras_data = builder.encode(result.data)
            if progress is not None:
                progress.update(EXTRAS_LABEL, 1, 1)
                progress.finish()
        write_atomically(str(extras_path), extras_data, owned=True)
        write_atomically(str(gsym_path), result.data, owned=True)
        # Millions of rows, nodes and names: a command-line run that ends without
        # freeing its heap keeps them rather than free them one by one (0.25 s
        # after big-O2, before the first answer); elsewhere they go now.
        keep_until_exit((result, collector))


class _ColumnPoints:
    """The extras' column points (`ExtrasCollector.column_points`: millions of
    (address, column) pairs sorted), made on another thread from `start` on
    while this one reads the symbol table and encodes the GSYM: the compiled
    sort holds no lock, so a second core does it (0.1 s after big-O2). Without
    the compiled kernels they are made in `result` (a Python sort would only
    take turns with the encoder)."""

    def __init__(self, collector: ExtrasCollector) -> None:
        self._collector = collector
        self._thread: threading.Thread | None = None
        self._points: tuple[array[int], array[int]] | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        if load("_gsym_convert") is None:
            return
        import threading  # only for a build: a warm lookup never starts one

        self._thread = threading.Thread(target=self._run, name="stackmark column points")
        self._thread.start()

    def _run(self) -> None:
        try:
            self._points = self._collector.column_points()
        except BaseException as exc:  # raised again in `result`, on the builder's thread
            self._error = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def result(self) -> tuple[array[int], array[int]]:
        """The points (waiting for the thread, and raising what it raised)."""
        self.wait()
        if self._error is not None:
            raise self._error
        if self._points is None:
            self._points = self._collector.column_points()
        return self._points


EXTRAS_LABEL = "indexing names and columns"
"""What a build's progress shows while the extras are made (after the GSYM)."""

STALE_TEMPORARY_SECONDS = 3600
"""A temporary file (`write_atomically`'s `.gsym-*.tmp`) this old was left by
a builder that was killed: writing one takes seconds."""


def _remove_stale_temporaries(directory: Path) -> None:
    cutoff = time.time() - STALE_TEMPORARY_SECONDS
    for path in directory.glob(".gsym-*.tmp"):
        with contextlib.suppress(OSError):
            if path.lstat().st_mtime < cutoff:
                path.unlink()
