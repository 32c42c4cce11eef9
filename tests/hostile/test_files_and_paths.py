"""Files and paths: what a log or a damaged cache can make stackmark touch or trust.

- A build ID is hexadecimal before it becomes part of a path or URL: no
  `../` from a log reaches the file system or a debuginfod server.
- GSYM cache writes are atomic: a builder killed (SIGKILL) at any point of
  writing an entry leaves nothing a later process trusts; the next build
  makes a sound entry and removes stale temporaries.
- Cache files are validated before use: damaged, swapped, or replaced by
  a FIFO or a directory, they never change what `stackmark symbolize`
  prints (the reference is the same run with the cache off).
- Processes sharing one cache, building and pruning at once, all print the
  right answers and leave sound entries.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stackmark.errors import StackmarkError
from stackmark.symbols.cache import STALE_TEMPORARY_SECONDS, GsymCache
from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings
from stackmark.symbols.download_cache import DownloadCache
from stackmark.symbols.store import SymbolStore
from tests.support.build import REPO
from tests.support.debuginfod_servers import ScriptedServer
from tests.support.markup_programs import ProgramLog, build_id, program_log

HOSTILE_IDS = [
    "../../../../etc/passwd",
    "..",
    "ab/../../cd",
    "abcd/",
    "%2e%2e%2fetc",
    "ab\0cd",
    "abcdefg1",
    "abc",  # odd length
    " abcd",
]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProgramLog]:
    work = tmp_path_factory.mktemp("logs")
    return {variant: program_log(variant, work) for variant in ("pie", "cpp")}


def symbolize(
    log: ProgramLog, mode: str, cache: Path, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "stackmark", "symbolize", log.debug_option]
    command += [f"--gsym-cache={mode}", f"--gsym-cache-dir={cache}", *extra]
    return subprocess.run(command, input=log.log, capture_output=True, cwd=REPO, timeout=timeout)


def reference(log: ProgramLog, tmp_path: Path) -> bytes:
    proc = symbolize(log, "off", tmp_path / "unused")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.stdout


def module_build_ids(log: ProgramLog) -> list[str]:
    ids = [build_id(log.program)]
    if log.library is not None:
        ids.append(build_id(log.library))
    return ids


# -- build IDs ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE_IDS)
def test_a_hostile_build_id_names_no_path(text: str, tmp_path: Path) -> None:
    store = SymbolStore(debug_file_directories=[str(tmp_path / "debug")], symbol_paths=[])
    lookup = store.find(text)
    assert lookup.files is None
    assert lookup.searched == [], "a path was built from it"
    assert lookup.failure is not None and "build ID" in lookup.failure.message
    with pytest.raises(StackmarkError):
        GsymCache(tmp_path / "gsym").entry_paths(text)
    with pytest.raises(StackmarkError):
        DownloadCache(tmp_path / "downloads").artifact_path(text, "debuginfo")
    settings = DebuginfodSettings(urls=("http://127.0.0.1:9",), cache_path=tmp_path / "dl")
    result = DebuginfodClient(settings).find_debuginfo(text)
    assert result.path is None and not result.attempts and result.error
    assert not (tmp_path / "dl").exists() or not any((tmp_path / "dl").rglob("*"))


def test_hostile_build_ids_in_a_log_reach_no_file_or_server(
    logs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    log = logs["pie"]
    lines = [f"{{{{{{module:{i}:m{i}:elf:{text}}}}}}}\n" for i, text in enumerate(HOSTILE_IDS)]
    hostile = ProgramLog(
        "hostile",
        "".join(lines).encode("utf-8", "surrogateescape") + log.log,
        log.program,
        log.library,
        log.debug_dir,
    )
    with ScriptedServer() as server:
        proc = symbolize(
            hostile, "build", tmp_path / "cache", f"--debuginfod-url={server.url}", "--debuginfod"
        )
        requested = list(server.requests)
    assert proc.returncode in (0, 1)
    assert b"Traceback" not in proc.stderr
    for path in requested:
        part = path.split("/")[2]
        assert all(c in "0123456789abcdef" for c in part) and ".." not in path, path
    created = [p.relative_to(tmp_path) for p in tmp_path.rglob("*")]
    assert all(str(p).startswith("cache") for p in created), created
    # every line whose build ID is not hex is kept, after its element error
    for text, line in zip(HOSTILE_IDS, lines, strict=True):
        if not all(c in "0123456789abcdefABCDEF" for c in text):
            assert line.encode("utf-8", "surrogateescape") in proc.stdout


HOSTILE_MODULE_NAMES = [
    "/tmp/a\x00b",  # os functions refuse a NUL
    "../../etc/passwd",
    "lib/../../../etc/passwd",
    "/dev/zero",
    "/proc/self/mem",
    "",
    "/",
]


def test_hostile_module_names_are_refused_or_checked_and_never_crash(
    tmp_path: Path, logs: dict[str, ProgramLog]
) -> None:
    """A module's name is a path stackmark looks at: a NUL, `..` out of a symbol path, a
    device or a directory there gives no file and no traceback; an ELF file there must
    still carry the build ID."""
    inside = tmp_path / "symbols"
    inside.mkdir()
    store = SymbolStore([str(tmp_path / "debug")], symbol_paths=[str(inside)])
    for name in HOSTILE_MODULE_NAMES:
        lookup = store.find("abcd1234", module_name=name)
        assert lookup.files is None, name
        assert not any("passwd" in entry for entry in lookup.searched), lookup.searched
    program = logs["pie"].program
    wrong = store.find("abcd1234", module_name=str(program))
    assert wrong.files is None and wrong.mismatched == [(str(program), build_id(program))]
    log = "".join(
        f"{{{{{{module:{i}:{name}:elf:abcd1234}}}}}}\n"
        f"{{{{{{mmap:0x{i + 1:x}000:0x1000:load:{i}:rx:0x0}}}}}}\n"
        f"{{{{{{bt:{i}:0x{i + 1:x}100}}}}}}\n"
        for i, name in enumerate(HOSTILE_MODULE_NAMES)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", f"--symbol-path={inside}"],
        input=log.encode("utf-8", "surrogateescape"),
        capture_output=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert proc.returncode in (0, 1) and b"Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.count(b"(") >= len(HOSTILE_MODULE_NAMES)  # a best-effort frame each


# -- atomic writes: SIGKILL while an entry is written ---------------------------------------

_KILLING_CHILD = """\
import os, signal, sys
point = sys.argv.pop(1)
real_fdopen, real_replace = os.fdopen, os.replace
temporaries = []

