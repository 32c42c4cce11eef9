"""The GSYM cache and the source that answers from it.

- Answers equal llvm-symbolizer-19's (function, file, line, column of every
  inline frame) on every code address of compiled C and C++ programs.
- Entries land under $XDG_CACHE_HOME/stackmark/gsym-v1, hold llvm's bytes,
  are rebuilt when damaged, and two processes building one entry at once
  both get a sound entry.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
from pathlib import Path

import pytest

from stackmark.elf import SHF_EXECINSTR, ElfFile
from stackmark.formats.gsym import GsymReader
from stackmark.symbols.cache import GsymCache, default_cache_dir
from stackmark.symbols.gsym_source import GsymSource, gsym_source_factory
from stackmark.symbols.source import ModuleFiles
from tests.conftest import require_tool
from tests.support.build import build_id_of, compile_program

PROGRAMS = {
    "c-O0": ("gcc", ["gsym_inline.c", "gsym_inline_b.c"], ("-g", "-O0")),
    "c-O2": ("gcc", ["gsym_inline.c", "gsym_inline_b.c"], ("-g", "-O2")),
    "cpp-O0": ("g++", ["gsym_cpp.cpp"], ("-g", "-O0")),
    "cpp-O2": ("g++", ["gsym_cpp.cpp"], ("-g", "-O2")),
}


def program(name: str) -> Path:
    compiler, sources, flags = PROGRAMS[name]
    return compile_program(f"gsym-cache-{name}", sources, compiler=compiler, flags=flags)


def symbolizer_frames(binary: Path, addresses: list[int]) -> list[list[tuple]]:
    """llvm-symbolizer-19's inline frames (raw names, files, lines, columns) per address."""
    proc = subprocess.run(
        [
            require_tool("llvm-symbolizer-19"),
            "--obj",
            str(binary),
            "--output-style=JSON",
            "--no-demangle",
            "--functions=linkage",
            "--inlines",
        ],
        input="".join(f"0x{a:x}\n" for a in addresses),
        capture_output=True,
        text=True,
        check=True,
    )
    out = []
    for line in proc.stdout.splitlines():
        frames = []
        for f in json.loads(line)["Symbol"]:
            if f["FunctionName"] in ("", "??") and not f["FileName"]:
                continue
            frames.append((f["FunctionName"], f["FileName"] or None, f["Line"], f["Column"]))
        out.append(frames)
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_answers_equal_llvm_symbolizer(name: str, tmp_path: Path) -> None:
    binary = program(name)
    files = ModuleFiles(build_id_of(binary), str(binary))
    source = gsym_source_factory(GsymCache(tmp_path))(files)
    assert isinstance(source, GsymSource)
    with ElfFile.open(binary) as elf:
        text = [
            (s.addr, s.addr + s.size)
            for s in elf.sections
            if s.flags & SHF_EXECINSTR and s.name == ".text"
        ]
    addresses = [a for low, high in text for a in range(low, high)]
    expected = symbolizer_frames(binary, addresses)
    mismatches = []
    for addr, want in zip(addresses, expected, strict=True):
        got = [(f.function or "", f.file, f.line, f.column) for f in source.frames_at(addr)]
        if got != want:
            mismatches.append((hex(addr), got, want))
    assert not mismatches, mismatches[:5]


def test_layout_and_default_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "stackmark"
    binary = program("c-O2")
    build_id = build_id_of(binary)
    entry = GsymCache().get_or_build(build_id, str(binary))
    assert entry.gsym == tmp_path / "xdg/stackmark/gsym-v1" / build_id[:2] / f"{build_id[2:]}.gsym"
    llvm = tmp_path / "llvm.gsym"
    subprocess.run(
        [
            require_tool("llvm-gsymutil-19"),
            "--convert",
            str(binary),
            "--num-threads=1",
            "-o",
            str(llvm),
        ],
        capture_output=True,
        check=True,
    )
    assert entry.gsym.read_bytes() == llvm.read_bytes()
    assert not [p for p in entry.gsym.parent.iterdir() if p.name.startswith(".gsym-")]


