"""GSYM files with merged functions and call sites, against llvm-gsymutil-22.

LLVM 20 added two FunctionInfo records that LLVM 19 cannot write: merged
functions (InfoType 3: functions that identical-code folding put at one
address) and call sites (InfoType 4: what a call returning to an address
may call). Debian's llvm-22 writes both (`--merged-functions
--dwarf-callsites`), so it is the oracle here, on programs compiled at test
time and linked by `ld.gold --icf=all`:

- our dump of llvm's file is llvm's dump, byte for byte;
- reading llvm's file and writing it again gives the same bytes;
- lookups print what llvm-gsymutil-22 prints, plain and with
  `--merged-functions` (every merged result, its call sites, the
  `--merged-functions-filter` expressions), on every address of every
  function and on random ones.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from stackmark.formats.gsym import GsymReader, reencode
from stackmark.formats.gsym.dump import dump_text
from tests.conftest import require_tool
from tests.support.build import compile_program

GSYMUTIL = "llvm-gsymutil-22"
PROGRAMS = {
    "c": ("gcc", "gsym_merged.c"),
    "cpp": ("g++", "gsym_merged.cpp"),
}
FILTER_ONLY = ["--merged-functions-filter", "x"]
LOOKUP_OPTIONS = [
    [],
    ["--merged-functions"],
    ["--merged-functions", "--merged-functions-filter", "_b$"],
    [
        "--merged-functions",
        "--merged-functions-filter",
        "scale",
        "--merged-functions-filter",
        "sum",
    ],
    ["--merged-functions", "--merged-functions-filter", "no["],  # does not compile: no match
]


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def llvm_gsym(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler, source = PROGRAMS[request.param]
    binary = compile_program(
        f"gsym-merged-{request.param}",
        [source],
        compiler=compiler,
        flags=("-g", "-O2", "-ffunction-sections"),
        link_flags=("-fuse-ld=gold", "-Wl,--icf=all"),
    )
    out = tmp_path_factory.mktemp("gsym22") / f"{request.param}.gsym"
    subprocess.run(
        [
            require_tool(GSYMUTIL),
            "--convert",
            str(binary),
            "--merged-functions",
            "--dwarf-callsites",
            "--num-threads=1",
            "-o",
            str(out),
        ],
        capture_output=True,
        check=True,
    )
    return out


def llvm_text(args: list[str], stdin: str = "") -> str:
    proc = subprocess.run(
        [require_tool(GSYMUTIL), *args], input=stdin, capture_output=True, text=True, check=True
    )
    return proc.stdout


def ours(args: list[str], stdin: str = "") -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "gsym", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stderr == ""
    return proc.stdout


def test_the_files_hold_merged_functions_and_call_sites(llvm_gsym: Path) -> None:
    with GsymReader.open(llvm_gsym) as reader:
        infos = list(reader.functions())
    assert any(info.merged for info in infos)
    assert any(info.call_sites for info in infos)
    assert any(m.call_sites for info in infos for m in info.merged or [])


def test_dump_is_llvm22s(llvm_gsym: Path) -> None:
    expected = llvm_text([str(llvm_gsym)])
    with GsymReader.open(llvm_gsym) as reader:
        assert dump_text(reader) == expected
    assert "++ Merged FunctionInfos[1]:" in expected
    assert "CallSites (by relative return offset):" in expected


def test_rewriting_keeps_every_byte(llvm_gsym: Path) -> None:
    with GsymReader.open(llvm_gsym) as reader:
        assert reencode(reader) == llvm_gsym.read_bytes()


def addresses(gsym: Path) -> list[int]:
    """Every address of every function (their return addresses among them), a
    little either side, and random ones around the code."""
    with GsymReader.open(gsym) as reader:
        spans = [(info.start, max(info.size, 1)) for info in reader.functions()]
    out = [a for start, size in spans for a in range(start - 1, start + size + 1)]
    rng = random.Random(gsym.name)
    low, high = spans[0][0], spans[-1][0] + spans[-1][1]
    out += [rng.randrange(low - 16, high + 16) for _ in range(200)]
    return out


@pytest.mark.parametrize("options", LOOKUP_OPTIONS, ids=lambda o: " ".join(o) or "plain")
def test_lookups_print_what_llvm22_prints(llvm_gsym: Path, options: list[str]) -> None:
    wanted = addresses(llvm_gsym)
    stdin = "".join(f"0x{a:x} {llvm_gsym}\n" for a in wanted)
    expected = llvm_text(["--addresses-from-stdin", *options], stdin)
    assert ours(["lookup", "--addresses-from-stdin", *options], stdin) == expected
    if options == ["--merged-functions"]:
        assert "Found 3 functions at address" in expected or "Found 2 functions" in expected
        assert "      CallSites: " in expected


def test_lookup_of_given_addresses_prints_what_llvm22_prints(llvm_gsym: Path) -> None:
    wanted = addresses(llvm_gsym)[::7]
    args = [f"0x{a:x}" for a in wanted]
    expected = llvm_text(
        [str(llvm_gsym), "--merged-functions", *(x for a in args for x in ("--address", a))]
    )
    assert ours(["lookup", str(llvm_gsym), *args, "--merged-functions"]) == expected


def test_a_filter_needs_merged_functions(llvm_gsym: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "stackmark", "gsym", "lookup", str(llvm_gsym), "0x0", *FILTER_ONLY],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "--merged-functions-filter requires --merged-functions" in proc.stderr
    assert proc.stdout == ""
