"""`stackmark symbolize` against `llvm-symbolizer-19 --filter-markup` on real programs.

The fixture programs print markup about themselves (tests/fixtures/src/
markup_*); each is built and run once, and its log goes through both tools
with the same debug-file directory:

* `--compat=llvm19` must give byte-identical stdout and stderr, with every
  output option llvm honours;
* the default mode must print every line llvm gets right the same way
  (in the same order); the lines where llvm fails users are covered by
  the `test_difference_*` tests in test_symbolize_differences.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.markup_programs import VARIANTS, ProgramLog, llvm, program_log, stackmark


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProgramLog]:
    require_tool("llvm-symbolizer-19")
    work = tmp_path_factory.mktemp("markup-programs")
    return {variant: program_log(variant, work) for variant in VARIANTS}


@pytest.mark.parametrize("variant", VARIANTS)
def test_compat_is_byte_identical(programs: dict[str, ProgramLog], variant: str) -> None:
    p = programs[variant]
    theirs = llvm(p.log, p.debug_option)
    ours = stackmark(p.log, p.debug_option, "--compat=llvm19")
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr
    assert ours.status == theirs.status == 0


OPTIONS = [
    ("--color=always",),
    ("--functions=short",),
    ("--functions=none",),
    ("--no-demangle",),
    ("--basenames",),
    ("--relativenames",),
    ("--functions=short", "--no-demangle", "--basenames", "--color=always"),
]


@pytest.mark.parametrize("variant", ["pie", "cpp", "nodebug"])
@pytest.mark.parametrize("options", OPTIONS, ids=" ".join)
def test_compat_options(
    programs: dict[str, ProgramLog], variant: str, options: tuple[str, ...]
) -> None:
    p = programs[variant]
    theirs = llvm(p.log, p.debug_option, *options)
    ours = stackmark(p.log, p.debug_option, "--compat=llvm19", *options)
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr


@pytest.mark.parametrize("variant", ["pie", "cpp", "split"])
def test_compat_from_the_gsym_cache(
    programs: dict[str, ProgramLog], variant: str, tmp_path: Path
) -> None:
    """The same bytes when the answers come from a GSYM cache entry built on first use."""
    p = programs[variant]
    cache = f"--gsym-cache-dir={tmp_path}"
    theirs = llvm(p.log, p.debug_option)
    built = stackmark(p.log, p.debug_option, "--compat=llvm19", "--gsym-cache=build", cache)
    assert b"building the GSYM cache entry" in built.stderr
    assert list(tmp_path.glob("gsym-v1/*/*.gsym"))
    reused = stackmark(p.log, p.debug_option, "--compat=llvm19", cache)
    assert reused.stdout == built.stdout == theirs.stdout
    assert reused.stderr == theirs.stderr


def llvm_got_right(line: str) -> bool:
    """A line of llvm's output that shows no failure (no raw echo, nothing unknown)."""
    return "[[[" not in line and "<invalid>" not in line


def assert_in_order(expected: list[str], actual: list[str]) -> None:
    position = 0
    for line in expected:
        assert line in actual[position:], f"missing or out of order: {line!r}"
        position = actual.index(line, position) + 1


@pytest.mark.parametrize("variant", VARIANTS)
def test_default_mode_agrees_where_llvm_is_right(
    programs: dict[str, ProgramLog], variant: str
) -> None:
    p = programs[variant]
    theirs = [line for line in llvm(p.log, p.debug_option).lines if llvm_got_right(line)]
    ours = stackmark(p.log, p.debug_option)
    assert_in_order(theirs, ours.lines)
    frames = [line for line in theirs if " 0x0000" in line and "+0x" in line]
    if variant in ("pie", "nopie", "cpp", "split", "nodebug"):
        assert frames, "the log should have frames llvm symbolized"
    # every input line that is plain text is there, unchanged
    plain = [
        line for line in p.log.decode().splitlines() if "{{{" not in line and "\x1b" not in line
    ]
    assert_in_order(plain, ours.lines)


def test_default_mode_frames_for_the_inline_chain(programs: dict[str, ProgramLog]) -> None:
    """A spot check with the names written out, independent of llvm."""
    p = programs["pie"]
    lines = stackmark(p.log, p.debug_option).lines
    src = str(Path("tests/fixtures/src/markup_prog.c"))
    chain = [line for line in lines if line.startswith("  ") and "#1" in line][:4]
    names = [line.split()[2] for line in chain]
    assert names == ["scale", "normalize", "pipeline", "run_pipeline"]
    assert all(src in line for line in chain)
