"""Printing diagnostics on stderr, the way llvm-symbolizer does (and a bit better).

llvm prints `error: <message>` and then a location report: the whole input
line with its line ending, and a line with a caret under the byte offset of
the problem. On a terminal, `error:` is bold red, `warning:` bold magenta,
the caret green; for the field-count checks llvm colours the whole message.

stackmark's own style adds the input name, line and column in front
(`log.txt:12:7: error: ...`), puts the caret under the character, so it
lines up on screen with non-ASCII text before it, and echoes only the part
of a long line around the problem.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from stackmark.markup.diagnostics import Diagnostic, Severity
from stackmark.markup.styled import RESET_CODE, colour_code

_SEVERITY_COLOUR = {Severity.ERROR: 1, Severity.WARNING: 5, Severity.NOTE: 0}

ECHO_CONTEXT = 100
"""stackmark style: characters of a long line echoed on each side of the
problem (a line with a million elements would otherwise be echoed whole for
each of its errors: terabytes of stderr)."""


def stream_wants_colour(fd: int) -> bool:
    """Colour on a terminal that can show it (LLVM's auto detection, roughly)."""
    try:
        if not os.isatty(fd):
            return False
    except OSError:
        return False
    return os.environ.get("TERM", "") not in ("", "dumb")


def byte_column(text: str, column: int) -> int:
    """Byte offset of character `column` of a line decoded with surrogateescape."""
    return len(text[:column].encode("utf-8", "surrogateescape"))


def echo_window(text: str, column: int) -> tuple[str, int]:
    """The part of `text` echoed under a diagnostic at `column`, and the
    caret's column in it: the whole line, or for a long one `ECHO_CONTEXT`
    characters on each side of `column`, with "..." where it was cut."""
    if len(text) <= 2 * ECHO_CONTEXT + 6:
        return text, column
    start = max(0, column - ECHO_CONTEXT)
    end = min(len(text), column + ECHO_CONTEXT)
    head = "..." if start else ""
    tail = "..." if end < len(text) else ""
    return head + text[start:end] + tail, column - start + len(head)


class DiagnosticPrinter:
    """Formats diagnostics and hands the text to `write` (stderr)."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        colour: bool = False,
        llvm_style: bool = True,
        source: str = "<stdin>",
    ) -> None:
        self._write = write
        self.colour = colour
        self.llvm_style = llvm_style
        self.source = source
        self.errors = 0
        self.warnings = 0

    def report(self, diag: Diagnostic, line_text: str, eol: str) -> None:
        """Print `diag`; `line_text` + `eol` is the input line it is about."""
        if diag.severity is Severity.ERROR:
            self.errors += 1
        elif diag.severity is Severity.WARNING:
            self.warnings += 1
        prefix = f"{diag.severity.value}: "
        parts: list[str] = []
        if not self.llvm_style:
            where = f"{self.source}:{diag.line + 1}:"
            if diag.column is not None:
                where += f"{diag.column + 1}:"
            parts.append(where + " ")
        if self.colour:
            start = colour_code(_SEVERITY_COLOUR[diag.severity], True)
            if diag.code == "field-count" and self.llvm_style:
                parts.append(f"{start}{prefix}{diag.message}\n{RESET_CODE}")
            else:
                parts.append(f"{start}{prefix}{RESET_CODE}{diag.message}\n")
        else:
            parts.append(f"{prefix}{diag.message}\n")
        if diag.column is not None:
            if self.llvm_style:
                parts.append(line_text + (eol or "\n"))
                indent = byte_column(line_text, diag.column)
            else:
                shown, indent = echo_window(line_text, diag.column)
                parts.append(shown + (eol or "\n"))
            caret = f"{colour_code(2, False)}^{RESET_CODE}" if self.colour else "^"
            parts.append(" " * indent + caret + "\n")
        self._write("".join(parts))

    def note(self, message: str) -> None:
        """A free-standing note (no line), e.g. where symbols were looked for."""
        if self.colour:
            self._write(f"{colour_code(0, True)}note: {RESET_CODE}{message}\n")
        else:
            self._write(f"note: {message}\n")
