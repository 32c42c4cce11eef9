"""`stackmark unwind CORE` end to end: its markup, and the CBF it writes decoded
again, symbolized by `llvm-symbolizer --filter-markup` into the functions GDB
names for the same stop."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.build import build_id_of, compile_program
from tests.support.unwind_cores import (
    SFRAME_FLAGS,
    GdbCapture,
    build_chain_and_library,
    capture_with_gdb,
    debug_directory,
    symbolize,
)


def stackmark(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stackmark", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[GdbCapture, Path]:
    require_tool("gdb")
    program, library = build_chain_and_library(SFRAME_FLAGS)
    work = tmp_path_factory.mktemp("cli")
    capture = capture_with_gdb(program, "leaf", work)
    return capture, debug_directory(work / "debug", [program, library])


def gdb_functions(capture: GdbCapture) -> list[tuple[int, str | None]]:
    return [(i, f.name) for i, f in enumerate(capture.frames)]


def test_markup_symbolizes_to_gdbs_functions(chain: tuple[GdbCapture, Path]) -> None:
    capture, debug_dir = chain
    proc = stackmark("unwind", str(capture.core))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("{{{reset}}}\n{{{module:0:unwind_chain:elf:")
    functions = symbolize(proc.stdout, debug_dir)
    assert functions[: len(capture.frames)] == gdb_functions(capture)


def test_cbf_output_decodes_to_the_same_backtrace(
    chain: tuple[GdbCapture, Path], tmp_path: Path
) -> None:
    capture, debug_dir = chain
    proc = stackmark("unwind", "--cbf", str(capture.core))
    assert proc.returncode == 0, proc.stderr
    swift = json.loads(proc.stdout)
    assert set(swift) == {"architecture", "backtrace", "imageMap"}
    assert swift["architecture"] == "x86_64"
    (tmp_path / "bt.json").write_text(proc.stdout)
    decoded = stackmark("cbf", "decode", f"@{tmp_path / 'bt.json'}")
    assert decoded.returncode == 0, decoded.stderr
    functions = symbolize(decoded.stdout, debug_dir)
    assert functions[: len(capture.frames)] == gdb_functions(capture)
    # Same frames as the markup form, element for element.
    markup = stackmark("unwind", str(capture.core)).stdout
    bt = re.compile(r"\{\{\{bt:.*\}\}\}")
    assert bt.findall(decoded.stdout) == bt.findall(markup)


def test_cbf_decode_symbolizes_with_the_image_map(
    chain: tuple[GdbCapture, Path], tmp_path: Path
) -> None:
    """`cbf decode --symbolize`: the image map's files (here, where the core ran) give the
    functions GDB names, with no debug directory; the same frames llvm-symbolizer prints."""
    capture, debug_dir = chain
    (tmp_path / "bt.json").write_text(stackmark("unwind", "--cbf", str(capture.core)).stdout)
    proc = stackmark("cbf", "decode", "--symbolize", f"@{tmp_path / 'bt.json'}")
    assert proc.returncode == 0, proc.stderr
    frames = re.findall(r"^\s+#(\d+)\s+0x[0-9a-f]+ (\S+)", proc.stdout, re.MULTILINE)
    ours = [(int(n), name) for n, name in frames]
    assert ours[: len(capture.frames)] == gdb_functions(capture)
    markup = stackmark("cbf", "decode", f"@{tmp_path / 'bt.json'}").stdout
    theirs = symbolize(markup, debug_dir)  # its debug directory has no libc: a prefix
    assert len(theirs) >= len(capture.frames) and ours[: len(theirs)] == theirs
    both = stackmark("cbf", "decode", "--symbolize", "--json", f"@{tmp_path / 'bt.json'}")
    assert both.returncode == 1 and "do not go together" in both.stderr


def test_depth_limit_is_marked_truncated(chain: tuple[GdbCapture, Path], tmp_path: Path) -> None:
    """Frames cut at --max-frames end with the truncated marker (markup and CBF);
    a walk that ended by itself does not."""
    capture, _debug_dir = chain
    markup = stackmark("unwind", "--max-frames", "3", str(capture.core)).stdout.splitlines()
    assert markup[-1] == "... (backtrace truncated)" and markup[-2].startswith("{{{bt:2:")
    assert "truncated" not in stackmark("unwind", str(capture.core)).stdout
    (tmp_path / "bt.json").write_text(
        stackmark("unwind", "--cbf", "--max-frames", "3", str(capture.core)).stdout
    )
    decoded = json.loads(stackmark("cbf", "decode", "--json", f"@{tmp_path / 'bt.json'}").stdout)
    assert decoded["truncated"] is True and len(decoded["frames"]) == 3
    report = json.loads(
        stackmark("unwind", "--json", "--max-frames", "3", str(capture.core)).stdout
    )
    assert report["threads"][0]["truncated"] is True


def test_json_output(chain: tuple[GdbCapture, Path]) -> None:
    capture, _debug_dir = chain
    proc = stackmark("unwind", "--json", str(capture.core))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["arch"] == "x86_64"
    [thread] = report["threads"]
    frames = thread["frames"]
    assert [int(f["address"], 16) for f in frames[: len(capture.frames)]] == capture.pcs
    assert [f["module"] for f in frames[:7]] == ["unwind_chain"] * 5 + [
        "libunwind_lib.so",
        "unwind_chain",
    ]
    assert frames[0]["found_by"] == "registers" and frames[1]["found_by"] == "sframe"
    assert thread["stop_reason"]
    modules = {m["name"]: m for m in report["modules"]}
    program = Path(modules["unwind_chain"]["path"])
    assert modules["unwind_chain"]["build_id"] == build_id_of(program)


def test_all_threads_markup(tmp_path: Path) -> None:
    require_tool("gdb")
    program = compile_program(
        "unwind_threads", ["unwind_threads.c"], flags=SFRAME_FLAGS, link_flags=["-pthread"]
    )
    capture = capture_with_gdb(program, "leaf", tmp_path)
    proc = stackmark("unwind", "--all-threads", str(capture.core))
    assert proc.returncode == 0, proc.stderr
    headers = re.findall(r"^thread (\d+)(?: \(signal \d+\))?:$", proc.stdout, re.MULTILINE)
    assert sorted(map(int, headers)) == sorted(capture.threads)
    functions = symbolize(proc.stdout, debug_directory(tmp_path / "debug", [program]))
    assert functions.count((0, "spin")) == 3 and functions.count((1, "worker")) == 3
    assert (0, "leaf") in functions and (1, "main") in functions
    one = stackmark("unwind", "--thread", headers[-1], str(capture.core))
    assert one.returncode == 0 and not re.search(r"^thread ", one.stdout, re.MULTILINE)
    assert one.stdout.count("{{{bt:0:") == 1


def test_bad_inputs_are_reported_not_raised(tmp_path: Path) -> None:
    not_core = tmp_path / "text"
    not_core.write_text("hello")
    proc = stackmark("unwind", str(not_core))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"stackmark unwind: error: {not_core}: ")
    assert "Traceback" not in proc.stderr
    program = compile_program("unwind_recurse", ["unwind_recurse.c"], flags=SFRAME_FLAGS)
    proc = stackmark("unwind", str(program))
    assert proc.returncode == 1 and "not a core file" in proc.stderr
    truncated = tmp_path / "truncated.core"
    capture = capture_with_gdb(program, "leaf", tmp_path)
    truncated.write_bytes(capture.core.read_bytes()[:3000])
    proc = stackmark("unwind", str(truncated))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert os.path.basename(truncated) in proc.stderr
