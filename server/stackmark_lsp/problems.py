"""Diagnostics for a log: what the markup gets wrong, and modules without symbols.

Markup problems come from the index (the core's checks, on the offending
field). A module whose build ID no configured place has a binary for gets
a warning on its build ID; a module that never has a file (the kernel's
vDSO, `linux-vdso.so.1`) gets one piece of information for the whole log
instead. Modules are looked for in the background, and the diagnostics are
published again when the answers arrive.
"""

from __future__ import annotations

from collections.abc import Iterable

from lsprotocol import types

from stackmark.markup.diagnostics import Diagnostic, Severity
from stackmark.markup.elements import ModuleElement
from stackmark.model import Module
from stackmark.symbols.api import ModuleResolution
from stackmark_lsp.epochs import Position
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages
from stackmark_lsp.split import Preview
from stackmark_lsp.symbolization import SymbolService

MAX_DIAGNOSTICS = 5000  # per document: beyond this an editor gains nothing but lag
SOURCE = "stackmark"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.NOTE: types.DiagnosticSeverity.Information,
}


class ModuleRecords:
    """The module elements of a log by build ID (recomputed when its epochs change)."""

    def __init__(self) -> None:
        self._generation = -1
        self._by_build_id: dict[str, list[tuple[Module, Position]]] = {}

    def by_build_id(self, log: OpenLog) -> dict[str, list[tuple[Module, Position]]]:
        if self._generation != log.index.generation:
            found: dict[str, list[tuple[Module, Position]]] = {}
            for epoch in log.index.epochs():
                for module_id, (where, name, build_id) in epoch.modules.items():
                    module = Module(module_id, name, build_id)
                    found.setdefault(build_id, []).append((module, where))
            self._by_build_id = found
            self._generation = log.index.generation
        return self._by_build_id


def markup_diagnostics(
    log: OpenLog, t: Messages, preview: Preview | None = None
) -> list[types.Diagnostic]:
    """The markup's problems, from the index (or from `preview` while the index is read)."""
    found: list[types.Diagnostic] = []
    source = log.index.diagnostics() if preview is None else preview.diagnostics
    for line, diag in source:
        found.append(_convert(log, line, diag, t))
        if len(found) >= MAX_DIAGNOSTICS:
            break
    return found


def _convert(log: OpenLog, line: int, diag: Diagnostic, t: Messages) -> types.Diagnostic:
    if diag.column is None:
        span = log.line_range(line)
    else:
        end = diag.end_column if diag.end_column is not None else diag.column
        span = log.range(line, diag.column, line, end)
    return types.Diagnostic(
        range=span,
        message=t.diagnostic(diag),
        severity=_SEVERITY[diag.severity],
        code=diag.code,
        source=SOURCE,
    )


def module_diagnostics(
    log: OpenLog,
    records: ModuleRecords,
    service: SymbolService,
    t: Messages,
    preview: Preview | None = None,
) -> tuple[list[types.Diagnostic], list[Module]]:
    """(warnings for modules known to have no binary, modules not looked for yet).

    The index counts the build IDs the log declares, so a log whose modules were
    all found costs one question per build ID; the module elements themselves are
    only gathered (`records`) when some build ID is unresolved or missing. While
    the index is read, `preview` has them all.
    """
    unknown: list[str] = []
    missing: list[tuple[str, ModuleResolution]] = []
    build_ids = log.index.build_ids if preview is None else preview.build_ids
    for build_id in build_ids:
        if not build_id:
            continue
        resolution = service.resolved_build_id(build_id)
        if resolution is None:
            unknown.append(build_id)
        elif resolution.binary is None:
            missing.append((build_id, resolution))
    if not unknown and not missing:
        return [], []
    if preview is None:
        to_find = _first_modules(_index_modules(log), set(unknown))
    else:
        to_find = _first_modules((module for module, _, _ in preview.modules()), set(unknown))
    if not missing:
        return [], to_find
    if preview is None:
        declared = {
            build_id: [(module, info.line, column) for module, (info, column) in places]
            for build_id, places in records.by_build_id(log).items()
        }
    else:
        declared = preview.by_build_id()
    found: list[types.Diagnostic] = []
    noted: set[str] = set()  # modules with no file (the vDSO), said once
    for build_id, resolution in missing:
        for module, line, column in declared.get(build_id, ()):
            span = _build_id_range(log, line, column)
            if module.has_no_file:
                if module.name not in noted:
                    noted.add(module.name)
                    found.append(_no_file(span, module, t))
                continue
            message = t("diag.no_binary", build_id=build_id, id=module.id, name=module.name)
            if resolution.searched:
                places = ", ".join(resolution.searched[:3])
                message += "\n" + t("diag.no_binary.searched", places=places)
            found.append(
                types.Diagnostic(
                    range=span,
                    message=message,
                    severity=types.DiagnosticSeverity.Warning,
                    code="no-symbols",
                    source=SOURCE,
                )
            )
            if len(found) >= MAX_DIAGNOSTICS:
                break
    return found, to_find


def _no_file(span: types.Range, module: Module, t: Messages) -> types.Diagnostic:
    """Information, once per log: the module never has a file (`Module.has_no_file`)."""
    return types.Diagnostic(
        range=span,
        message=t("diag.no_file", name=module.name),
        severity=types.DiagnosticSeverity.Information,
        code="no-file",
        source=SOURCE,
    )


def _index_modules(log: OpenLog) -> Iterable[Module]:
    """The module elements of the log, in order, from the index (as far as asked)."""
    for epoch in log.index.epochs():
        for module_id, (_, name, build_id) in epoch.modules.items():
            yield Module(module_id, name, build_id)


def _first_modules(modules: Iterable[Module], build_ids: set[str]) -> list[Module]:
    """The first module element declaring each of `build_ids` (what to look the binary
    up with), reading the crash reports only as far as needed."""
    found: list[Module] = []
    if not build_ids:
        return found
    for module in modules:
        if module.build_id in build_ids:
            build_ids.discard(module.build_id)
            found.append(module)
            if not build_ids:
                break
    return found


def _build_id_range(log: OpenLog, line: int, column: int) -> types.Range:
    # The line is read again by the core (a module element is on one line, so this
    # does not need the index, which may not have reached the line yet).
    for element, typed in log.index.elements(line).elements:
        if element.start == column and isinstance(typed, ModuleElement):
            field = element.fields[3]
            return log.range(field.line, field.start, field.line, field.end)
    return log.line_range(line)