@pytest.mark.parametrize("damage", ["truncate-gsym", "flip-gsym", "truncate-extras", "swap"])
def test_damaged_entries_are_rebuilt(damage: str, tmp_path: Path) -> None:
    binary, other = program("c-O2"), program("cpp-O2")
    build_id = build_id_of(binary)
    cache = GsymCache(tmp_path)
    entry = cache.get_or_build(build_id, str(binary))
    good_gsym, good_extras = entry.gsym.read_bytes(), entry.extras.read_bytes()
    if damage == "truncate-gsym":
        entry.gsym.write_bytes(good_gsym[:100])
    elif damage == "flip-gsym":
        data = bytearray(good_gsym)
        data[len(data) // 2] ^= 0xFF
        entry.gsym.write_bytes(bytes(data))
    elif damage == "truncate-extras":
        entry.extras.write_bytes(good_extras[:-3])
    else:  # another module's extras next to this GSYM
        other_entry = cache.get_or_build(build_id_of(other), str(other))
        entry.extras.write_bytes(other_entry.extras.read_bytes())
    assert cache.validate(build_id) is None
    again = cache.get_or_build(build_id, str(binary))
    assert again.gsym.read_bytes() == good_gsym
    assert again.extras.read_bytes() == good_extras


def _build_in_process(root: str, build_id: str, binary: str, queue: multiprocessing.Queue) -> None:
    entry = GsymCache(root).get_or_build(build_id, binary)
    queue.put(entry.gsym.read_bytes())


def test_two_processes_build_one_entry(tmp_path: Path) -> None:
    binary = program("cpp-O2")
    build_id = build_id_of(binary)
    ctx = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue = ctx.Queue()
    workers = [
        ctx.Process(target=_build_in_process, args=(str(tmp_path), build_id, str(binary), queue))
        for _ in range(2)
    ]
    for w in workers:
        w.start()
    results = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert results[0] == results[1]
    with GsymReader.open(GsymCache(tmp_path).entry_paths(build_id)[0]) as reader:
        assert reader.uuid.hex() == build_id[:40]


def test_modules_without_dwarf_fall_through(tmp_path: Path) -> None:
    stripped = compile_program(
        "gsym-cache-stripped",
        ["gsym_inline.c", "gsym_inline_b.c"],
        flags=("-O2",),
        post=[["strip", "--strip-debug", "{out}"]],
    )
    files = ModuleFiles(build_id_of(stripped), str(stripped))
    assert gsym_source_factory(GsymCache(tmp_path))(files) is None
    assert gsym_source_factory(GsymCache(tmp_path))(ModuleFiles("", str(stripped))) is None


def test_entries_do_not_depend_on_the_number_of_processes(tmp_path: Path) -> None:
    binary = program("c-O2")  # two compile units: one per worker
    build_id = build_id_of(binary)
    one = GsymCache(tmp_path / "one", jobs=1).get_or_build(build_id, str(binary))
    two = GsymCache(tmp_path / "two", jobs=2).get_or_build(build_id, str(binary))
    assert one.gsym.read_bytes() == two.gsym.read_bytes()
    assert one.extras.read_bytes() == two.extras.read_bytes()


def test_a_checked_pair_is_not_checksummed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first validation reads every byte (CRC-32s) and records the pair's identity in
    `.verified`; opening the same files again (validation and the lookup source) skips
    the CRC passes, and answers are unchanged."""
    import stackmark.formats.gsym.extras as extras_module

    binary = program("c-O2")
    build_id = build_id_of(binary)
    cache = GsymCache(tmp_path)
    entry = cache.get_or_build(build_id, str(binary))
    verified = entry.gsym.with_suffix(".verified")
    assert verified.read_text().strip() == entry.identity != ""
    passes: list[str] = []
    real_fingerprint, real_body = extras_module.gsym_fingerprint, extras_module._check_body
    monkeypatch.setattr(
        extras_module, "gsym_fingerprint", lambda g: passes.append("gsym") or real_fingerprint(g)
    )
    monkeypatch.setattr(
        extras_module, "_check_body", lambda *a: passes.append("body") or real_body(*a)
    )
    again = cache.validate(build_id)
    assert again is not None and again.identity == entry.identity
    files = ModuleFiles(build_id, str(binary))
    source = GsymSource(str(again.gsym), str(again.extras), files, again.identity)
    with ElfFile.open(binary) as elf:
        text = next(s for s in elf.sections if s.name == ".text")
    assert source.frames_at(text.addr + text.size // 2)
    source.close()
    assert passes == []
    # Without the identity (or with another one) the source checks in full.
    GsymSource(str(again.gsym), str(again.extras), files).close()
    assert passes == ["gsym", "body"]


def test_a_file_changed_in_place_is_checked_in_full(tmp_path: Path) -> None:
    """A byte changed in place, size kept and mtime put back: the ctime moved, so the
    identity differs, the CRC passes run and the damage is found."""
    binary = program("c-O2")
    build_id = build_id_of(binary)
    cache = GsymCache(tmp_path)
    entry = cache.get_or_build(build_id, str(binary))
    good = entry.extras.read_bytes()
    status = entry.extras.stat()
    data = bytearray(good)
    data[len(data) // 2] ^= 0xFF
    with open(entry.extras, "r+b") as f:
        f.write(bytes(data))
    os.utime(entry.extras, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert entry.extras.stat().st_size == status.st_size
    assert cache.validate(build_id) is None
    assert cache.get_or_build(build_id, str(binary)).extras.read_bytes() == good


def test_a_forged_record_does_not_skip_the_check(tmp_path: Path) -> None:
    binary = program("c-O2")
    build_id = build_id_of(binary)
    cache = GsymCache(tmp_path)
    entry = cache.get_or_build(build_id, str(binary))
    entry.gsym.with_suffix(".verified").write_text("1:2:3:4 5:6:7:8\n")
    data = bytearray(entry.gsym.read_bytes())
    data[len(data) // 2] ^= 0xFF
    entry.gsym.write_bytes(bytes(data))
    assert cache.validate(build_id) is None


def test_a_build_shows_its_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """`symbolize --gsym-cache=build` draws how the conversion goes on a terminal
    (stderr a pty), erased when done; through a pipe stderr stays clean."""
    import pty
    import sys

    binary = program("c-O2")
    build_id = build_id_of(binary)
    log = (
        f"{{{{{{module:0:prog:elf:{build_id}}}}}}}\n"
        "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}\n"
        "{{{bt:0:0x1010:pc}}}\n"
    )
    command = [
        sys.executable,
        "-m",
        "stackmark",
        "symbolize",
        "--gsym-cache=build",
        f"--obj={binary}",
    ]

    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [*command, f"--gsym-cache-dir={tmp_path / 'tty'}"],
            input=log.encode(),
            stdout=subprocess.PIPE,
            stderr=slave,
            check=True,
        )
        os.close(slave)
        slave = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the pty's other end is closed and read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert b"#0" in proc.stdout
    assert b"converting DWARF units: 1/" in drawn
    assert b"writing GSYM: " in drawn
    assert b"\rindexing names and columns: 1/1\x1b[K" in drawn
    assert drawn.endswith(b"\r\x1b[K")  # the status line is erased at the end

    piped = subprocess.run(
        [*command, f"--gsym-cache-dir={tmp_path / 'pipe'}"],
        input=log.encode(),
        capture_output=True,
        check=True,
    )
    assert piped.stdout == proc.stdout
    assert b"\x1b[K" not in piped.stderr and b"indexing" not in piped.stderr


def test_a_failure_on_the_column_thread_reaches_the_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The column points are sorted on another thread during the encoding: what
    fails there fails the build (no entry is left), and the next build succeeds."""
    from stackmark._native import forced_pure
    from stackmark.errors import StackmarkError
    from stackmark.formats.gsym.from_dwarf import ExtrasCollector

    binary = program("c-O2")
    build_id = build_id_of(binary)
    threads: list[str] = []

    def failing(self: ExtrasCollector) -> None:
        import threading

        threads.append(threading.current_thread().name)
        raise StackmarkError("no memory for the column points")

    cache = GsymCache(tmp_path)
    with monkeypatch.context() as patched:
        patched.setattr(ExtrasCollector, "column_points", failing)
        with pytest.raises(StackmarkError, match="no memory for the column points"):
            cache.get_or_build(build_id, str(binary))
    # Pure Python sorts on the builder's own thread (no lock is let go meanwhile).
    assert threads == ["MainThread" if forced_pure() else "stackmark column points"]
    assert not any(path.exists() for path in cache.entry_paths(build_id)[:2])
    assert cache.get_or_build(build_id, str(binary)).gsym.read_bytes()[:4] == b"MYSG"


def test_a_conversion_failing_after_the_dwarf_leaves_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The symbol table fails while the column points are sorted: the build
    raises that error, after the sorting thread ended."""
    import threading
    import time

    from stackmark.errors import StackmarkError
    from stackmark.formats.gsym import convert
    from stackmark.formats.gsym.from_dwarf import ExtrasCollector

    def failing(creator: object, elf: object) -> int:
        raise StackmarkError("the symbol table is damaged")

    sort = ExtrasCollector.column_points

    def slow_sort(self: ExtrasCollector) -> object:
        time.sleep(0.3)  # still sorting when the symbol table fails
        return sort(self)

    monkeypatch.setattr(convert, "add_symbol_table", failing)
    monkeypatch.setattr(ExtrasCollector, "column_points", slow_sort)
    binary = program("c-O2")
    with pytest.raises(StackmarkError, match="the symbol table is damaged"):
        GsymCache(tmp_path).get_or_build(build_id_of(binary), str(binary))
    assert not [t for t in threading.enumerate() if t.name == "stackmark column points"]


KEPT_SCRIPT = """
import atexit, sys
from stackmark import process_end
from stackmark.cli.main import entry
atexit.register(lambda: print("exit handler ran; kept", len(process_end._kept), flush=True))
sys.argv = ["stackmark", *sys.argv[1:]]
entry()
"""


def test_a_command_line_build_keeps_its_heap_to_the_end(tmp_path: Path) -> None:
    """`symbolize --gsym-cache=build` keeps the conversion's objects for the
    process's quick end instead of freeing them one by one: every answer is still
    written, exit handlers still run, and a run with the entry already built keeps
    nothing."""
    import sys

    binary = program("c-O2")
    log = (
        f"{{{{{{module:0:prog:elf:{build_id_of(binary)}}}}}}}\n"
        "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}\n" + "{{{bt:0:0x1010:pc}}}\n" * 3000
    )
    options = ["symbolize", "--gsym-cache=build", f"--obj={binary}", f"--gsym-cache-dir={tmp_path}"]

    def run() -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-c", KEPT_SCRIPT, *options],
            input=log,
            capture_output=True,
            text=True,
            check=True,
        )
        return proc.stdout.splitlines()

    built, used = run(), run()
    assert built[-1] == "exit handler ran; kept 1" and used[-1] == "exit handler ran; kept 0"
    assert built[:-1] == used[:-1]
    assert sum(line.lstrip().startswith("#0 ") for line in built) == 3000


def test_a_cache_build_finds_a_dwz_file_where_the_symbolizer_does(tmp_path: Path) -> None:
    """A program's dwz supplementary file is only in the debug-file directory the user
    gave (its link names another machine's path). The GSYM cache entry is converted
    with that file, found as the DWARF source finds it, so `--gsym-cache=build`
    prints exactly what DWARF does, names dwz moved included."""
    import sys

    from tests.support.dwz import dwz_in_debug_directory
    from tests.support.symbolizer_oracle import line_table_addresses

    compressed, original, debug_dir = dwz_in_debug_directory(tmp_path)
    build_id = build_id_of(compressed)
    addresses = line_table_addresses(original, limit=1500)
    log = "".join(
        [
            f"{{{{{{module:0:{compressed.name}:elf:{build_id}}}}}}}\n",
            "{{{mmap:0x100000000:0x100000:load:0:rx:0x0}}}\n",
            *(f"{{{{{{bt:{n}:0x{0x100000000 + a:x}:pc}}}}}}\n" for n, a in enumerate(addresses)),
        ]
    )

    def symbolize(*options: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "stackmark", "symbolize", f"--obj={compressed}", *options],
            input=log,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    cache_dir = tmp_path / "cache"
    through_gsym = symbolize(
        f"--debug-file-directory={debug_dir}",
        "--gsym-cache=build",
        f"--gsym-cache-dir={cache_dir}",
    )
    assert GsymCache(cache_dir).validate(build_id) is not None  # the entry answered
    through_dwarf = symbolize(f"--debug-file-directory={debug_dir}", "--gsym-cache=off")
    assert through_gsym == through_dwarf
    # Without that directory the names dwz moved are lost: the test needs the file.
    assert symbolize("--gsym-cache=off") != through_dwarf
