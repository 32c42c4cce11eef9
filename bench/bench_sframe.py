"""SFrame FRE lookups per second on a large binary built with -Wa,--gsframe.

    .venv/bin/python bench/bench_sframe.py [--lookups N] [--build-only]

The binary: the synthetic C++ program of shared/tools/gen_big_cpp.py (200
translation units, ~21,000 functions), compiled -O2 -g0 -Wa,--gsframe by
this machine's gcc 12 / binutils 2.40 (SFrame v1) into
bench/work/sframe-big/ (built once; two jobs; not while another big build
runs). Measured on the same random PCs:

- stackmark: section load (ELF + decode), FDE lookup, FDE+FRE+UnwindRow
  lookup, on the v1 section and on the same table re-encoded as v3;
- libsframe 2.40 (the reference, through ctypes): sframe_find_fre on the
  same v1 section, with a cross-check that both give the same CFA offset.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from inputs import BIG, TOOLS, WORK  # noqa: E402

from stackmark.elf import ElfFile  # noqa: E402
from stackmark.formats.sframe.lookup import SFrameTable  # noqa: E402
from stackmark.formats.sframe.reader import read_elf_sframe  # noqa: E402
from stackmark.formats.sframe.writer import encode_sframe, with_version  # noqa: E402

OUT = WORK / "sframe-big"
SHARED_SOURCES = BIG / "src"
GENERATOR = TOOLS / "gen_big_cpp.py"
BINARY = OUT / "big-O2-gsframe"


def _others_building() -> bool:
    """Another big compile on this 2-core machine (cc1plus of someone else)."""
    out = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout
    return any(line.strip() == "cc1plus" for line in out.splitlines())


def build() -> Path:
    if BINARY.exists():
        return BINARY
    sources = SHARED_SOURCES
    if not (sources / "main.cpp").exists():
        sources = OUT / "src"
        if not (sources / "main.cpp").exists():
            subprocess.run(
                [
                    sys.executable,
                    str(GENERATOR),
                    "--out",
                    str(sources),
                    "--tus",
                    "200",
                    "--funcs-per-tu",
                    "80",
                    "--seed",
                    "1",
                ],
                check=True,
            )
    while _others_building():
        print("waiting: another big build is running", file=sys.stderr)
        time.sleep(30)
    objects = OUT / "obj"
    objects.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    cpps = sorted(sources.glob("*.cpp"))
    pending = [c for c in cpps if not (objects / (c.stem + ".o")).exists()]
    running: list[subprocess.Popen[bytes]] = []
    for index, cpp in enumerate(pending):
        while len(running) >= 2:
            running[0].wait()
            running = [p for p in running if p.poll() is None]
        out = objects / (cpp.stem + ".o")
        running.append(
            subprocess.Popen(
                [
                    "g++",
                    "-std=c++17",
                    "-O2",
                    "-g0",
                    "-Wa,--gsframe",
                    "-c",
                    str(cpp),
                    "-o",
                    str(out) + ".tmp",
                    "-I",
                    str(sources),
                ]
            )
        )
        if index % 20 == 0:
            print(f"compiling {index}/{len(pending)}", file=sys.stderr)
    for proc in running:
        proc.wait()
    for tmp in objects.glob("*.o.tmp"):
        tmp.rename(tmp.with_suffix(""))
    subprocess.run(
        ["g++", "-Wl,--build-id=sha1", "-o", str(BINARY), *map(str, sorted(objects.glob("*.o")))],
        check=True,
    )
    print(f"built {BINARY} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return BINARY


class LibSFrame:
    """libsframe.so.0 (binutils 2.40) through ctypes: decode once, then find FREs."""

    def __init__(self, data: bytes):
        self.lib = ctypes.CDLL("libsframe.so.0")
        self.lib.sframe_decode.restype = ctypes.c_void_p
        self.lib.sframe_decode.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_int),
        ]
        self.lib.sframe_find_fre.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p]
        self.lib.sframe_fre_get_cfa_offset.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
        ]
        self.lib.sframe_fre_get_cfa_offset.restype = ctypes.c_int32
        self._data = ctypes.create_string_buffer(data, len(data))
        err = ctypes.c_int(0)
        self.ctx = self.lib.sframe_decode(self._data, len(data), ctypes.byref(err))
        if not self.ctx:
            raise RuntimeError(f"sframe_decode failed: {err.value}")
        self.fre = ctypes.create_string_buffer(64)  # sframe_frame_row_entry (20 bytes in 2.40)

    def cfa_offset(self, section_relative_pc: int) -> int | None:
        if self.lib.sframe_find_fre(self.ctx, section_relative_pc, self.fre) != 0:
            return None
        err = ctypes.c_int(0)
        value = self.lib.sframe_fre_get_cfa_offset(self.ctx, self.fre, ctypes.byref(err))
        return None if err.value else int(value)


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s ({seconds / count * 1e6:.2f} µs each)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookups", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure; the best counts")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args()
    if shutil.which("g++") is None:
        print("g++ is needed to build the benchmark binary", file=sys.stderr)
        return 1
    binary = build()
    if args.build_only:
        return 0

    started = time.perf_counter()
    with ElfFile.open(binary) as elf:
        section = read_elf_sframe(elf)
        raw = elf.section_data(".sframe")
        text = elf.section(".text")
    load_seconds = time.perf_counter() - started
    assert section is not None and text is not None
    started = time.perf_counter()
    SFrameTable.from_elf(binary)
    lazy_load_seconds = time.perf_counter() - started
    table = SFrameTable(section)

    rng = random.Random(1)
    fdes = [f for f in section.fdes if not f.is_pcmask]
    pcs = []
    for _ in range(args.lookups):
        fde = rng.choice(fdes)
        pcs.append(fde.start + rng.randrange(fde.size))

    def best(run: Callable[[], object]) -> float:
        """Seconds of the fastest of `args.repeat` runs (others share this machine)."""
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        return min(times)

    fde_seconds = best(lambda: [table.find_fde(pc) for pc in pcs])
    row_seconds = best(
        lambda: [
            fresh.row(pc) for fresh in [SFrameTable.from_bytes(raw, section.address)] for pc in pcs
        ]
    )
    rows = [table.row(pc) for pc in pcs]
    warm_seconds = best(lambda: [table.row(pc) for pc in pcs])

    v3_data = encode_sframe(with_version(section, 3))
    v3_seconds = best(
        lambda: [
            fresh.row(pc)
            for fresh in [SFrameTable.from_bytes(v3_data, section.address)]
            for pc in pcs
        ]
    )

    lib = LibSFrame(raw)
    relative = [pc - section.address for pc in pcs]
    theirs = [lib.cfa_offset(pc) for pc in relative]
    lib_seconds = best(lambda: [lib.cfa_offset(pc) for pc in relative])
    agree = sum(
        1
        for row, their in zip(rows, theirs, strict=True)
        if row is not None and their is not None and row.cfa_offset == their
    )

    size = binary.stat().st_size
    print(f"binary: {binary.name}, {size / 1e6:.1f} MB, .text {text.size / 1e6:.1f} MB")
    print(
        f".sframe v{section.version}: {len(raw):,} bytes, {len(section.fdes):,} FDEs, "
        f"{section.num_fres:,} FREs; as v3: {len(v3_data):,} bytes"
    )
    print(f"load, decoding every FRE (read_elf_sframe): {load_seconds * 1e3:.0f} ms")
    print(f"load, FREs decoded on use (SFrameTable.from_elf): {lazy_load_seconds * 1e3:.0f} ms")
    print(f"lookups: {len(pcs):,} random PCs inside functions, same PCs for every row below")
    print(f"| stackmark FDE only (v1) | {_rate(len(pcs), fde_seconds)} |")
    print(
        f"| stackmark FDE+FRE+UnwindRow (v1), fresh lazy table | {_rate(len(pcs), row_seconds)} |"
    )
    print(f"| stackmark FDE+FRE+UnwindRow (v1), same PCs again | {_rate(len(pcs), warm_seconds)} |")
    print(f"| stackmark FDE+FRE+UnwindRow (v3), fresh lazy table | {_rate(len(pcs), v3_seconds)} |")
    print(
        f"| libsframe 2.40 sframe_find_fre + CFA offset (ctypes) | {_rate(len(pcs), lib_seconds)} |"
    )
    print(f"agreement with libsframe on the CFA offset: {agree:,} of {len(pcs):,}")
    return 0 if agree == len(pcs) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
