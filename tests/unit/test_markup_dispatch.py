"""A new kind of markup element (or span) cannot be silently ignored: every place
that dispatches over `TypedElement` or `Span` is a `match` ending in `assert_never`,
so mypy names each of them once the new kind joins its union.

The test adds a kind to each union (through mypy's `--shadow-file`, the checkout is
not touched) and checks that mypy flags exactly the dispatchers listed here: one that
loses its `assert_never` (or handles the new kind with a catch-all) fails the test.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import stackmark

ROOT = Path(stackmark.__file__).resolve().parent.parent

# file -> the functions in it that dispatch over every TypedElement, or every Span
ELEMENT_DISPATCHERS = {
    "stackmark/markup/filter.py": {
        "StackmarkFilter._apply",
        "StackmarkFilter._record_context",
        "StackmarkFilter._fold",
        "StackmarkFilter._context_in_place",
        "StackmarkFilter._element",
    },
    "stackmark/markup/llvm19.py": {"Llvm19Filter._contextual", "Llvm19Filter._element"},
    "server/stackmark_lsp/index.py": {"Index._read_parsed"},
    "server/stackmark_lsp/hover.py": {"HoverBuilder.build"},
    "server/stackmark_lsp/navigation.py": {"Navigator.definition"},
}
SPAN_DISPATCHERS = {
    "stackmark/markup/filter.py": {
        "StackmarkFilter._is_context_only",
        "StackmarkFilter._render_line",
    },
    "stackmark/markup/llvm19.py": {"Llvm19Filter._span"},
}

NEW_ELEMENT = "class NewElement(Decoded):\n    __slots__ = ()\n\n\n"
NEW_SPAN = "class NewSpan(Record):\n    __slots__ = _fields = ()\n\n\n"
_ERROR = re.compile(
    r'^(?P<path>[^:]+):(?P<line>\d+): error: Argument 1 to "assert_never" '
    r'has incompatible type "(?P<kind>NewElement|NewSpan)"'
)


def _with_new_kind(source: str, union: str, new_class: str, name: str) -> str:
    """`source` with `new_class` declared just before `union` and added to it."""
    assert source.count(f"\n{union} = ") == 1, union
    return source.replace(f"\n{union} = ", f"\n{new_class}{union} = {name} | ")


def _functions(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, Class.method or function) of every function in `path`."""
    found: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                end = child.end_lineno or child.lineno
                found.append((child.lineno, end, f"{prefix}{child.name}"))
                visit(child, f"{prefix}{child.name}.")

    visit(ast.parse(path.read_text()), "")
    return found


def _enclosing(path: Path, line: int) -> str:
    inside = [
        (last - first, name) for first, last, name in _functions(path) if first <= line <= last
    ]
    assert inside, f"{path}:{line} is in no function"
    return min(inside)[1]


def test_a_new_kind_fails_type_checking_at_every_dispatcher(tmp_path: Path) -> None:
    elements = ROOT / "stackmark/markup/elements.py"
    syntax = ROOT / "stackmark/markup/syntax.py"
    shadow_elements = tmp_path / "elements.py"
    shadow_syntax = tmp_path / "syntax.py"
    shadow_elements.write_text(
        _with_new_kind(elements.read_text(), "TypedElement", NEW_ELEMENT, "NewElement")
    )
    shadow_syntax.write_text(_with_new_kind(syntax.read_text(), "Span", NEW_SPAN, "NewSpan"))
    files = sorted(ELEMENT_DISPATCHERS.keys() | SPAN_DISPATCHERS.keys())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--shadow-file",
            str(elements),
            str(shadow_elements),
            "--shadow-file",
            str(syntax),
            str(shadow_syntax),
            *files,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # 1: type errors were found
    flagged: dict[str, dict[str, set[str]]] = {"NewElement": {}, "NewSpan": {}}
    others = []
    for line in proc.stdout.splitlines():
        match = _ERROR.match(line)
        if match is None:
            if ": error:" in line:
                others.append(line)
            continue
        path = match["path"]
        function = _enclosing(ROOT / path, int(match["line"]))
        flagged[match["kind"]].setdefault(path, set()).add(function)
    assert others == [], "the new kinds should break nothing but the dispatchers"
    assert flagged["NewElement"] == ELEMENT_DISPATCHERS
    assert flagged["NewSpan"] == SPAN_DISPATCHERS
