"""The fuzz driver: coverage-guided fuzzing of one target with atheris (libFuzzer).

    python -m tests.fuzz.run TARGET [--seconds S] [--runs N] [--seed K] [--corpus DIR]
    python -m tests.fuzz.run --all --seconds S       every target in turn (`make fuzz`)
    python -m tests.fuzz.run TARGET --replay FILE... run saved inputs, no fuzzing
    python -m tests.fuzz.run --list

Seeds come from the test fixtures (tests/fuzz/seeds.py, generated in a
separate process so that every stackmark module is imported, and therefore
instrumented, here). Inputs that grow coverage go to the corpus directory
(default build/fuzz/TARGET/corpus, kept between runs); a crash, a timeout
(--timeout seconds for one input) or memory past --rss-mb is saved as
build/fuzz/TARGET/artifacts/crash-*, timeout-* or oom-* and ends the run
with a non-zero status. Reproduce one with --replay. A summary line
`fuzz TARGET: N executions in S s, corpus C` is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.support.build import REPO

FUZZ_ROOT = REPO / "build" / "fuzz"


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__)
    parser.add_argument("target", nargs="?", help="target name (see --list)")
    parser.add_argument("--all", action="store_true", help="fuzz every target in turn")
    parser.add_argument("--list", action="store_true", help="list the targets")
    parser.add_argument("--seconds", type=float, default=60, help="time per target")
    parser.add_argument("--runs", type=int, default=-1, help="executions per target (-1: no cap)")
    parser.add_argument("--seed", type=int, default=0, help="libFuzzer's random seed (0: random)")
    parser.add_argument("--corpus", type=Path, help="corpus (default build/fuzz/TARGET/corpus)")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one input may take")
    parser.add_argument("--rss-mb", type=int, default=2048, help="memory limit of the fuzzer")
    parser.add_argument("--replay", nargs="+", type=Path, metavar="FILE", help="run these inputs")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(sys.argv[1:] if argv is None else argv)
    from tests.fuzz.targets import TARGETS  # not instrumented: only for names

    if args.list:
        for name, target in TARGETS.items():
            print(f"{name:12} {target.description}")
        return 0
    if args.all:
        status = 0
        for name in TARGETS:
            command = [sys.executable, "-m", "tests.fuzz.run", name, "--seconds", str(args.seconds)]
            command += ["--runs", str(args.runs), "--timeout", str(args.timeout)]
            command += ["--rss-mb", str(args.rss_mb)]
            status |= run_and_record(name, command, args.seconds)
        return 1 if status else 0
    if args.target not in TARGETS:
        print(f"unknown target {args.target!r}; --list shows them", file=sys.stderr)
        return 2
    if args.replay:
        return _replay(args.target, args.replay)
    return _fuzz(args)


def _replay(name: str, files: list[Path]) -> int:
    from tests.fuzz.targets import TARGETS

    target = TARGETS[name]
    target.prepare()
    for path in files:
        target.run(path.read_bytes())
        print(f"{path}: ok")
    return 0


def _fuzz(args: argparse.Namespace) -> int:
    name: str = args.target
    # Seeds are made in another process: making them imports stackmark modules,
    # which must be imported for the first time below, under instrumentation.
    subprocess.run([sys.executable, "-m", "tests.fuzz.seeds", name], cwd=REPO, check=True)
    seeds = FUZZ_ROOT / name / "seeds"
    corpus = args.corpus or FUZZ_ROOT / name / "corpus"
    artifacts = FUZZ_ROOT / name / "artifacts"
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)

    import atheris

    with atheris.instrument_imports(include=["stackmark", "stackmark_lsp"]):
        from tests.fuzz.targets import TARGETS

        target = TARGETS[name]
        target.prepare()
        for seed in sorted(seeds.iterdir()):
            if not seed.name.startswith("."):
                target.run(seed.read_bytes())  # also imports what runs lazily import

    flags = [
        f"-max_total_time={max(1, int(args.seconds))}",
        f"-runs={args.runs}",
        f"-seed={args.seed}",
        f"-max_len={target.max_len}",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_mb}",
        f"-malloc_limit_mb={args.rss_mb}",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
    ]
    started = time.monotonic()
    _report_at_exit(name, corpus, started)
    atheris.Setup([sys.argv[0], *flags, str(corpus), str(seeds)], target.run)
    atheris.Fuzz()  # exits the process
    return 0


def _report_at_exit(name: str, corpus: Path, started: float) -> None:
    """libFuzzer ends the process itself: print our summary line on the way out."""
    import atexit

    def summary() -> None:
        count = sum(1 for _ in corpus.iterdir())
        print(
            f"fuzz {name}: corpus {count} inputs, {time.monotonic() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    atexit.register(summary)


def run_and_record(name: str, command: list[str], seconds: float) -> int:
    """Run one target's fuzzer, passing its output on, and append its figures
    (executions, status, wall time) to build/fuzz/runs.jsonl."""
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True, errors="replace")
    assert proc.stderr is not None
    captured: list[str] = []
    for line in proc.stderr:
        sys.stderr.write(line)
        captured.append(line)
    status = proc.wait()
    record_run(name, seconds, executions("".join(captured)), status, time.monotonic() - started)
    return status


def record_run(name: str, seconds: float, runs: int | None, status: int, wall: float) -> None:
    """One line of build/fuzz/runs.jsonl: the figures docs/reliability.md reports."""
    FUZZ_ROOT.mkdir(parents=True, exist_ok=True)
    record = {
        "target": name,
        "seconds": seconds,
        "executions": runs,
        "status": status,
        "wall": round(wall, 1),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with open(FUZZ_ROOT / "runs.jsonl", "a") as log:
        log.write(json.dumps(record) + "\n")


_DONE = re.compile(r"Done (\d+) runs in (\d+) second")


def executions(stderr: str) -> int | None:
    """The execution count libFuzzer printed at the end of a run."""
    found = _DONE.search(stderr) or re.search(r"stat::number_of_executed_units: (\d+)", stderr)
    return int(found.group(1)) if found else None


if __name__ == "__main__":
    os.chdir(REPO)
    sys.exit(main())