def kill():
    os.kill(os.getpid(), signal.SIGKILL)

class HalfWriter:
    def __init__(self, f):
        self.f = f
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return self.f.__exit__(*exc)
    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        kill()
    def __getattr__(self, name):
        return getattr(self.f, name)

def fdopen(fd, *args, **kwargs):
    f = real_fdopen(fd, *args, **kwargs)
    if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".gsym-"):
        temporaries.append(fd)
        which = "extras" if len(temporaries) == 1 else "gsym"
        if point == which + "-write":
            return HalfWriter(f)
    return f

def replace(src, dst, *args, **kwargs):
    name = os.fspath(dst)
    if (point == "extras-rename" and name.endswith(".gsymx")) or (
        point == "gsym-rename" and name.endswith(".gsym")
    ):
        kill()
    return real_replace(src, dst, *args, **kwargs)

os.fdopen, os.replace = fdopen, replace
from stackmark.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _killed_build(log: ProgramLog, cache: Path, point: str) -> None:
    command = [sys.executable, "-c", _KILLING_CHILD, point, "symbolize", log.debug_option]
    command += ["--gsym-cache=build", f"--gsym-cache-dir={cache}"]
    proc = subprocess.run(command, input=log.log, capture_output=True, cwd=REPO, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]


def _check_recovery(log: ProgramLog, cache: Path, expected: bytes) -> None:
    """Nothing half-written is trusted, and the next build makes sound entries."""
    assert symbolize(log, "use", cache).stdout == expected
    assert symbolize(log, "build", cache).stdout == expected
    gsym = GsymCache(cache)
    for ident in module_build_ids(log):
        assert gsym.validate(ident) is not None, ident
    assert symbolize(log, "use", cache).stdout == expected


@pytest.mark.parametrize(
    "point", ["extras-write", "extras-rename", "gsym-write", "gsym-rename", "rebuild-gsym-rename"]
)
def test_sigkill_while_an_entry_is_written(
    logs: dict[str, ProgramLog], tmp_path: Path, point: str
) -> None:
    log = logs["pie"]
    expected = reference(log, tmp_path)
    cache = tmp_path / "cache"
    first = module_build_ids(log)[0]
    if point.startswith("rebuild-"):
        point = point.removeprefix("rebuild-")
        assert symbolize(log, "build", cache).stdout == expected
        gsym_path = GsymCache(cache).entry_paths(first)[0]
        damaged = bytearray(gsym_path.read_bytes())
        damaged[len(damaged) // 2] ^= 0x40
        gsym_path.write_bytes(bytes(damaged))
    _killed_build(log, cache, point)
    assert GsymCache(cache).validate(first) is None  # the pair being written is not sound
    _check_recovery(log, cache, expected)


def test_sigkill_at_random_moments(logs: dict[str, ProgramLog], tmp_path: Path) -> None:
    log = logs["cpp"]
    expected = reference(log, tmp_path)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "stackmark", "symbolize", log.debug_option]
    command += ["--gsym-cache=build", f"--gsym-cache-dir={cache}"]
    for delay in (0.25, 0.5, 0.75, 1.0, 1.3):
        shutil.rmtree(cache, ignore_errors=True)
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        assert child.stdin is not None
        child.stdin.write(log.log)
        child.stdin.close()
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        assert symbolize(log, "use", cache).stdout == expected, f"after a kill at {delay} s"
    _check_recovery(log, cache, expected)


