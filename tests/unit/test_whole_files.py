"""Output files are written whole or not at all, and what is not a regular file is
written in place: a rename onto `/dev/null`, a FIFO or a link would replace the
node or the link itself (as root, `-o /dev/null` once left a regular file there)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stackmark.whole_files import replacing, write_whole
from tests.support.build import compile_program


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as fifo:
            into.append(fifo.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_fifo_is_written_in_place_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_whole(fifo, b"all of it")
    reader.join(timeout=10)
    assert got == [b"all of it"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_a_link_keeps_its_link_and_the_file_it_names_is_replaced(tmp_path: Path) -> None:
    real = tmp_path / "real.gsym"
    real.write_bytes(b"old")
    link = tmp_path / "link.gsym"
    link.symlink_to(real.name)
    write_whole(link, b"new")
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_bytes() == b"new"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.log"
    path.write_bytes(b"the user's data")
    with pytest.raises(RuntimeError), replacing(path) as out:
        out.write(b"half")
        raise RuntimeError("interrupted")
    assert path.read_bytes() == b"the user's data"
    assert [p.name for p in tmp_path.iterdir()] == ["out.log"]


def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_whole(tmp_path / "a", b"x")
        write_whole(tmp_path / "b", b"x", mode=0o755)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o640  # not mkstemp's 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "b").st_mode) == 0o755


def test_gsym_convert_to_a_fifo_writes_the_gsym_through_it(tmp_path: Path) -> None:
    program = compile_program("whole_files_prog", ["gsym_inline.c", "gsym_inline_b.c"])
    expected = tmp_path / "file.gsym"
    command = [sys.executable, "-m", "stackmark", "gsym", "convert", str(program)]
    subprocess.run([*command, "-o", str(expected)], capture_output=True, check=True)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    subprocess.run([*command, "-o", str(fifo)], capture_output=True, check=True, timeout=120)
    reader.join(timeout=10)
    assert got == [expected.read_bytes()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_path_a_cache_owns_is_replaced_whatever_is_there(tmp_path: Path) -> None:
    """A cache entry found to be a FIFO is damage: it is replaced, never written to
    (which would wait for a reader forever)."""
    entry = tmp_path / "entry.gsym"
    os.mkfifo(entry)
    write_whole(entry, b"sound", owned=True)
    assert stat.S_ISREG(os.lstat(entry).st_mode)
    assert entry.read_bytes() == b"sound"
