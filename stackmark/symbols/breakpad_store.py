"""Breakpad symbol stores: `NAME/DEBUG-ID/NAME.sym` in a directory or behind an HTTP URL.

The layout Mozilla's and Breakpad's symbol servers use: `libxul.so/
0905AE80CEE75A33E3CAB61C274274DE0/libxul.so.sym` (for a `.pdb` the symbol
file is `NAME-without-.pdb.sym`). A module is asked for by its debug name
and debug ID, as Symbolication API v5 requests name it; both come from a
request, so both are checked before they become part of a path or URL
(`check_module_name`): no `/`, no `.` or `..`, nothing that is not in a
library file name, and a resolved path must stay inside its store.

Each `.sym` found is converted once to GSYM (`stackmark.conversion.
from_breakpad.convert_breakpad`) and kept under the cache:

    <cache>/breakpad-v1/NAME/DEBUG-ID/NAME.sym     a download (HTTP stores)
    <cache>/breakpad-v1/NAME/DEBUG-ID/NAME.gsym    its GSYM
    <cache>/breakpad-v1/NAME/DEBUG-ID/.lock        one downloader/converter at a time

Both files appear by rename once complete, under an exclusive `flock` that
every process and thread takes (a second asker waits, then finds the entry
made), so many workers asking at once download and convert it once.
HTTP downloads have a timeout per read and a deadline for the whole file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from stackmark.errors import StackmarkError
from stackmark.model import DataSymbol
from stackmark.symbols.debug_id import is_debug_id
from stackmark.symbols.gsym_files import GsymFileSource

LAYOUT = "breakpad-v1"

_MODULE_NAME = re.compile(r"[A-Za-z0-9_.+{}@<> ~-]{1,255}")
"""What a debug name may hold (a file name; Mozilla's Eliot accepts the same
characters): no `/`, so never a path."""

DOWNLOAD_TIMEOUT = 10.0
"""Seconds a store may stay silent, and (x6) the most a whole download may take."""
MAX_SYM_BYTES = 2 << 30
"""A larger .sym file is refused (the largest real ones are a few hundred MB)."""
MISS_SECONDS = 60.0
"""How long a store's 404 for a module is believed before it is asked again."""
MISSES_KEPT = 10000
"""Remembered 404s per process (forgotten all at once past this)."""


def check_module_name(name: str, debug_id: str) -> str | None:
    """Why (name, debug_id) cannot name a module in a store, or None when it can."""
    if not _MODULE_NAME.fullmatch(name) or name in (".", "..") or name.startswith(" "):
        return f"invalid debug name {name[:80]!r}"
    if not is_debug_id(debug_id):
        return f"invalid debug ID {debug_id[:80]!r}"
    return None


def sym_file_name(name: str) -> str:
    """`xul.pdb` -> `xul.sym`; anything else gets `.sym` appended."""
    return name[:-4] + ".sym" if name.lower().endswith(".pdb") else name + ".sym"


