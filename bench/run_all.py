"""Run every benchmark in this directory (`make bench`).

A benchmark is a module `bench/bench_<name>.py` that runs as a script and
prints its figures (Markdown) to stdout; each one runs in its own process,
so that one's memory does not weigh on the next. Pass names (or parts of
names) to run only some:

    python bench/run_all.py              # all of them
    python bench/run_all.py markup gsym  # bench_markup.py, bench_gsym*.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover(selected: list[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if selected:
        found = [p for p in found if any(s in p.stem for s in selected)]
    return found


def main(argv: list[str]) -> int:
    benches = discover(argv)
    if not benches:
        print("no benchmark matches " + " ".join(argv), file=sys.stderr)
        return 2
    failed = []
    for path in benches:
        print(f"# {path.stem}\n", flush=True)
        start = time.perf_counter()
        status = subprocess.run([sys.executable, str(path)], cwd=HERE.parent).returncode
        print(f"({path.name}: {time.perf_counter() - start:.0f} s, exit status {status})\n")
        if status != 0:
            failed.append(path.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
