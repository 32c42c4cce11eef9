"""Writing an output file whole or not at all, without replacing what is not a file.

A GSYM, a log written by a batch or an object with an embedded `.sframe`
is written to a temporary file beside its path, flushed to disk and renamed
into place, so that a failed or interrupted run never leaves a half-written
file. Renaming is only right for a regular file, though. A user who writes
to `/dev/null`, a FIFO, a terminal or `/dev/stdout` means "write there":
a rename would replace the device node or the link itself (as root, a
`-o /dev/null` would leave a regular file where the null device was). Such
a path is written in place; a symbolic link to a regular file keeps its link
and has the file it names replaced.

`replacing` is the one way stackmark writes an output file: a context
manager giving a binary file; `write_whole` writes bytes through it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import BinaryIO


def _target(path: str, owned: bool) -> tuple[str, bool]:
    """(the path to write, whether it is written in place): a link is followed,
    and anything that exists and is not a regular file is written in place,
    unless the path is `owned`: then whatever is there is replaced."""
    if owned:
        return path, False
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real, False
    return real, not stat.S_ISREG(mode)


@contextlib.contextmanager
def replacing(
    path: str | os.PathLike[str],
    *,
    mode: int | None = None,
    prefix: str | None = None,
    suffix: str = ".part",
    owned: bool = False,
) -> Iterator[BinaryIO]:
    """A binary file whose contents replace `path` when the block ends without an
    exception (fsynced, then renamed into place); on an exception the temporary file
    is removed and `path` is untouched. `mode` sets the new file's permission bits
    (default: what a new file gets, 0o666 less the umask). The temporary file is
    named `prefix` (default `.NAME.`), random letters, `suffix`, so that a cache can
    sweep the ones a killed writer left. A device, FIFO or socket at `path` is
    opened and written directly, unless `path` is `owned` (a cache's own entry,
    where anything else found is damage to replace, never a place to write)."""
    target, in_place = _target(os.fspath(path), owned)
    if in_place:
        with open(target, "wb") as direct:
            yield direct
        return
    directory, name = os.path.split(target)
    if prefix is None:
        prefix = f".{name[:100]}."
    fd, part = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(part, _new_file_mode() if mode is None else mode & 0o7777)
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


def write_whole(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int | None = None,
    prefix: str | None = None,
    suffix: str = ".part",
    owned: bool = False,
) -> None:
    """Write `data` to `path` whole or not at all (see `replacing`)."""
    with replacing(path, mode=mode, prefix=prefix, suffix=suffix, owned=owned) as out:
        out.write(data)


def _new_file_mode() -> int:
    """0o666 less the process's umask: what `open` would have given the file
    (mkstemp makes it 0o600). Read from /proc where it can be: setting the umask
    to learn it would race with other threads creating files."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask
