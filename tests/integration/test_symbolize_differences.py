"""Where `stackmark symbolize` deliberately differs from llvm-symbolizer-19, on real input.

Each test names one difference (the list is in stackmark/markup/filter.py
and the README), shows what llvm 19 does on the same input, and what
stackmark does instead. `--compat=llvm19` undoes all of them (checked in
test_symbolize_oracle.py and test_symbolize_handwritten.py).
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.integration.test_symbolize_handwritten import (
    LIB_BASE,
    PROG_BASE,
    Layout,
    el,
    log_context,
    log_elements,
    log_errors,
    symbol_table,
)
from tests.support.build import REPO
from tests.support.markup_programs import (
    ProgramLog,
    add_to_debug_dir,
    build_id,
    build_variant,
    llvm,
    program_log,
    stackmark,
)

FRAME = re.compile(r"#(\d+)(?:\.\d+)?\s+0x([0-9a-f]{16}) ")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tool("llvm-symbolizer-19")
    return tmp_path_factory.mktemp("differences")


@pytest.fixture(scope="module")
def pie(work: Path) -> ProgramLog:
    return program_log("pie", work)


@pytest.fixture(scope="module")
def layout(work: Path) -> Layout:
    program, library, _ = build_variant("pie")
    assert library is not None
    debug_dir = work / "debug-handwritten"
    add_to_debug_dir(debug_dir, program)
    add_to_debug_dir(debug_dir, library)
    return Layout(
        program,
        library,
        debug_dir,
        symbol_table(program, PROG_BASE),
        symbol_table(library, LIB_BASE),
    )


def as_log(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_difference_contextual_lines_keep_their_text(layout: Layout) -> None:
    log = as_log(log_context(layout))
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs, ours = llvm(log, debug).text, stackmark(log, debug).text
    for kept in ("skip", "also gone", "kept?", "[[[reset]]] tail", "text [[[reset]]] more"):
        assert kept not in theirs
        assert kept in ours
    # llvm drops the whole `pc on an mmap line` line, stackmark symbolizes its pc
    assert "pc on an mmap line" not in theirs
    assert re.search(r"pc on an mmap line capture\[.*markup_prog.c:\d+\] \[\[\[ELF module", ours)


def test_difference_reset_is_always_shown(pie: ProgramLog) -> None:
    theirs = llvm(pie.log, pie.debug_option).lines
    ours = stackmark(pie.log, pie.debug_option).lines
    assert pie.log.startswith(b"{{{reset}}}\n")
    assert theirs[0].startswith("[[[ELF module #0x0")
    assert ours[0] == "[[[reset]]]" and ours[1] == theirs[0]


def test_difference_modules_without_symbols_give_best_effort_frames(pie: ProgramLog) -> None:
    """llvm issue 63178: frames in libc (no debug file in the directory) keep module+offset."""
    theirs = llvm(pie.log, pie.debug_option)
    ours = stackmark(pie.log, pie.debug_option)
    raw = [line for line in theirs.lines if "[[[bt:" in line]
    assert raw, "the program's backtraces pass through libc"
    assert theirs.stderr.decode().count("error: could not find build ID\n") >= len(raw)
    best_effort = [line for line in ours.lines if "(libc.so.6+0x" in line]
    assert len(best_effort) == len(raw)
    for echo, line in zip(raw, best_effort, strict=True):
        number, address = re.search(r"\[\[\[bt:(\d+):0x([0-9a-f]+)", echo).groups()  # type: ignore[union-attr]
        match = FRAME.search(line)
        assert match is not None and match.group(1) == number
        adjusted = int(address, 16) - (0 if echo.endswith(":pc]]]") else 1)
        assert int(match.group(2), 16) == adjusted
    libc_id = build_id(Path("/lib/x86_64-linux-gnu/libc.so.6"))
    warning = f'warning: could not find build ID for ELF module #0x2 "libc.so.6"; BuildID={libc_id}'
    assert ours.stderr.decode().count(warning) == 1
    assert ours.status == 0


def test_difference_symbol_table_frames(work: Path) -> None:
    p = program_log("nodebug", work)
    theirs = llvm(p.log, p.debug_option).lines
    ours = stackmark(p.log, p.debug_option).lines
    assert any(" capture <invalid>:0:0 (markup_prog_nodebug+0x" in line for line in theirs)
    assert any(re.search(r" capture \(markup_prog_nodebug\+0x[0-9a-f]+\)$", line) for line in ours)
    assert any(line.startswith("pc of main main[<invalid>:0]") for line in theirs)
    assert any(re.match(r"pc of main main \(markup_prog_nodebug\+0x[0-9a-f]+\)", x) for x in ours)


def test_difference_malformed_elements_are_kept_and_located(layout: Layout) -> None:
    lines = log_errors(layout)
    log = as_log(lines)
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs, ours = llvm(log, debug), stackmark(log, debug)
    assert "{{{PC:0x1}}}" not in theirs.text and "{{{PC:0x1}}}" in ours.text
    assert "{{{module:1:a:ELF:12}}}" not in theirs.text
    assert "{{{module:1:a:ELF:12}}}" in ours.lines
    # the same problems are reported, each with input name, line and column
    message = re.compile(r"^(?:<stdin>:(\d+):(?:(\d+):)? )?((?:error|warning): .*)$")

    def messages(stderr: bytes) -> list[str]:
        found = []
        for line in stderr.decode().splitlines():
            match = message.match(line)
            if match and "could not find build ID" not in line:
                found.append(match.group(3))
        return sorted(found)

    assert messages(ours.stderr) == messages(theirs.stderr)
    located = [message.match(x) for x in ours.stderr.decode().splitlines()]
    for match in located:
        if match and match.group(2):
            line_no, column = int(match.group(1)), int(match.group(2))
            assert 1 <= column <= len(lines[line_no - 1]) + 1
    assert theirs.status == 0 and ours.status == 1


def test_difference_module_named_in_lookup_errors(layout: Layout) -> None:
    log = as_log(
        [
            "{{{module:7:notfound:elf:abad1d}}}",
            "{{{mmap:0x7e0000000000:0x1000:load:7:rx:0}}}",
            "missing {{{pc:0x7e0000000010}}} {{{bt:1:0x7e0000000010}}} {{{data:0x7e0000000020}}}",
        ]
    )
    theirs = llvm(log, f"--debug-file-directory={layout.debug_dir}")
    ours = stackmark(log, f"--debug-file-directory={layout.debug_dir}")
    assert theirs.stderr.decode() == "error: could not find build ID\n" * 3
    assert ours.stderr.decode().splitlines()[0] == (
        '<stdin>:3: warning: could not find build ID for ELF module #0x7 "notfound"; BuildID=abad1d'
    )
    assert ours.lines[-1] == (
        "missing (notfound+0x10)     #1    0x00007e000000000f (notfound+0xf) (notfound+0x20)"
    )


def test_difference_obj_takes_part(pie: ProgramLog) -> None:
    """llvm PR 183444: --obj files answer for their build IDs (llvm 19 ignores --obj)."""
    assert pie.library is not None
    objs = [f"--obj={pie.program}", f"--obj={pie.library}", "--debug-file-directory=/nonexistent"]
    with_dir = llvm(pie.log, pie.debug_option).lines
    theirs = llvm(pie.log, *objs).lines
    ours = stackmark(pie.log, *objs).lines
    assert not any("run_pipeline" in line for line in theirs)
    frames = [line for line in with_dir if FRAME.search(line) and "<invalid>" not in line]
    assert frames
    for line in frames:
        assert line in ours
    # and through a directory of binaries
    symbol_path = pie.program.parent.parent / "markup-symbol-path"
    symbol_path.mkdir(exist_ok=True)
    for binary in (pie.program, pie.library):
        shutil.copy(binary, symbol_path / binary.name)
    ours = stackmark(pie.log, f"--symbol-path={symbol_path}", "--debug-file-directory=/x").lines
    for line in frames:
        assert line in ours


def test_difference_debug_file_build_id_is_checked(pie: ProgramLog, work: Path) -> None:
    """llvm uses whatever file sits at the .build-id path; stackmark checks its build ID."""
    impostor_dir = work / "impostor"
    cpp, _, _ = build_variant("cpp")
    add_to_debug_dir(impostor_dir, pie.program, cpp)  # the wrong binary at the right path
    option = f"--debug-file-directory={impostor_dir}"
    theirs = llvm(pie.log, option)
    ours = stackmark(pie.log, option)
    # llvm answers with the impostor's names and lines
    assert FRAME.search(theirs.text)
    assert not re.search(r" capture \S*markup_prog\.c:", theirs.text)
    assert "could not find build ID for ELF module #0x0" in ours.stderr.decode()
    assert re.search(r"#0    0x[0-9a-f]{16} \(markup_prog\+0x[0-9a-f]+\)", ours.text)


def test_difference_hexdict_values_are_symbolized(layout: Layout) -> None:
    log = as_log(log_elements(layout))
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs, ours = llvm(log, debug).lines, stackmark(log, debug).lines
    dump = [line for line in theirs if "hexdict" in line or line.startswith("  RIP:")]
    assert dump == [line for line in ours if "hexdict" in line or line.startswith("  RIP:")]
    capture = int(layout.at("capture"), 16)
    note = f"    RIP: 0x{capture:016x} capture "
    notes = [line for line in ours if line.startswith(note)]
    assert len(notes) == 2  # one for the one-line dump, one for the multi-line dump
    assert all(line.endswith(f"(markup_prog+0x{capture - PROG_BASE:x})") for line in notes)
    assert any(line.startswith("    RBX: 0x") and " g_counter " in line for line in ours)
    assert not any(line.lstrip().startswith("RSP: 0x00007ffc") for line in ours)  # not mapped
    assert not any(line.lstrip().startswith(("RIP: 0x0000", "RBX: 0x0000")) for line in theirs)


def test_json_output_describes_every_element(layout: Layout) -> None:
    import json

    log = as_log(log_elements(layout))
    out = stackmark(log, f"--debug-file-directory={layout.debug_dir}", "--output-style=json")
    records = [json.loads(line) for line in out.stdout.decode().splitlines()]
    tags = {r["tag"] for r in records}
    assert tags == {
        "reset",
        "module",
        "mmap",
        "pc",
        "bt",
        "data",
        "symbol",
        "hexdict",
        "dumpfile",
        "foo",
        "frame",
    }
    bt = next(r for r in records if r["tag"] == "bt" and r.get("frame") == 1)
    assert bt["frames"][-1]["function"] == "run_pipeline"
    assert bt["module"]["name"] == "markup_prog"
    dump = next(r for r in records if r["tag"] == "dumpfile")
    assert dump["type"] == "sancov" and len(dump["modules"]) == 2


def test_compat_stderr_colours_on_a_terminal(layout: Layout) -> None:
    """On a terminal llvm colours its diagnostics; so does --compat=llvm19, identically."""
    log = as_log([*layout.context(), "{{{PC:1}}} {{{data}}} {{{pc:0x1}}}", "{{{reset:x}}}"])
    debug = f"--debug-file-directory={layout.debug_dir}"

    def stderr_on_tty(cmd: list[str]) -> bytes:
        leader, follower = pty.openpty()
        env = dict(os.environ, TERM="xterm")
        proc = subprocess.run(
            cmd,
            input=log,
            stdout=subprocess.DEVNULL,
            stderr=follower,
            env=env,
            cwd=REPO,
            check=False,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        assert proc.returncode == 0
        return b"".join(chunks)

    theirs = stderr_on_tty(["llvm-symbolizer-19", "--filter-markup", debug])
    ours = stderr_on_tty([sys.executable, "-m", "stackmark", "symbolize", debug, "--compat=llvm19"])
    assert b"\x1b[0;1;31merror: \x1b[0m" in theirs
    assert ours == theirs


def test_unreadable_input_and_usage(layout: Layout, work: Path) -> None:
    missing = work / "no-such.log"
    out = stackmark(b"", str(missing))
    assert out.status == 2 and str(missing) in out.stderr.decode()
    assert "Traceback" not in out.stderr.decode()
    assert stackmark(b"", "--color=purple").status == 2
    assert stackmark(b"", "--compat=llvm19", "--output-style=json").status == 2
    log = work / "two.log"
    log.write_bytes(as_log([*layout.context(), el("pc", layout.at("capture"))]))
    both = stackmark(b"", str(log), str(log), f"--debug-file-directory={layout.debug_dir}")
    assert both.status == 0
    assert both.text.count("[[[ELF module #0x0") == 2  # each file is its own log


def test_demo_runs(tmp_path: Path) -> None:
    """`make demo`'s part in examples/: build, crash, symbolize."""
    require_tool("g++")
    build = tmp_path / "examples-build"
    proc = subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(REPO / "examples"),
            "demo",
            f"PY={sys.executable}",
            f"BUILD={build}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    symbolized = out.split("=== stackmark symbolize")[1]
    assert "{{{bt:" in out.split("=== stackmark symbolize")[0]
    for expected in (
        "cross ",
        "shoelace<",
        "geo::Polygon::area() const",
        "geo::sum_if<double>",
        "geo::total_area(",
        "main ",
        "registers: {{{hexdict:",
    ):
        assert expected in symbolized
    assert "{{{bt:" not in symbolized
