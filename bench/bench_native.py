"""The compiled accelerator against the pure-Python reference and llvm, on the cold paths.

    python bench/bench_native.py [--repeat N] [--convert-repeat N] [--skip-convert]
                                  [--skip-cache-build]

Every row runs stackmark twice, with its compiled kernels (the default) and
forced pure (STACKMARK_PURE=1), and llvm's tool in the same run, round robin,
so that all three see the same machine load (benchmark binary and logs as
bench_markup.py makes them):

1. the 100,000-line log with no GSYM cache (the DWARF path), against
   `llvm-symbolizer-19 --filter-markup`: wall time and peak memory;
2. the one-frame log (first answer: start-up and one cold lookup), bytecode
   compiled as an install leaves it;
3. the 100,000-line log with `--gsym-cache=build` into an empty cache
   (conversion included), against llvm-symbolizer-19 on the same log;
4. `stackmark gsym convert -j 1 big-O2` against `llvm-gsymutil-19 --convert
   --num-threads=1`: CPU time, and whether the three files are identical.

Prints Markdown; the figures in docs/benchmarks.md come from it.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_markup import LLVM, ensure_logs  # noqa: E402
from inputs import BIG, ensure_big  # noqa: E402
from measure import Run, Summary, load_average, measure_round_robin, run_once, table  # noqa: E402

PURE = ["env", "STACKMARK_PURE=1"]
COMPILED = ["env", "STACKMARK_PURE="]


def _symbolize(*options: str) -> list[str]:
    debug = ["--debug-file-directory", str(BIG / "debugdir")]
    return [sys.executable, "-m", "stackmark", "symbolize", *debug, *options]


def _ratios(rows: list[Summary], reference: Summary) -> str:
    return "; ".join(
        f"{row.label}: {row.wall / reference.wall:.2f}x wall, {row.cpu / reference.cpu:.2f}x CPU,"
        f" {row.max_rss_mib / reference.max_rss_mib:.2f}x peak RSS"
        for row in rows
    )


def logs(repeat: int) -> None:
    one_log, big_log = ensure_logs()
    llvm = [LLVM, "--filter-markup", "--debug-file-directory", str(BIG / "debugdir")]
    for title, log, rounds in (
        ("100,000-line log, no cache (DWARF)", big_log, repeat),
        ("one-frame log (first answer)", one_log, max(repeat, 10)),
    ):
        rows = measure_round_robin(
            [
                ("llvm-symbolizer-19 --filter-markup", llvm),
                ("stackmark, compiled kernels", [*COMPILED, *_symbolize("--gsym-cache=off")]),
                ("stackmark, pure Python", [*PURE, *_symbolize("--gsym-cache=off")]),
            ],
            log,
            rounds,
        )
        print(f"### {title} (load average {load_average()})\n")
        print(table(rows))
        print(f"\n- against llvm: {_ratios(rows[1:], rows[0])}\n")


def cache_build(repeat: int) -> None:
    _, big_log = ensure_logs()
    llvm = [LLVM, "--filter-markup", "--debug-file-directory", str(BIG / "debugdir")]
    runs: dict[str, list[Run]] = {"llvm": [], "compiled": [], "pure": []}
    for _ in range(repeat):
        runs["llvm"].append(run_once(llvm, big_log))
        for name, env in (("compiled", COMPILED), ("pure", PURE)):
            cache = Path(tempfile.mkdtemp(prefix="bench-native-gsym-"))
            try:
                command = [*env, *_symbolize(f"--gsym-cache-dir={cache}", "--gsym-cache=build")]
                runs[name].append(run_once(command, big_log))
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    rows = [
        Summary("llvm-symbolizer-19 --filter-markup", runs["llvm"]),
        Summary("stackmark --gsym-cache=build (empty cache), compiled", runs["compiled"]),
        Summary("stackmark --gsym-cache=build (empty cache), pure Python", runs["pure"]),
    ]
    print(f"### 100,000-line log, GSYM cache built (load average {load_average()})\n")
    print(table(rows))
    print(f"\n- against llvm: {_ratios(rows[1:], rows[0])}\n")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def convert(repeat: int) -> None:
    out = Path(tempfile.mkdtemp(prefix="bench-native-convert-"))
    try:
        binary = BIG / "big-O2"
        commands = [
            (
                "llvm-gsymutil-19 --convert --num-threads=1",
                ["llvm-gsymutil-19", "--convert", str(binary), "--num-threads=1", "-o"],
                out / "llvm.gsym",
            ),
            (
                "stackmark gsym convert -j 1, compiled",
                [
                    *COMPILED,
                    sys.executable,
                    "-m",
                    "stackmark",
                    "gsym",
                    "convert",
                    "-j",
                    "1",
                    "--quiet",
                    str(binary),
                    "-o",
                ],
                out / "compiled.gsym",
            ),
            (
                "stackmark gsym convert -j 1, pure Python",
                [
                    *PURE,
                    sys.executable,
                    "-m",
                    "stackmark",
                    "gsym",
                    "convert",
                    "-j",
                    "1",
                    "--quiet",
                    str(binary),
                    "-o",
                ],
                out / "pure.gsym",
            ),
        ]
        runs: dict[str, list[Run]] = {label: [] for label, _, _ in commands}
        for _ in range(repeat):
            for label, command, target in commands:
                runs[label].append(run_once([*command, str(target)], Path("/dev/null")))
        rows = [Summary(label, runs[label]) for label, _, _ in commands]
        print(f"### gsym convert big-O2, one thread (load average {load_average()})\n")
        print(table(rows))
        digests = {target.name: _digest(target) for _, _, target in commands}
        same = len(set(digests.values())) == 1
        print(f"\n- CPU against llvm-gsymutil: {_ratios(rows[1:], rows[0])}")
        print(f"- files identical: {'yes' if same else 'NO'} ({digests})\n")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the log runs")
    parser.add_argument("--convert-repeat", type=int, default=1, help="rounds of conversion")
    parser.add_argument("--skip-convert", action="store_true", help="no conversion rows")
    parser.add_argument(
        "--skip-cache-build", action="store_true", help="no --gsym-cache=build rows"
    )
    args = parser.parse_args()
    ensure_big()
    logs(args.repeat)
    if not args.skip_cache_build:
        cache_build(args.repeat)
    if not args.skip_convert:
        convert(args.convert_repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