def test_stale_temporaries_are_removed_by_the_next_build(
    logs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    log = logs["pie"]
    cache = tmp_path / "cache"
    _killed_build(log, cache, "gsym-write")
    leftovers = list(cache.rglob(".gsym-*.tmp"))
    assert leftovers
    fresh = leftovers[0].with_name(".gsym-fresh.tmp")
    fresh.write_bytes(b"a builder writing right now")
    old = time.time() - STALE_TEMPORARY_SECONDS - 60
    for path in leftovers:
        os.utime(path, (old, old))
    symbolize(log, "build", cache)
    assert [p.name for p in cache.rglob(".gsym-*.tmp")] == [fresh.name]


# -- validation before use --------------------------------------------------------------------


def _damage(kind: str, cache: Path, log: ProgramLog, other: ProgramLog) -> None:
    gsym = GsymCache(cache)
    gsym_path, extras_path, _ = gsym.entry_paths(module_build_ids(log)[0])
    if kind.startswith("flip-"):
        path = extras_path if kind.startswith("flip-extras") else gsym_path
        data = bytearray(path.read_bytes())
        fraction = int(kind.rsplit("-", 1)[1])
        data[min(len(data) - 1, 64 + (len(data) - 64) * fraction // 100)] ^= 0x08
        path.write_bytes(bytes(data))
    elif kind == "swap-extras":
        other_extras = gsym.entry_paths(module_build_ids(other)[0])[1]
        shutil.copyfile(other_extras, extras_path)
    elif kind == "swap-pair":
        other_gsym, other_extras, _ = gsym.entry_paths(module_build_ids(other)[0])
        shutil.copyfile(other_gsym, gsym_path)
        shutil.copyfile(other_extras, extras_path)
    elif kind == "fifo":
        gsym_path.unlink()
        os.mkfifo(gsym_path)
    elif kind == "directory":
        extras_path.unlink()
        extras_path.mkdir()
    elif kind == "empty":
        gsym_path.write_bytes(b"")
    else:
        raise ValueError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        *(f"flip-extras-{p}" for p in (0, 40, 95)),
        *(f"flip-gsym-{p}" for p in (0, 60)),
        "swap-extras",
        "swap-pair",
        "fifo",
        "directory",
        "empty",
    ],
)
def test_damaged_cache_entries_never_change_the_output(
    logs: dict[str, ProgramLog], tmp_path: Path, kind: str
) -> None:
    log, other = logs["pie"], logs["cpp"]
    expected = reference(log, tmp_path)
    cache = tmp_path / "cache"
    assert symbolize(log, "build", cache).stdout == expected
    symbolize(other, "build", cache)
    _damage(kind, cache, log, other)
    assert GsymCache(cache).validate(module_build_ids(log)[0]) is None
    for mode in ("use", "build", "use"):
        proc = symbolize(log, mode, cache, timeout=60)
        assert proc.stdout == expected, mode
        assert b"Traceback" not in proc.stderr


# -- one cache, several processes -------------------------------------------------------------


def test_processes_sharing_a_cache_while_it_is_pruned(
    logs: dict[str, ProgramLog], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    expected = {name: reference(log, tmp_path) for name, log in logs.items()}
    runs: list[tuple[str, subprocess.Popen[bytes]]] = []
    for round_ in range(2):
        for name in ("pie", "cpp", "pie"):
            log = logs[name]
            command = [sys.executable, "-m", "stackmark", "symbolize", log.debug_option]
            command += ["--gsym-cache=build" if round_ == 0 else "--gsym-cache=use"]
            command += [f"--gsym-cache-dir={cache}"]
            child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            runs.append((name, child))
    prune = [sys.executable, "-m", "stackmark", "cache", f"--gsym-cache-dir={cache}"]
    prune += [f"--debuginfod-cache={tmp_path / 'downloads'}", "prune", "--max-size", "0"]
    pruners = [subprocess.Popen(prune, stdout=subprocess.DEVNULL) for _ in range(3)]
    for name, child in runs:
        out, err = child.communicate(logs[name].log, timeout=240)
        assert out == expected[name], err[-2000:]
    for pruner in pruners:
        assert pruner.wait(timeout=60) == 0
    # afterwards: whatever is left is sound, and building again gives sound entries
    for name, log in logs.items():
        assert symbolize(log, "build", cache).stdout == expected[name]
        for ident in module_build_ids(log):
            assert GsymCache(cache).validate(ident) is not None
    assert not list(cache.rglob(".gsym-*.tmp"))
