"""GSYM conversion of a Mach-O .dSYM, against llvm-gsymutil-19.

    python bench/bench_gsym_macho.py      (part of `make bench`)

No Apple SDK is needed: a corpus of freestanding C (TUS translation units
of FUNCS functions each, every one with an inline chain three deep and a
loop) is generated, compiled by clang-19 for arm64-apple-macos11 with
`-g -O2`, linked by ld64.lld-19 and gathered into a .dSYM by dsymutil-19.
Measured in the same run: `llvm-gsymutil-19 --convert` (one thread, and
its default threads) and `stackmark gsym convert` (one process, and its
default), on the bundle: time, and whether the bytes are the same.

Prints Markdown; the figures in docs/benchmarks.md come from it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
TUS = 150
FUNCS = 40
COMPILE = ["clang-19", "-target", "arm64-apple-macos11", "-g", "-O2", "-c"]
LINK = ["ld64.lld-19", "-arch", "arm64", "-platform_version", "macos", "11.0", "11.0"]


def unit_source(unit: int) -> str:
    """One translation unit: FUNCS exported functions over a static inline chain."""
    lines = [
        f"static inline __attribute__((always_inline)) int leaf{unit}(int v) "
        "{ return v * 7 + 3; }",
        f"static inline __attribute__((always_inline)) int mid{unit}(int v) "
        f"{{ return leaf{unit}(v) ^ leaf{unit}(v >> 1); }}",
        f"static inline __attribute__((always_inline)) int top{unit}(int v) "
        f"{{ int s = 0; for (int i = 0; i < (v & 7); i++) s += mid{unit}(v + i); return s; }}",
    ]
    for k in range(FUNCS):
        lines.append(
            f"int fn_{unit}_{k}(int v) {{ int r = top{unit}(v + {k}); "
            f"if (r > {k * 13}) r -= mid{unit}(r); return r + {k}; }}"
        )
    return "\n".join(lines) + "\n"


def build(work: Path) -> Path:
    """The .dSYM bundle of the generated program (built once per work directory)."""
    bundle = work / "prog.dSYM"
    if bundle.exists():
        return bundle
    work.mkdir(parents=True, exist_ok=True)
    objects = []
    commands = []
    for unit in range(TUS):
        source = work / f"unit{unit}.c"
        source.write_text(unit_source(unit))
        obj = work / f"unit{unit}.o"
        objects.append(obj)
        commands.append([*COMPILE, str(source), "-o", str(obj)])
    entry = work / "entry.c"
    entry.write_text("int fn_0_0(int);\nint entry(void) { return fn_0_0(1); }\n")
    commands.append([*COMPILE, str(entry), "-o", str(work / "entry.o")])
    objects.append(work / "entry.o")
    with ThreadPoolExecutor(max_workers=2) as pool:
        for proc in pool.map(lambda c: subprocess.run(c, check=True), commands):
            proc.check_returncode()
    image = work / "prog"
    subprocess.run(
        [*LINK, "-e", "_entry", "-o", str(image), *map(str, objects)],
        check=True,
    )
    subprocess.run(["dsymutil-19", str(image), "-o", str(bundle)], check=True)
    return bundle


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a command, its worker processes included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    work = HERE / "work" / "macho" if (HERE / "work").is_dir() else None
    tmp = Path(tempfile.mkdtemp(prefix="bench-gsym-macho-"))
    bundle = build(work or tmp / "build")
    dwarf = next((bundle / "Contents" / "Resources" / "DWARF").iterdir())
    print(
        f"Input: a generated arm64 program's .dSYM ({TUS} units, {TUS * FUNCS} functions; "
        f"DWARF file {dwarf.stat().st_size / 1e6:.1f} MB), machine: {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}\n"
    )
    llvm1, llvm_n = tmp / "llvm-1.gsym", tmp / "llvm-n.gsym"
    ours1, ours_n = tmp / "ours-1.gsym", tmp / "ours-n.gsym"
    rows = [
        (
            "llvm-gsymutil-19 --convert --num-threads=1",
            ["llvm-gsymutil-19", "--convert", str(bundle), "--num-threads=1", "-o", str(llvm1)],
            llvm1,
        ),
        (
            "llvm-gsymutil-19 --convert (default threads)",
            ["llvm-gsymutil-19", "--convert", str(bundle), "-o", str(llvm_n)],
            llvm_n,
        ),
        (
            "stackmark gsym convert -j 1",
            [PY, "-m", "stackmark", "gsym", "convert", str(bundle), "-o", str(ours1), "-j", "1"],
            ours1,
        ),
        (
            "stackmark gsym convert (default)",
            [PY, "-m", "stackmark", "gsym", "convert", str(bundle), "-o", str(ours_n)],
            ours_n,
        ),
    ]
    print("| converter | wall | CPU | output |")
    print("| --- | ---: | ---: | ---: |")
    times = {}
    for label, cmd, out in rows:
        wall, cpu = timed(cmd)
        times[label] = (wall, cpu)
        note = ""
        if out in (ours1, ours_n):
            note = ", identical bytes" if out.read_bytes() == llvm1.read_bytes() else ", DIFFERENT"
        print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {out.stat().st_size / 1e3:.0f} kB{note} |")
    ours_wall, ours_cpu = times["stackmark gsym convert -j 1"]
    llvm_wall, llvm_cpu = times["llvm-gsymutil-19 --convert --num-threads=1"]
    print(
        f"\nstackmark -j 1 / llvm one thread: {ours_wall / llvm_wall:.1f}x wall, "
        f"{ours_cpu / llvm_cpu:.1f}x CPU (load average now {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
