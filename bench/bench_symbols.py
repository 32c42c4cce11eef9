"""Address mode: `llvm-symbolizer-stackmark --obj` against llvm-symbolizer-19, same run.

    .venv/bin/python bench/bench_symbols.py [--binary bench/work/big/big-O2] [--runs 7]

Measures both tools in llvm-symbolizer's plain address mode, round robin
(each command once per round), on the same binary and addresses:

* first answer: one address on the command line, fresh process
  (interpreter start-up and imports included);
* N random addresses (gen_addrs.py: uniform over functions) through stdin,
  giving the cost per address once the process is up (CPU less the first
  answer's).

stackmark is the console script installed beside this Python, started as
a user or a sanitizer starts it, reading DWARF as llvm does
(`--gsym-cache=off`). Figures are medians (wall, and CPU: user + system,
from wait4), peak RSS the largest of the runs. Byte code is compiled
first (bytecode.py). Build the binary with
`bash ../shared/tools/build_big.sh bench/work`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from inputs import BIG, TOOLS  # noqa: E402
from inputs import addresses as make_addresses  # noqa: E402
from measure import Summary, load_average, measure_round_robin  # noqa: E402

OURS = Path(sys.executable).parent / "llvm-symbolizer-stackmark"
"""The console script, installed beside the Python running the benchmark."""

Command = tuple[str, list[str]]


def commands(binary: Path) -> list[Command]:
    """(label, command line) of each tool, without the address."""
    return [
        ("llvm-symbolizer-19", ["llvm-symbolizer-19", f"--obj={binary}"]),
        ("llvm-symbolizer-stackmark", [str(OURS), f"--obj={binary}", "--gsym-cache=off"]),
    ]


def report(
    tools: Sequence[Command], addresses: list[str], counts: Sequence[int], runs: int
) -> None:
    """Print one Markdown table: a row per measurement, a column per tool."""
    print(f"load average {load_average()} (1 min); medians, CPU is user + system")
    print("| measurement | " + " | ".join(label for label, _ in tools) + " |")
    print("| --- |" + " --- |" * len(tools))
    with tempfile.TemporaryDirectory() as work:
        empty = Path(work) / "empty"
        empty.write_text("")
        first = measure_round_robin(
            [(label, [*cmd, addresses[0]]) for label, cmd in tools], empty, runs
        )
        python = measure_round_robin([("python", [sys.executable, "-c", "pass"])], empty, runs)
        print(_row("first answer (1 address, fresh process)", first, None, 0))
        print(
            f"| (`python -c pass`: {python[0].wall * 1e3:.0f} ms wall, "
            f"{python[0].cpu * 1e3:.0f} ms CPU) |" + " |" * len(tools)
        )
        for count in counts:
            stdin = Path(work) / f"addresses-{count}"
            stdin.write_text("\n".join(addresses[:count]) + "\n")
            many = measure_round_robin(tools, stdin, max(1, runs // 3))
            print(_row(f"{count} random addresses", many, first, count))


def _row(title: str, rows: list[Summary], first: list[Summary] | None, count: int) -> str:
    cells = []
    for index, summary in enumerate(rows):
        cell = (
            f"{summary.wall * 1e3:.0f} ms wall, {summary.cpu * 1e3:.0f} ms CPU, "
            f"{summary.max_rss_mib:.0f} MiB"
        )
        if first is not None and count:
            per = (summary.cpu - first[index].cpu) / count * 1e6
            cell += f" ({per:.0f} µs CPU/address)"
        cells.append(cell)
    return f"| {title} | " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--binary", default=str(BIG / "big-O2"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--counts", default="1000,10000")
    args = parser.parse_args()
    binary = Path(args.binary)
    if not binary.exists():
        print(f"{binary} is missing: bash {TOOLS}/build_big.sh {BIG.parent}", file=sys.stderr)
        return 1
    counts = [int(c) for c in args.counts.split(",")]
    addresses_file = make_addresses(
        binary, BIG.parent / f"symbols-addrs-{max(counts)}.txt", count=max(counts)
    )
    addresses = addresses_file.read_text().split()
    print(f"binary: {binary} ({binary.stat().st_size / 1e6:.0f} MB)")
    report(commands(binary), addresses, counts, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
