"""What llvm says about the elements of a log: the oracle of the language-server tests.

The log is read here with a few regular expressions (the fixture logs are
well formed): its modules and mmaps, and every `pc`/`bt`/`data` element
with its line, column and the address llvm-symbolizer looks up (llvm's −1
rule: a `bt` unless `:pc`, a `pc` only with `:ra`). The answers come from
`llvm-symbolizer-19 --output-style=JSON` on the module's debug file.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

LLVM = "llvm-symbolizer-19"
_ELEMENT = re.compile(r"\{\{\{(pc|bt|data):([^}]*)\}\}\}")
_MODULE = re.compile(r"\{\{\{module:(\d+):([^:]*):elf:([0-9a-f]+)\}\}\}")
_MMAP = re.compile(
    r"\{\{\{mmap:(0x[0-9a-f]+):(0x[0-9a-f]+):load:(\d+):([rwx]+):(0x[0-9a-f]+|0)\}\}\}"
)


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int
    column: int

    @property
    def location(self) -> str | None:
        if not self.file:
            return None
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")


@dataclass(frozen=True)
class Spot:
    """An address element of the log and where llvm looks it up."""

    tag: str
    line: int
    column: int  # of `{{{`
    text: str
    frame_number: int | None
    build_id: str
    module_name: str
    relative: int  # module-relative lookup address


def spots(text: str) -> list[Spot]:
    modules: dict[int, tuple[str, str]] = {}
    mmaps: list[tuple[int, int, int, int]] = []  # start, size, module, relative
    found: list[Spot] = []
    for number, line in enumerate(text.splitlines()):
        if "{{{reset}}}" in line:
            modules, mmaps = {}, []
        for m in _MODULE.finditer(line):
            modules[int(m.group(1))] = (m.group(3), m.group(2))
        for m in _MMAP.finditer(line):
            mmaps.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3)),
                          int(m.group(5), 16)))  # fmt: skip
        for m in _ELEMENT.finditer(line):
            tag, fields = m.group(1), m.group(2).split(":")
            frame_number = None
            if tag == "bt":
                frame_number, address_text, kind = int(fields[0]), fields[1], fields[2:]
                adjust = kind != ["pc"]
            else:
                address_text, kind = fields[0], fields[1:]
                adjust = tag == "pc" and kind == ["ra"]
            if not re.fullmatch(r"0x[0-9a-fA-F]+", address_text):
                continue  # malformed: nothing for llvm to look up
            address = int(address_text, 16) - (1 if adjust else 0)
            for start, size, module, relative in mmaps:
                if start <= address < start + size:
                    build_id, name = modules[module]
                    found.append(
                        Spot(tag, number, m.start(), m.group(0), frame_number, build_id, name,
                             address - start + relative)
                    )  # fmt: skip
                    break
    return found


def debug_file(debug_dir: Path, build_id: str) -> Path:
    return debug_dir / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"


def code(obj: Path, addresses: list[int]) -> dict[int, list[Frame]]:
    """The inline chain (innermost first) llvm gives for each address."""
    answers = _ask(obj, [hex(a) for a in addresses])
    found: dict[int, list[Frame]] = {}
    for address, answer in zip(addresses, answers, strict=True):
        frames = [
            Frame(s["FunctionName"], s["FileName"], s["Line"], s["Column"])
            for s in answer.get("Symbol", [])
            if s.get("FunctionName")
        ]
        found[address] = frames
    return found


def data(obj: Path, addresses: list[int]) -> dict[int, tuple[str, int]]:
    """(name, start) of the symbol llvm finds for each data address."""
    answers = _ask(obj, [f"DATA {hex(a)}" for a in addresses])
    found: dict[int, tuple[str, int]] = {}
    for address, answer in zip(addresses, answers, strict=True):
        symbol = answer.get("Data") or {}
        if symbol.get("Name"):
            found[address] = (symbol["Name"], int(symbol["Start"], 16))
    return found


def _ask(obj: Path, queries: list[str]) -> list[dict[str, object]]:
    proc = subprocess.run(
        [LLVM, f"--obj={obj}", "--output-style=JSON", "--inlines", *queries],
        capture_output=True,
        text=True,
        check=True,
    )
    answers = json.loads(proc.stdout)
    assert isinstance(answers, list) and len(answers) == len(queries)
    return answers


def declaration(obj: Path, name: str) -> tuple[str, int] | None:
    """(file, line) llvm-dwarfdump gives for the variable `name`."""
    proc = subprocess.run(
        ["llvm-dwarfdump-19", f"--name={name}", str(obj)],
        capture_output=True,
        text=True,
        check=True,
    )
    file = re.search(r'DW_AT_decl_file\s*\("([^"]+)"\)', proc.stdout)
    line = re.search(r"DW_AT_decl_line\s*\((\d+)\)", proc.stdout)
    if file is None or line is None:
        return None
    return file.group(1), int(line.group(1))


def function_declaration(obj: Path, name: str) -> tuple[str, int] | None:
    """(file, line) llvm-dwarfdump gives for the function with linkage name `name`,
    following DW_AT_abstract_origin/DW_AT_specification to the declaration."""

    def dump(*options: str) -> str:
        proc = subprocess.run(
            ["llvm-dwarfdump-19", *options, str(obj)], capture_output=True, text=True, check=True
        )
        return proc.stdout

    dies = re.split(r"\n(?=0x[0-9a-f]+: DW_TAG)", dump(f"--name={name}"))
    dies = [d for d in dies if "DW_TAG_subprogram" in d]
    if not dies:
        return None
    die = next((d for d in dies if "DW_AT_low_pc" in d), dies[0])
    for _ in range(8):
        file = re.search(r'DW_AT_decl_file\s*\("([^"]+)"\)', die)
        line = re.search(r"DW_AT_decl_line\s*\((\d+)\)", die)
        if file and line:
            return file.group(1), int(line.group(1))
        target = re.search(r"DW_AT_(?:abstract_origin|specification)\s*\((0x[0-9a-f]+)", die)
        if target is None:
            return None
        die = dump(f"--debug-info={target.group(1)}")
    return None


def filter_markup(log: bytes, debug_dir: Path) -> tuple[str, str]:
    """(stdout, stderr) of llvm-symbolizer-19 --filter-markup on `log`."""
    proc = subprocess.run(
        [LLVM, "--filter-markup", f"--debug-file-directory={debug_dir}"],
        input=log,
        capture_output=True,
        check=True,
    )
    return proc.stdout.decode(), proc.stderr.decode()


def llvm_errors(stderr: str) -> list[tuple[str, str, int]]:
    """(message, input line, caret byte column) of each located error llvm reports."""
    found = []
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("error: ") and i + 2 < len(lines) and lines[i + 2].strip() == "^":
            found.append((line[len("error: ") :], lines[i + 1], lines[i + 2].index("^")))
    return found
