"""GSYM against llvm-gsymutil-19 on programs compiled at test time.

For C and C++ at -O0 and -O2, PIE and not, DWARF 5 and 4 (inline chains,
a cold split, functions without DWARF, aliases, lambdas):

- our conversion is byte-identical to `llvm-gsymutil-19 --convert --num-threads=1`;
- our dump of llvm's file is llvm's dump, byte for byte;
- reading llvm's file and writing it again gives the same bytes;
- 1,000 addresses per binary look up the same with ours and llvm's, on
  llvm's file and on a big-endian copy that llvm reads;
- the CLI prints what llvm-gsymutil prints.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from stackmark.elf import SHF_EXECINSTR, ElfFile
from stackmark.formats.gsym import GsymLookupError, GsymReader, creator, parallel_records, reencode
from stackmark.formats.gsym.convert import convert_elf
from stackmark.formats.gsym.creator import encode_records
from stackmark.formats.gsym.dump import dump_text
from stackmark.formats.gsym.lookup import error_text
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.gsymutil import llvm_lookups

C_SOURCES = ["gsym_inline.c", "gsym_inline_b.c"]
CPP_SOURCES = ["gsym_cpp.cpp"]
VARIANTS = {
    "c-O0": ("gcc", C_SOURCES, ("-g", "-O0"), ()),
    "c-O2": ("gcc", C_SOURCES, ("-g", "-O2"), ()),
    "c-O2-nopie": ("gcc", C_SOURCES, ("-g", "-O2", "-fno-pie"), ("-no-pie",)),
    "c-O2-dwarf4": ("gcc", C_SOURCES, ("-gdwarf-4", "-O2"), ()),
    "cpp-O0": ("g++", CPP_SOURCES, ("-g", "-O0"), ()),
    "cpp-O2": ("g++", CPP_SOURCES, ("-g", "-O2"), ()),
    "cpp-O2-nopie": ("g++", CPP_SOURCES, ("-g", "-O2", "-fno-pie"), ("-no-pie",)),
}
GSYMUTIL = "llvm-gsymutil-19"


def build(variant: str) -> Path:
    compiler, sources, flags, link = VARIANTS[variant]
    return compile_program(
        f"gsym-{variant}", sources, compiler=compiler, flags=flags, link_flags=link
    )


def llvm_convert(binary: Path, out: Path) -> str:
    proc = subprocess.run(
        [require_tool(GSYMUTIL), "--convert", str(binary), "--num-threads=1", "-o", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def our_lookups(reader: GsymReader, addresses: list[int]) -> str:
    out = []
    for addr in addresses:
        try:
            out.append(reader.lookup(addr).text())
        except GsymLookupError as exc:
            out.append(error_text(addr, str(exc)))
        out.append("\n")
    return "".join(out)


def sample_addresses(binary: Path, reader: GsymReader, count: int = 1000) -> list[int]:
    """Function starts and ends, text section edges, and random addresses (mostly in text)."""
    rng = random.Random(binary.name)
    with ElfFile.open(binary) as elf:
        text = [(s.addr, s.addr + s.size) for s in elf.sections if s.flags & SHF_EXECINSTR]
    picks = {0, reader.base_address, reader.base_address - 1}
    for i in range(reader.num_addresses):
        start = reader.address(i)
        picks.update({start, start + 1, start - 1})
    for low, high in text:
        picks.update({low, high - 1, high})
    picks = {p for p in picks if p >= 0}
    low = max(0, min(lo for lo, _ in text) - 1024)
    high = max(hi for _, hi in text) + 1024
    while len(picks) < count:
        if rng.random() < 0.8:
            section_low, section_high = rng.choice(text)
            picks.add(rng.randrange(section_low, section_high))
        else:
            picks.add(rng.randrange(low, high))
    return sorted(picks)[:count]


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def converted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    variant = request.param
    binary = build(variant)
    out = tmp_path_factory.mktemp(variant) / "llvm.gsym"
    log = llvm_convert(binary, out)
    return variant, binary, out, log


def test_conversion_is_byte_identical(converted) -> None:
    variant, binary, llvm_gsym, _ = converted
    result = convert_elf(str(binary))
    expected = llvm_gsym.read_bytes()
    assert result.data == expected, f"{variant}: our GSYM differs from llvm-gsymutil's"


def test_conversion_in_worker_processes_is_identical(
    converted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Units converted in two processes, and the records encoded in forked ones
    (made to fork here however few the functions, in slices of one to three
    functions whose records end at any alignment)."""
    _, binary, llvm_gsym, _ = converted
    monkeypatch.setattr(parallel_records, "MIN_FUNCTIONS", 1)
    monkeypatch.setattr(parallel_records, "MIN_FUNCTIONS_COMPILED", 1)
    monkeypatch.setattr(parallel_records, "SLICES_PER_JOB", 3)
    # Other tests may have imported lldb into this process (which alone forbids
    # forking): this test is about the bytes of the forked path.
    monkeypatch.setattr(parallel_records, "EMBEDDING_MODULES", ())
    assert parallel_records.forking_is_safe(), "the test process runs threads: nothing forks"
    forked: list[int] = []
    real = parallel_records.ProcessPoolExecutor

    def counting_pool(*args, **kwargs):  # type: ignore[no-untyped-def]
        forked.append(kwargs["max_workers"])
        return real(*args, **kwargs)

    monkeypatch.setattr(parallel_records, "ProcessPoolExecutor", counting_pool)
    assert convert_elf(str(binary), jobs=2).data == llvm_gsym.read_bytes()
    assert forked == [2]