class BreakpadStore:
    """Finds and converts `.sym` files for (debug name, debug ID) pairs.

    `locations` are directories or `http://`/`https://` base URLs, asked in order.
    `cache_root` is where downloads and conversions go (see the module doc)."""

    def __init__(
        self, locations: list[str], cache_root: str | os.PathLike[str], *, timeout: float = 0
    ) -> None:
        self.locations = list(locations)
        self.root = Path(cache_root) / LAYOUT
        self.timeout = timeout or DOWNLOAD_TIMEOUT
        self._misses: dict[tuple[str, str, str], float] = {}

    def _entry_dir(self, name: str, debug_id: str) -> Path:
        return self.root / name / debug_id.upper()

    @contextlib.contextmanager
    def _locked(self, directory: Path) -> Iterator[None]:
        """Hold the entry's lock (threads and processes alike: flock on an open file)."""
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def gsym_for(self, name: str, debug_id: str, searched: list[str]) -> Path | None:
        """The GSYM made from the module's `.sym` file (made on first use), or None
        (`searched` then says what was tried and why it failed)."""
        problem = check_module_name(name, debug_id)
        if problem is not None:
            searched.append(problem)
            return None
        directory = self._entry_dir(name, debug_id)
        gsym = directory / (sym_file_name(name)[: -len(".sym")] + ".gsym")
        if gsym.is_file():
            return gsym
        with self._locked(directory):
            if gsym.is_file():
                return gsym  # another process made it while we waited
            sym = self._find_sym(name, debug_id, directory, searched)
            if sym is None:
                return None
            declared = _declared_debug_id(sym)
            if declared != debug_id.upper():
                # A store that answers with another module's file: not this one.
                searched.append(f"{sym}: its MODULE record says debug ID {declared!r}")
                if sym.is_relative_to(self.root):
                    sym.unlink(missing_ok=True)
                return None
            from stackmark.conversion.files import write_atomically
            from stackmark.conversion.from_breakpad import convert_breakpad

            try:
                result = convert_breakpad(str(sym))
            except StackmarkError as exc:
                searched.append(f"{sym}: {exc}")
                return None
            write_atomically(str(gsym), result.data, owned=True)
        return gsym

    def _find_sym(
        self, name: str, debug_id: str, directory: Path, searched: list[str]
    ) -> Path | None:
        relative = (name, debug_id.upper(), sym_file_name(name))
        for location in self.locations:
            if location.startswith(("http://", "https://")):
                found = self._download(location, relative, directory, searched)
            else:
                found = _in_directory(location, relative, searched)
            if found is not None:
                return found
        return None

    def _download(
        self, base: str, relative: tuple[str, str, str], directory: Path, searched: list[str]
    ) -> Path | None:
        target = directory / relative[2]
        if target.is_file():
            return target
        url = base.rstrip("/") + "/" + "/".join(urllib.parse.quote(part) for part in relative)
        missed = self._misses.get((base, *relative[:2]))
        if missed is not None and time.monotonic() - missed < MISS_SECONDS:
            searched.append(f"{url}: not found (remembered)")
            return None
        deadline = time.monotonic() + 6 * self.timeout
        part = directory / f".{relative[2][:100]}.{os.getpid()}.part"
        try:
            with (
                urllib.request.urlopen(url, timeout=self.timeout) as response,
                open(part, "wb") as out,
            ):
                size = 0
                while chunk := response.read(1 << 20):
                    size += len(chunk)
                    if size > MAX_SYM_BYTES:
                        raise StackmarkError(f"larger than {MAX_SYM_BYTES} bytes")
                    if time.monotonic() > deadline:
                        raise StackmarkError(f"took longer than {6 * self.timeout:g} s")
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(part, target)
            return target
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                if len(self._misses) > MISSES_KEPT:
                    self._misses.clear()
                self._misses[(base, *relative[:2])] = time.monotonic()
            searched.append(f"{url}: HTTP {exc.code}")
        except (urllib.error.URLError, OSError, StackmarkError) as exc:
            reason = getattr(exc, "reason", None) or exc
            searched.append(f"{url}: {reason}")
        finally:
            with contextlib.suppress(OSError):
                part.unlink()
        return None


def _declared_debug_id(sym: Path) -> str:
    """The debug ID the `.sym` file's MODULE record names (upper-case), "" if none."""
    try:
        with open(sym, "rb") as f:
            first = f.readline(4096).decode("utf-8", "replace").split()
    except OSError:
        return ""
    return first[3].upper() if len(first) >= 5 and first[0] == "MODULE" else ""


def _in_directory(root: str, relative: tuple[str, str, str], searched: list[str]) -> Path | None:
    """`root/NAME/ID/NAME.sym` when it is a file inside `root` (no symlink out of it)."""
    path = Path(root, *relative)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        searched.append(f"{path}: leads outside the store")
        return None
    if not os.path.isfile(real):
        searched.append(f"{path}: not found")
        return None
    return path


class BreakpadSource(GsymFileSource):
    """A `SymbolSource` over the GSYM converted from a module's `.sym` file.

    `data_at` answers with the FUNC or PUBLIC record holding the address (a
    .sym file has no data symbols): what a v5 answer's `function_offset` needs."""

    KIND = "Breakpad symbols"

    def __init__(self, gsym_path: Path) -> None:
        super().__init__(str(gsym_path))

    def data_at(self, address: int) -> DataSymbol | None:
        try:
            result = self.reader.lookup(address)
        except StackmarkError:
            return None
        return DataSymbol(result.name, result.start, result.size)
