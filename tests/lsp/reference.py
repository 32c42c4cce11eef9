"""The markup diagnostics of a whole log, computed from scratch with the core only.

This is the oracle for the language server's incremental index: one pass
over the lines, each parsed by the core parser (multi-line elements on),
each element decoded by the core, contextual elements replayed into a core
`MarkupContext` (a fresh one at every reset), and every `pc`/`bt`/`data`
address looked up in the context as it stands at that point.
"""

from __future__ import annotations

import re

from stackmark.markup.context import MarkupContext, lookup_address
from stackmark.markup.diagnostics import Diagnostic
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    MmapElement,
    ModuleElement,
    PcElement,
    ResetElement,
    decode,
)
from stackmark.markup.parser import MarkupParser, Pending
from stackmark.markup.syntax import MULTILINE_TAGS

Problem = tuple[int, int | None, int | None, str, str]  # line, column, end, code, message


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP counts them: broken at \\r\\n, \\r or \\n; the last may be empty."""
    return re.split(r"\r\n|\r|\n", text)


def problems(text: str) -> list[Problem]:
    parser = MarkupParser(MULTILINE_TAGS)
    context = MarkupContext()
    pending: Pending | None = None
    found: list[Problem] = []

    def add(diag: Diagnostic) -> None:
        found.append((diag.line, diag.column, diag.end_column, diag.code, diag.message))

    for number, line in enumerate(lsp_lines(text)):
        parsed = parser.parse(line, number, pending)
        pending = parsed.pending
        for element in parsed.elements:
            typed = decode(element)
            for diag in typed.diagnostics:
                add(diag)
            if not typed.ok:
                continue
            if isinstance(typed, ResetElement):
                context = MarkupContext()
            elif isinstance(typed, ModuleElement):
                result = context.declare_module(typed)
                if isinstance(result, Diagnostic):
                    add(result)
            elif isinstance(typed, MmapElement):
                mapped = context.map_segment(typed)
                if isinstance(mapped, Diagnostic):
                    add(mapped)
            elif isinstance(typed, PcElement | BtElement | DataElement) and (
                context.find(lookup_address(typed)) is None
            ):
                field = element.fields[1 if isinstance(typed, BtElement) else 0]
                found.append(
                    (field.line, field.start, field.end, "no-mmap", "no mmap covers address")
                )
    return sorted(found, key=_order)


def _order(problem: Problem) -> tuple[int, int, int, str, str]:
    line, column, end, code, message = problem
    return line, -1 if column is None else column, -1 if end is None else end, code, message
