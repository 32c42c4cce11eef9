"""Where the benchmarks' inputs come from, written once for every benchmark.

    TOOLS           the shared generator scripts: `$STACKMARK_SHARED_TOOLS`, else
                    `../shared/tools` beside the checkout
    WORK            bench/work: everything made here (ignored by git)
    BIG             WORK/big: the large C++ program (`build_big.sh`), big-O2 and
                    big-O0 with a `debugdir` of split debug files
    ensure_big()    build BIG once (minutes on 2 cores)
    addresses()     code addresses in a binary (`gen_addrs.py`), made once
    markup_log()    a log of symbolizer markup over them (`gen_markup_log.py`), made once
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TOOLS = Path(os.environ.get("STACKMARK_SHARED_TOOLS", REPO.parent / "shared" / "tools"))
WORK = HERE / "work"
BIG = WORK / "big"


def ensure_big() -> None:
    """big-O2 and big-O0 with their debug directory, built once by `build_big.sh`."""
    if all((BIG / name).exists() for name in ("big-O2", "big-O0", "debugdir")):
        return
    print("building the big benchmark binaries (takes minutes) ...", flush=True)
    subprocess.run(["bash", str(TOOLS / "build_big.sh"), str(WORK)], check=True)


def addresses(binary: Path, out: Path, *, count: int = 10000, seed: int = 42) -> Path:
    """`count` code addresses of `binary` in `out` (`gen_addrs.py`), unless already there."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(TOOLS / "gen_addrs.py"), str(binary),
             "--count", str(count), "--seed", str(seed), "--out", str(out)],
            check=True, capture_output=True,
        )  # fmt: skip
    return out


def markup_log(
    modules: Sequence[tuple[Path, Path]], lines: int, out: Path, *, seed: int | None = None
) -> Path:
    """A log of `lines` lines of markup over (binary, addresses) pairs in `out`
    (`gen_markup_log.py`), unless already there."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, str(TOOLS / "gen_markup_log.py")]
        for binary, addrs in modules:
            command += ["--module", f"{binary}:{addrs}"]
        command += ["--lines", str(lines), "--out", str(out)]
        if seed is not None:
            command += ["--seed", str(seed)]
        subprocess.run(command, check=True, capture_output=True)
    return out
