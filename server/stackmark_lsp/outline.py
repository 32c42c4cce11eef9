"""The shape of a log: crash reports, their modules and backtraces.

A *crash report* is an epoch (from a reset to the next; see epochs.py).
A *backtrace* is a run of `bt` elements in one crash report whose frame
numbers increase; a frame number that does not (a new `#0`), a new crash
report, or a long gap (`GAP` lines without frames) starts another one.
Lines in between (interleaved log lines) do not break a backtrace.

These feed document symbols (the outline) and the "Symbolize" code lens.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from stackmark_lsp.epochs import Epoch
from stackmark_lsp.index import F_BT, flags_of, frame_of
from stackmark_lsp.logs import OpenLog
from stackmark_lsp.messages import Messages

GAP = 64  # lines without a frame that end a backtrace


@dataclass(slots=True)
class Backtrace:
    first: int  # line of its first frame
    last: int  # line of its last frame
    frames: int
    last_frame: int


@dataclass(slots=True)
class Report:
    epoch: Epoch
    first: int
    last: int  # last line (inclusive)
    backtraces: list[Backtrace]


def reports(log: OpenLog) -> list[Report]:
    """The crash reports of the log, each with its backtraces, in order."""
    index = log.index
    epochs = list(index.epochs())
    total = len(log.document)
    found: list[Report] = []
    for number, epoch in enumerate(epochs):
        last = epochs[number + 1].line - (0 if epochs[number + 1].column else 1) if (
            number + 1 < len(epochs)
        ) else total - 1  # fmt: skip
        found.append(Report(epoch, epoch.line, max(last, epoch.line), []))
    if not found:
        return found
    current = 0
    open_trace: Backtrace | None = None
    for line, entry in index.entries():
        flags = flags_of(entry)
        if not flags & F_BT:
            continue
        while current + 1 < len(found) and line > found[current].last:
            current += 1
            open_trace = None
        frame = frame_of(entry)
        report = found[current]
        if (
            open_trace is not None
            and frame > open_trace.last_frame
            and line - open_trace.last <= GAP
        ):
            open_trace.last, open_trace.last_frame = line, frame
            open_trace.frames += 1
        else:
            open_trace = Backtrace(line, line, 1, frame)
            report.backtraces.append(open_trace)
    return found


def document_symbols(log: OpenLog, t: Messages) -> list[types.DocumentSymbol]:
    symbols: list[types.DocumentSymbol] = []
    for report in reports(log):
        children: list[types.DocumentSymbol] = []
        for module_id, ((info, _column), name, build_id) in report.epoch.modules.items():
            line = info.chunk.start + info.local
            span = log.line_range(line)
            children.append(
                types.DocumentSymbol(
                    name=name or f"#{module_id}",
                    kind=types.SymbolKind.Module,
                    range=span,
                    selection_range=span,
                    detail=t("outline.module", id=module_id, build_id=build_id),
                )
            )
        for trace in report.backtraces:
            span = log.range(trace.first, 0, trace.last, len(log.document.line(trace.last)))
            children.append(
                types.DocumentSymbol(
                    name=t("outline.backtrace"),
                    kind=types.SymbolKind.Event,
                    range=span,
                    selection_range=log.line_range(trace.first),
                    detail=t("outline.frames", count=trace.frames),
                )
            )
        epoch = report.epoch
        if epoch.start is None:
            if not children:
                continue  # nothing before the first reset
            name = t("outline.top")
        else:
            name = t("outline.crash", line=report.first + 1)
        children.sort(key=lambda s: (s.range.start.line, s.range.start.character))
        span = log.range(report.first, 0, report.last, len(log.document.line(report.last)))
        symbols.append(
            types.DocumentSymbol(
                name=name,
                kind=types.SymbolKind.Namespace,
                range=span,
                selection_range=log.line_range(report.first),
                children=children,
            )
        )
    return symbols


def code_lenses(log: OpenLog, t: Messages, command: str) -> list[types.CodeLens]:
    """A "Symbolize" lens above the first frame of every backtrace."""
    lenses = []
    for report in reports(log):
        for trace in report.backtraces:
            lenses.append(
                types.CodeLens(
                    range=log.line_range(trace.first),
                    command=types.Command(
                        title=t("lens.symbolize"),
                        command=command,
                        arguments=[log.uri, trace.first],
                    ),
                )
            )
    return lenses
