"""Diagnostics about markup: what is wrong, where, in llvm's wording.

A `Diagnostic` names its line and column range (0-based, in characters of
the decoded line), so an editor can underline the offending field. The
filter prints them the way llvm-symbolizer does: `error: <message>`, then a
location report (the whole input line and a caret under the byte offset).
"""

from __future__ import annotations

import enum

from stackmark.markup.syntax import Element, Field
from stackmark.plain import FrozenRecord


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Diagnostic(FrozenRecord):
    """One problem with the markup.

    `column` is None for problems that have no place in the line (llvm
    prints no location report for them, e.g. a missing debug file).
    `code` is a short stable name for tools (e.g. `bad-tag`, `field-count`).
    """

    __slots__ = _fields = __match_args__ = (
        "severity",
        "message",
        "line",
        "column",
        "end_column",
        "code",
    )
    severity: Severity
    message: str
    line: int
    column: int | None
    end_column: int | None
    code: str

    def __init__(
        self,
        severity: Severity,
        message: str,
        line: int,
        column: int | None,
        end_column: int | None,
        code: str,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "severity", severity)
        setattr_(self, "message", message)
        setattr_(self, "line", line)
        setattr_(self, "column", column)
        setattr_(self, "end_column", end_column)
        setattr_(self, "code", code)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def error_at_field(message: str, field: Field, code: str) -> Diagnostic:
    return Diagnostic(Severity.ERROR, message, field.line, field.start, field.end, code)


def type_error(what: str, field: Field) -> Diagnostic:
    """llvm's wording for a malformed field: expected <what>; found '<text>'."""
    return error_at_field(f"expected {what}; found '{field.text}'", field, "bad-field")


def bad_tag(element: Element) -> Diagnostic:
    return Diagnostic(
        Severity.ERROR,
        "tags must be all lowercase characters",
        element.line,
        element.tag_start,
        element.tag_end,
        "bad-tag",
    )


def _at_tag_end(severity: Severity, message: str, element: Element, code: str) -> Diagnostic:
    return Diagnostic(severity, message, element.line, element.tag_end, element.tag_end, code)


def field_count_exact(element: Element, expected: int) -> Diagnostic | None:
    """llvm's exact field-count check: too few is an error, too many a warning."""
    found = len(element.fields)
    if found == expected:
        return None
    severity = Severity.WARNING if found > expected else Severity.ERROR
    message = f"expected {expected} field(s); found {found}"
    return _at_tag_end(severity, message, element, "field-count")


def field_count_at_least(element: Element, expected: int) -> Diagnostic | None:
    found = len(element.fields)
    if found >= expected:
        return None
    message = f"expected at least {expected} field(s); found {found}"
    return _at_tag_end(Severity.ERROR, message, element, "too-few-fields")


def field_count_at_most(element: Element, expected: int) -> Diagnostic | None:
    found = len(element.fields)
    if found <= expected:
        return None
    message = f"expected at most {expected} field(s); found {found}"
    return _at_tag_end(Severity.WARNING, message, element, "too-many-fields")