def test_a_worker_that_dies_leaves_the_rest_to_the_parent(
    converted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forked worker killed mid-encoding (out of memory, say): the slices not
    yet received are encoded in the parent, and the bytes are llvm's still."""
    _, binary, llvm_gsym, _ = converted
    monkeypatch.setattr(parallel_records, "MIN_FUNCTIONS", 1)
    monkeypatch.setattr(parallel_records, "MIN_FUNCTIONS_COMPILED", 1)
    monkeypatch.setattr(parallel_records, "EMBEDDING_MODULES", ())
    monkeypatch.setattr(parallel_records, "_encode_slice", _dies_after_the_first_slice)
    assert convert_elf(str(binary), jobs=2).data == llvm_gsym.read_bytes()


def _dies_after_the_first_slice(bounds: tuple[int, int]) -> tuple[bytes, list[int]]:
    """A worker's task that kills its process on any slice but the first (module
    level: the pool sends the task by name)."""
    if bounds[0] > 0:
        os._exit(9)  # only ever runs in a forked worker
    start, end = bounds
    return encode_records(parallel_records._functions[start:end], parallel_records._little)


def test_no_fork_beside_other_threads_or_inside_a_debugger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread holding a lock at a fork leaves it held in the child: the records
    are then encoded in this process."""
    monkeypatch.setattr(parallel_records, "EMBEDDING_MODULES", ())
    assert parallel_records.records_in_parallel(2) is not None
    assert parallel_records.records_in_parallel(1) is None
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert parallel_records.records_in_parallel(2) is None
    finally:
        stop.set()
        thread.join()
    monkeypatch.setattr(parallel_records, "EMBEDDING_MODULES", ("gdb",))
    monkeypatch.setitem(sys.modules, "gdb", types.ModuleType("gdb"))
    assert parallel_records.records_in_parallel(2) is None


def test_records_in_pieces_of_one_function_are_identical(
    converted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every record laid out on its own and joined at the next multiple of 4."""
    _, binary, llvm_gsym, _ = converted
    monkeypatch.setattr(creator, "PIECE_FUNCTIONS", 1)
    assert convert_elf(str(binary), jobs=1).data == llvm_gsym.read_bytes()


def test_dump_text_equals_llvm(converted) -> None:
    _, _, llvm_gsym, _ = converted
    theirs = subprocess.run(
        [require_tool(GSYMUTIL), str(llvm_gsym)], capture_output=True, text=True, check=True
    ).stdout
    with GsymReader.open(llvm_gsym) as reader:
        assert dump_text(reader) == theirs


def test_round_trip_is_byte_identical(converted) -> None:
    _, _, llvm_gsym, _ = converted
    with GsymReader.open(llvm_gsym) as reader:
        assert reencode(reader) == llvm_gsym.read_bytes()


def test_lookups_agree_on_1000_addresses(converted, tmp_path: Path) -> None:
    _, binary, llvm_gsym, _ = converted
    with GsymReader.open(llvm_gsym) as reader:
        addresses = sample_addresses(binary, reader)
        assert len(addresses) == 1000
        assert our_lookups(reader, addresses) == llvm_lookups(llvm_gsym, addresses)
        # A big-endian copy: llvm reads it the same, and so do we.
        big = tmp_path / "big-endian.gsym"
        big.write_bytes(reencode(reader, little=False))
    assert big.read_bytes()[:4] == b"GSYM"
    expected = llvm_lookups(llvm_gsym, addresses)
    assert llvm_lookups(big, addresses) == expected
    with GsymReader.open(big) as reader:
        assert not reader.little
        assert our_lookups(reader, addresses) == expected


def test_cli_matches_llvm_gsymutil(converted, tmp_path: Path) -> None:
    _, binary, llvm_gsym, llvm_log = converted
    stackmark = [sys.executable, "-m", "stackmark"]
    ours = tmp_path / "ours.gsym"
    proc = subprocess.run(
        [*stackmark, "gsym", "convert", str(binary), "-o", str(ours)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ours.read_bytes() == llvm_gsym.read_bytes()
    # Same log lines, apart from the file names.
    assert proc.stdout.splitlines()[2:] == llvm_log.splitlines()[2:]
    with GsymReader.open(llvm_gsym) as reader:
        addresses = sample_addresses(binary, reader)[:50]
    args = [f"0x{a:x}" for a in addresses]
    theirs = subprocess.run(
        [require_tool(GSYMUTIL), str(llvm_gsym), *[f"--address={a}" for a in args]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mine = subprocess.run(
        [*stackmark, "gsym", "lookup", str(llvm_gsym), *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert mine == theirs
    stdin = "".join(f"{a} {llvm_gsym}\n" for a in args)
    mine = subprocess.run(
        [*stackmark, "gsym", "lookup", "--addresses-from-stdin"],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert mine == llvm_lookups(llvm_gsym, addresses)
    verify = subprocess.run(
        [*stackmark, "gsym", "verify", str(ours), str(binary)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout
    assert ": OK" in verify.stdout


def test_merged_functions_and_call_sites_against_llvm19(tmp_path: Path) -> None:
    """Types 3 and 4 (LLVM 20+) added to llvm's own file: llvm-gsymutil-19's
    lookups skip them like ours, and `dump --llvm19` prints what it prints."""
    from stackmark.formats.gsym import encode_gsym
    from stackmark.formats.gsym.call_sites import CallSiteInfo

    binary = build("c-O2")
    llvm_gsym = tmp_path / "llvm.gsym"
    llvm_convert(binary, llvm_gsym)
    with GsymReader.open(llvm_gsym) as reader:
        infos = [reader.function_info(i) for i in range(reader.num_addresses)]
        for n, info in enumerate(infos):
            if n % 3 == 0:
                info.merged = [info.__class__(info.start, info.size, info.name)]
            if n % 2 == 0:
                info.call_sites = [CallSiteInfo(4, 1, [info.name])]
        data = encode_gsym(
            infos,
            files=reader.files(),
            strtab=reader.string_table_bytes(),
            uuid=reader.uuid,
            base_address=reader.base_address,
        )
        addresses = sample_addresses(binary, reader, 300)
    mixed = tmp_path / "mixed.gsym"
    mixed.write_bytes(data)
    with GsymReader.open(mixed) as reader:
        assert our_lookups(reader, addresses) == llvm_lookups(mixed, addresses)
        assert our_lookups(reader, addresses) == llvm_lookups(llvm_gsym, addresses)
        theirs = subprocess.run(
            [require_tool(GSYMUTIL), str(mixed)], capture_output=True, text=True, check=True
        ).stdout
        assert "unsupported InfoType 3" in theirs and "unsupported InfoType 4" in theirs
        assert dump_text(reader, llvm19=True) == theirs
        assert reencode(reader) == data


def test_convert_finds_a_dwz_file_in_a_debug_file_directory(tmp_path: Path) -> None:
    """`gsym convert --debug-file-directory` finds the dwz supplementary file a
    program's link names elsewhere; the GSYM is then the bytes llvm-gsymutil-19
    writes for the program before dwz (llvm reads no dwz file itself). Without
    the directory the names dwz moved are missing."""
    from tests.support.dwz import dwz_in_debug_directory

    gsymutil = require_tool("llvm-gsymutil-19")
    compressed, original, debug_dir = dwz_in_debug_directory(tmp_path)
    expected = tmp_path / "llvm.gsym"
    subprocess.run(
        [gsymutil, "--convert", str(original), "--out-file", str(expected), "--num-threads=1"],
        capture_output=True,
        check=True,
    )

    def convert(name: str, *options: str) -> bytes:
        out = tmp_path / name
        stackmark = [sys.executable, "-m", "stackmark", "gsym", "convert"]
        subprocess.run(
            [*stackmark, str(compressed), "-o", str(out), *options],
            capture_output=True,
            check=True,
        )
        return out.read_bytes()

    assert convert("with.gsym", f"--debug-file-directory={debug_dir}") == expected.read_bytes()
    assert convert("without.gsym") != expected.read_bytes()
