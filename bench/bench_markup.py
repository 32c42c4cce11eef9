"""Benchmark: `stackmark symbolize` against `llvm-symbolizer-19 --filter-markup`.

Both run in the same session on the same inputs, over the large generated
binary (`build_big.sh`: ~20k functions, 34 MB of .debug_info):

* first answer: a crash log with one context (reset, module, mmaps) and a
  single `bt` line: start-up plus the first lookup in a cold process;
* a 100,000-line service log (`gen_markup_log.py`, ~30% markup lines,
  a fresh context per crash, ASLR bases).

For each: wall time, CPU time and peak RSS (median of the runs). Then a
profile of stackmark on the 100k log says where its time goes. Results are
printed as Markdown and saved to bench/work/results/markup.json.

    python bench/bench_markup.py [--repeat N] [--big-repeat N] [--no-profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

from inputs import BIG, WORK, addresses, ensure_big, markup_log  # noqa: E402
from measure import Summary, load_average, measure, measure_round_robin, table  # noqa: E402

OUT = WORK / "markup"
RESULTS = WORK / "results"
LLVM = "llvm-symbolizer-19"


def ensure_logs() -> tuple[Path, Path]:
    """(one-frame log, 100k-line log), generated once."""
    OUT.mkdir(parents=True, exist_ok=True)
    addrs = OUT / "addrs-O2.txt"
    big_log = OUT / "log-100k.txt"
    one_log = OUT / "log-1.txt"
    addresses(BIG / "big-O2", addrs)
    markup_log([(BIG / "big-O2", addrs)], 100000, big_log)
    if not one_log.exists():
        lines = big_log.read_text().splitlines()
        context = []
        for line in lines:
            if line.startswith("{{{"):
                context.append(line)
            elif context:
                break
        first_bt = next(line for line in lines if "{{{bt:" in line)
        one_log.write_text("\n".join([*context, first_bt]) + "\n")
    return one_log, big_log


GSYM_CACHE = OUT / "gsym-cache"
LLVM_ROW = "llvm-symbolizer-19 --filter-markup"
DWARF_ROW = "stackmark symbolize (DWARF)"
COMPAT_ROW = "stackmark symbolize --compat=llvm19 (DWARF)"
GSYM_ROW = "stackmark symbolize (GSYM cache built)"


def commands() -> dict[str, list[str]]:
    debug = ["--debug-file-directory", str(BIG / "debugdir")]
    stackmark = [sys.executable, "-m", "stackmark", "symbolize", *debug]
    return {
        LLVM_ROW: [LLVM, "--filter-markup", *debug],
        DWARF_ROW: [*stackmark, "--gsym-cache=off"],
        COMPAT_ROW: [*stackmark, "--gsym-cache=off", "--compat=llvm19"],
        GSYM_ROW: [*stackmark, f"--gsym-cache-dir={GSYM_CACHE}"],
    }


def build_gsym_cache(one_log: Path) -> float | None:
    """Build the GSYM cache entry for big-O2 (again, if it is missing or stale);
    the seconds it took, None when a sound entry was there."""
    from stackmark.elf import ElfFile
    from stackmark.symbols.cache import GsymCache

    with ElfFile.open(BIG / "big-O2") as elf:
        build_id = elf.build_id
    assert build_id is not None
    if GsymCache(GSYM_CACHE).validate(build_id) is not None:
        return None
    cmd = [*commands()[GSYM_ROW], "--gsym-cache=build"]
    return measure("build", cmd, one_log, 1).wall


def compare_outputs(log: Path) -> int:
    """How many lines of stackmark's --compat=llvm19 output differ from llvm's on `log`."""
    cmds = commands()
    with open(log, "rb") as f:
        ours = subprocess.run(cmds[COMPAT_ROW], stdin=f, capture_output=True).stdout
    with open(log, "rb") as f:
        theirs = subprocess.run(cmds[LLVM_ROW], stdin=f, capture_output=True).stdout
    a, b = ours.split(b"\n"), theirs.split(b"\n")
    return sum(x != y for x, y in zip(a, b, strict=False)) + abs(len(a) - len(b))


BUCKETS = (
    ("/stackmark/dwarf/", "DWARF reading (stackmark/dwarf)"),
    ("/stackmark/formats/gsym/", "GSYM reading (stackmark/formats/gsym)"),
    ("/stackmark/symbols/", "symbol lookup and caches (stackmark/symbols)"),
    ("/stackmark/elf", "ELF reading (stackmark/elf.py)"),
    ("demangle", "demangling"),
    ("/stackmark/markup/", "markup: parse, context, render (stackmark/markup)"),
    ("/stackmark/cli/", "CLI: line I/O (stackmark/cli)"),
)


def profile(log: Path, *options: str) -> list[tuple[str, float]]:
    """Where stackmark's time goes on `log`: own time per package, in seconds.

    Runs in a fresh process (caches of an earlier run in this one, such as
    the demangler's, would hide work)."""
    proc = subprocess.run(
        [sys.executable, __file__, "--profile-worker", str(log), *options],
        capture_output=True,
        text=True,
        check=True,
    )
    return [(label, seconds) for label, seconds in json.loads(proc.stdout)]


def profile_worker(log: Path, options: list[str]) -> list[tuple[str, float]]:
    from stackmark.cli import symbolize

    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    args = parser.parse_args(["--debug-file-directory", str(BIG / "debugdir"), *options, str(log)])
    profiler = cProfile.Profile()
    with open(log, "rb") as stream, open(os.devnull, "wb") as sink:
        profiler.enable()
        symbolize.run_streams(
            [(str(log), stream)],
            sink,
            lambda _text: None,
            args,
            symbolize._make_symbolizer(args),
            symbolize._make_naming(args),
        )
        profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    totals: dict[str, float] = {}
    for (filename, _line, _name), entry in stats.stats.items():  # type: ignore[attr-defined]
        own = entry[2]
        bucket = "Python built-ins and standard library"
        for needle, label in BUCKETS:
            if needle in filename:
                bucket = label
                break
        else:
            if "elftools" in filename:
                bucket = "pyelftools"
            elif "cxxfilt" in filename:
                bucket = "demangling"
        totals[bucket] = totals.get(bucket, 0.0) + own
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of the one-frame log")
    ap.add_argument("--big-repeat", type=int, default=3, help="runs of the 100k-line log")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile-worker", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.profile_worker:
        log, *options = args.profile_worker
        print(json.dumps(profile_worker(Path(log), options)))
        return 0

    ensure_big()
    one_log, big_log = ensure_logs()
    results: dict[str, object] = {}
    built = build_gsym_cache(one_log)
    if built is not None:
        print(f"GSYM cache entry for big-O2 built in {built:.1f} s (once per binary)\n")
        results["gsym_cache_build_s"] = round(built, 1)
    print("## markup filter: first answer (one bt line over big-O2)\n")
    print(f"(load average at start: {load_average()})\n")
    first = measure_round_robin(list(commands().items()), one_log, args.repeat)
    print(table(first) + "\n", flush=True)
    empty = OUT / "empty.txt"
    empty.write_text("")
    startup_rows = [(LLVM_ROW, commands()[LLVM_ROW]), (DWARF_ROW, commands()[DWARF_ROW])]
    startup = measure_round_robin(startup_rows, empty, args.repeat)
    print("start-up alone (empty input):\n")
    print(table(startup) + "\n", flush=True)
    print("## markup filter: 100,000-line log over big-O2\n")
    big = measure_round_robin(list(commands().items()), big_log, args.big_repeat)
    print(table(big) + "\n", flush=True)
    differing = compare_outputs(big_log)
    print(f"--compat=llvm19 vs llvm on the 100k log: {differing} output lines differ\n")
    results["first_answer"] = [_summary(s) for s in first]
    results["startup"] = [_summary(s) for s in startup]
    results["log_100k"] = [_summary(s) for s in big]
    results["compat_lines_differing_100k"] = differing
    if not args.no_profile:
        for name, options in (
            ("DWARF", ("--gsym-cache=off",)),
            ("GSYM cache built", (f"--gsym-cache-dir={GSYM_CACHE}",)),
        ):
            shares = profile(big_log, *options)
            total = sum(t for _, t in shares)
            print(f"## where stackmark's time goes on the 100k log, {name} (cProfile, own time)\n")
            print("| part | seconds | share |\n| --- | ---: | ---: |")
            for label, seconds in shares:
                print(f"| {label} | {seconds:.2f} | {100 * seconds / total:.0f}% |")
            print()
            results[f"profile_100k_{name}"] = shares
    print(f"(load average at end: {load_average()})\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "markup.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _summary(s: Summary) -> dict[str, object]:
    return {
        "command": s.label,
        "wall_s": round(s.wall, 4),
        "cpu_s": round(s.cpu, 4),
        "max_rss_mib": round(s.max_rss_mib, 1),
        "runs": len(s.runs),
    }


if __name__ == "__main__":
    sys.exit(main())
