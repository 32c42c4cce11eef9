"""The log the editor tests open, and what llvm-symbolizer-19 says about it.

The log comes from `markup_prog` (tests/fixtures/src/markup_prog.c), built
and run at test time, plus one malformed element for a diagnostic. The
expectations come from `llvm-symbolizer-19 --filter-markup` on the same
lines with the same debug-file directory: the frames of the elements the
editors hover and jump from, the line the symbolized view must show, and
the diagnostic's message and column.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.markup_programs import LLVM, build_id, program_log

# One llvm-symbolizer output frame: "#1.2  0x... function file:line:column (module+0x...)".
_FRAME = re.compile(
    r"#(?P<frame>\d+)(?:\.\d+)?\s+0x[0-9a-f]+ (?P<function>.+?) "
    r"(?P<file>/\S+):(?P<line>\d+):(?P<column>\d+) \((?P<module>[^+()]+)\+(?P<offset>0x[0-9a-f]+)\)"
)
_SENTINEL = "stackmark-editor-test-sentinel"
BAD_ELEMENT = "{{{pc:0xzz}}}"


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int  # 1-based, as llvm prints it
    column: int
    module: str
    offset: str


@dataclass(frozen=True)
class Element:
    """A markup element of the log: where it is and what llvm says it means."""

    line: int  # 0-based
    column: int  # 0-based, in characters (the log is ASCII)
    text: str
    output: list[str]  # llvm-symbolizer's lines for the log line holding it
    frames: list[Frame]  # innermost first


@dataclass(frozen=True)
class Problem:
    line: int
    column: int
    message: str


@dataclass(frozen=True)
class EditorLog:
    path: Path
    debug_dir: Path
    lines: list[str]
    build_id: str
    hover: Element  # a frame with an inline chain
    definition: Element  # a frame without one: a single definition target
    diagnostic: Problem
    symbolize: Element  # the first frame of the first backtrace (where its code lens is)


def llvm_output(context: list[str], line: str, debug_dir: Path) -> tuple[list[str], str]:
    """llvm-symbolizer's output lines for `line` after `context`, and its stderr."""
    text = "\n".join([*context, _SENTINEL, line]) + "\n"
    proc = subprocess.run(
        [LLVM, "--filter-markup", f"--debug-file-directory={debug_dir}"],
        input=text.encode(),
        capture_output=True,
        check=False,
    )
    out = proc.stdout.decode().splitlines()
    return out[out.index(_SENTINEL) + 1 :], proc.stderr.decode()


def frames_of(output: list[str]) -> list[Frame]:
    found = []
    for text in output:
        match = _FRAME.search(text)
        if match:
            found.append(
                Frame(
                    match["function"],
                    match["file"],
                    int(match["line"]),
                    int(match["column"]),
                    match["module"].strip(),
                    match["offset"],
                )
            )
    return found


def _context(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"\{\{\{(reset|module|mmap):?", line)]


def _element(lines: list[str], number: int, debug_dir: Path) -> Element:
    text = re.search(r"\{\{\{bt:[^}]*\}\}\}", lines[number])
    assert text is not None, lines[number]
    output, _ = llvm_output(_context(lines), lines[number], debug_dir)
    return Element(number, text.start(), text.group(), output, frames_of(output))


def make_editor_log(work: Path) -> EditorLog:
    """Build and run markup_prog, write its log (plus a bad element) under `work`."""
    program = program_log("pie", work)
    lines = program.log.decode().splitlines()
    lines.append(f"{BAD_ELEMENT} a malformed element")
    path = work / "crash.log"
    path.write_text("\n".join(lines) + "\n")

    backtrace = [n for n, line in enumerate(lines) if re.search(r"\{\{\{bt:\d+:0x", line)]
    elements = [_element(lines, n, program.debug_dir) for n in backtrace[:8]]
    in_program = [e for e in elements if e.frames and e.frames[0].file.endswith("markup_prog.c")]
    single = next(e for e in in_program if len(e.frames) == 1)
    chain = next(e for e in in_program if len(e.frames) > 1)

    bad = len(lines) - 1
    _, stderr = llvm_output([], lines[bad], program.debug_dir)
    message = re.search(r"error: (.+)", stderr)
    caret = next(line for line in stderr.splitlines() if line.strip() == "^")
    assert message is not None, stderr
    return EditorLog(
        path=path,
        debug_dir=program.debug_dir,
        lines=lines,
        build_id=build_id(program.program),
        hover=chain,
        definition=single,
        diagnostic=Problem(bad, caret.index("^"), message.group(1)),
        symbolize=elements[0],
    )
