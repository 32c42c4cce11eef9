"""`stackmark symbolize`'s exit status when frames are left unresolved: 0 by default,
3 with --fail-on-unresolved (before 1, after 2), also over a batch of logs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from stackmark.markup.stream import (
    EXIT_ELEMENT_ERRORS,
    EXIT_OK,
    EXIT_UNRESOLVED,
    EXIT_USAGE,
    worst_status,
)
from tests.support.build import REPO

# A module no file has (its build ID is made up): its frame stays unresolved.
UNRESOLVED = (
    "{{{module:0:/nowhere/app:elf:0123456789abcdef}}}\n"
    "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}\n"
    "{{{bt:0:0x1100}}}\n"
)
MALFORMED = "{{{bt:0:zz}}}\n"


def _symbolize(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize", "--no-debuginfod", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )


def test_unresolved_frames_warn_by_default_and_exit_3_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "crash.log"
    log.write_text(UNRESOLVED)
    plain = _symbolize(log)
    assert plain.returncode == EXIT_OK
    assert "--obj FILE" in plain.stderr and "--symbol-path DIR" in plain.stderr
    assert _symbolize("--fail-on-unresolved", log).returncode == EXIT_UNRESOLVED
    # --compat=llvm19 still exits 0 for element errors, and 3 when asked.
    assert _symbolize("--compat=llvm19", "--fail-on-unresolved", log).returncode == 3


def test_unresolved_frames_outrank_element_errors_but_not_unreadable_input(
    tmp_path: Path,
) -> None:
    log = tmp_path / "crash.log"
    log.write_text(MALFORMED + UNRESOLVED)
    assert _symbolize(log).returncode == EXIT_ELEMENT_ERRORS
    assert _symbolize("--fail-on-unresolved", log).returncode == EXIT_UNRESOLVED
    missing = tmp_path / "missing.log"
    assert _symbolize("--fail-on-unresolved", log, missing).returncode == EXIT_USAGE


def test_a_batch_of_logs_exits_with_the_most_serious_status(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text(MALFORMED)
    (tmp_path / "logs" / "b.log").write_text(UNRESOLVED)
    out = tmp_path / "out"
    batch = _symbolize("--fail-on-unresolved", "-j", "1", "-o", out, tmp_path / "logs")
    assert batch.returncode == EXIT_UNRESOLVED, batch.stderr
    # module-relative: 0x1100 - 1 (a return address) - 0x1000 (mmap start) + 0x0
    assert "(/nowhere/app+0xff)" in (out / "b.log").read_text()
    # A log that cannot be read outranks unresolved frames in another.
    again = _symbolize(
        "--fail-on-unresolved",
        "-j",
        "1",
        "-o",
        out,
        tmp_path / "logs" / "b.log",
        tmp_path / "no.log",
    )
    assert again.returncode == EXIT_USAGE, again.stderr


def test_worst_status_orders_usage_then_unresolved_then_errors() -> None:
    assert worst_status([]) == EXIT_OK
    assert worst_status([EXIT_UNRESOLVED, EXIT_ELEMENT_ERRORS]) == EXIT_UNRESOLVED
    assert worst_status([EXIT_UNRESOLVED, EXIT_USAGE, EXIT_OK]) == EXIT_USAGE


def test_a_data_address_no_symbol_covers_counts_as_unresolved(tmp_path: Path) -> None:
    from tests.support import sym_builds
    from tests.support.build import build_id_of

    program = sym_builds.c_program()
    log = tmp_path / "data.log"
    log.write_text(
        f"{{{{{{module:0:app:elf:{build_id_of(program)}}}}}}}\n"
        "{{{mmap:0x10000:0x1000:load:0:r:0x0}}}\n"
        "at {{{data:0x10000}}}\n"  # module-relative 0: the ELF header, in no symbol
    )
    assert _symbolize(f"--obj={program}", log).returncode == EXIT_OK
    assert _symbolize(f"--obj={program}", "--fail-on-unresolved", log).returncode == 3
