"""GSYM: conversion and lookups on the large generated binary, against llvm's tools.

    python bench/bench_gsym.py            (part of `make bench`)

Needs bench/work/big/big-O2 (built by ../shared/tools/build_big.sh when
missing). Measured in the same run, on the same machine:

1. conversion: `llvm-gsymutil-19 --convert` (one thread, and its default
   threads) against `stackmark gsym convert` (and the cache build, which
   adds the extras file): time, file size, identical bytes;
2. 10,000 random code addresses (../shared/tools/gen_addrs.py, seed 42):
   - stackmark from the warm GSYM cache (a fresh process: start-up,
     imports, lookups, printing one line per frame);
   - `llvm-symbolizer-19` on the DWARF;
   - `llvm-gsymutil-19 --addresses-from-stdin` on the GSYM;
   - `stackmark gsym lookup --addresses-from-stdin` (plain GSYM decoding,
     no extras index) for reference.

`--lookups-only` skips part 1 and uses the cache entry bench_markup.py builds;
`--convert-only` runs part 1 alone.

Prints Markdown; the figures in docs/benchmarks.md come from it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

BIG = HERE / "work" / "big" / "big-O2"
PY = sys.executable


def child() -> int:
    """Symbolize addresses from stdin through the GSYM cache (run as a fresh process)."""
    from stackmark.elf import ElfFile
    from stackmark.symbols.cache import GsymCache
    from stackmark.symbols.gsym_source import GsymSource
    from stackmark.symbols.source import ModuleFiles

    cache_dir, binary = sys.argv[2], sys.argv[3]
    with ElfFile.open(binary) as elf:
        build_id = elf.build_id or ""
    entry = GsymCache(cache_dir).validate(build_id)
    if entry is None:
        print("cache entry missing", file=sys.stderr)
        return 1
    # With the identity the cache checked, as `gsym_source_factory` passes it: a
    # warm run does not compute the two files' CRC-32s again.
    source = GsymSource(
        str(entry.gsym), str(entry.extras), ModuleFiles(build_id, binary), entry.identity
    )
    out = []
    for line in sys.stdin:
        addr = int(line, 16)
        for f in source.frames_at(addr):
            out.append(f"{f.function} {f.file}:{f.line}:{f.column}\n")
        out.append("\n")
    sys.stdout.write("".join(out))
    return 0


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a command, its worker processes included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(lookups_only: bool = False, convert_only: bool = False) -> int:
    # Here, not at the top: the child (a fresh process per measurement)
    # should pay for stackmark's imports only.
    from inputs import addresses, ensure_big
    from measure import measure, table

    ensure_big()
    tmp = Path(tempfile.mkdtemp(prefix="bench-gsym-"))
    addrs = addresses(BIG, tmp / "addrs.txt")
    print(
        f"Binary: {BIG.relative_to(REPO)} ({BIG.stat().st_size / 1e6:.0f} MB), "
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n"
    )

    if lookups_only:
        # Part 2 alone, from a cache entry already built (bench_markup's or
        # bench_gsym_log's); its GSYM is the bytes llvm-gsymutil writes.
        from bench_markup import GSYM_CACHE

        cache_dir = GSYM_CACHE
        llvm1 = next(cache_dir.rglob("*.gsym"))
    else:
        cache_dir, llvm1 = convert(tmp)
        if convert_only:
            return 0
    lookups(tmp, addrs, cache_dir, llvm1, measure, table)
    return 0


def convert(tmp: Path) -> tuple[Path, Path]:
    """Part 1: conversion timings; (cache directory, llvm-gsymutil's GSYM)."""
    llvm1 = tmp / "llvm-1.gsym"
    llvm_n = tmp / "llvm-n.gsym"
    ours = tmp / "ours.gsym"
    t_llvm1 = timed(
        ["llvm-gsymutil-19", "--convert", str(BIG), "--num-threads=1", "-o", str(llvm1)]
    )
    t_llvm_n = timed(["llvm-gsymutil-19", "--convert", str(BIG), "-o", str(llvm_n)])
    t_ours = timed([PY, "-m", "stackmark", "gsym", "convert", str(BIG), "-o", str(ours), "--quiet"])
    cache_dir = tmp / "cache"
    t_cache = timed(
        [
            PY,
            "-c",
            "import sys; from stackmark.symbols.cache import GsymCache; "
            "from stackmark.elf import ElfFile; b=sys.argv[1]; "
            "GsymCache(sys.argv[2]).get_or_build(ElfFile.open(b).build_id, b)",
            str(BIG),
            str(cache_dir),
        ]
    )
    same = ours.read_bytes() == llvm1.read_bytes()
    extras = next(cache_dir.rglob("*.gsymx"))
    print("### Conversion\n")
    print("| converter | wall | CPU | output |")
    print("| --- | ---: | ---: | ---: |")
    rows = [
        ("llvm-gsymutil-19 --convert --num-threads=1", t_llvm1, llvm1, ""),
        ("llvm-gsymutil-19 --convert (default threads)", t_llvm_n, llvm_n, ""),
        (
            "stackmark gsym convert (pure Python, one process per core)",
            t_ours,
            ours,
            ", identical bytes" if same else ", DIFFERENT bytes",
        ),
    ]
    for label, (wall, cpu), path, note in rows:
        print(
            f"| {label} | {wall:.2f} s | {cpu:.2f} s | {path.stat().st_size / 1e6:.2f} MB{note} |"
        )
    print(
        f"| stackmark cache build (GSYM + extras) | {t_cache[0]:.2f} s | {t_cache[1]:.2f} s | "
        f"+ {extras.stat().st_size / 1e6:.2f} MB extras |"
    )
    print(
        f"\nratio pure Python / llvm (default threads, the issue's 'about 0.9 s'): "
        f"{t_ours[0] / t_llvm_n[0]:.1f}x wall (target: within 10x), "
        f"{t_ours[1] / t_llvm_n[1]:.1f}x CPU; / llvm one thread: {t_ours[0] / t_llvm1[0]:.1f}x "
        f"wall, {t_ours[1] / t_llvm1[1]:.1f}x CPU (load average now {os.getloadavg()[0]:.1f})\n"
    )

    return cache_dir, llvm1


def lookups(tmp: Path, addrs: Path, cache_dir: Path, llvm1: Path, measure: Any, table: Any) -> None:
    """Part 2: 10,000 random addresses through each tool."""
    gsym_lines = tmp / "gsym-lines.txt"
    gsym_lines.write_text("".join(f"{a.strip()} {llvm1}\n" for a in addrs.read_text().split()))
    rows = [
        measure(
            "stackmark, warm GSYM cache",
            [PY, __file__, "--child", str(cache_dir), str(BIG)],
            addrs,
            5,
        ),
        measure("llvm-symbolizer-19 (DWARF)", ["llvm-symbolizer-19", "--obj", str(BIG)], addrs, 3),
        measure(
            "llvm-gsymutil-19 --addresses-from-stdin",
            ["llvm-gsymutil-19", "--addresses-from-stdin"],
            gsym_lines,
            5,
        ),
        measure(
            "stackmark gsym lookup --addresses-from-stdin (no index)",
            [PY, "-m", "stackmark", "gsym", "lookup", "--addresses-from-stdin"],
            gsym_lines,
            3,
        ),
    ]
    print("### 10,000 random code addresses\n")
    print(table(rows))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child())
    sys.exit(
        main(
            lookups_only="--lookups-only" in sys.argv[1:],
            convert_only="--convert-only" in sys.argv[1:],
        )
    )
