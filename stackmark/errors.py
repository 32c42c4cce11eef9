"""Error types shared by every part of the core.

Front ends catch `StackmarkError` at their boundary and show its message;
anything else escaping is a bug.
"""

from __future__ import annotations


class StackmarkError(Exception):
    """Base of every error stackmark reports to a user (never a traceback)."""


class FormatError(StackmarkError):
    """A binary or text input is malformed.

    `source` names the input (a path, or a description such as "<stdin>"),
    `offset` the byte offset (binary formats) where the problem was found.
    """

    def __init__(self, message: str, *, offset: int | None = None, source: str | None = None):
        self.reason = message
        self.offset = offset
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source:
            where.append(self.source)
        if self.offset is not None:
            where.append(f"offset 0x{self.offset:x}")
        prefix = ": ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def with_source(self, source: str) -> FormatError:
        """The same error, naming `source` (used when a reader of raw bytes
        is called on behalf of a file)."""
        return FormatError(self.reason, offset=self.offset, source=source)


class SymbolLookupError(StackmarkError):
    """No file could be found, or read, for a module."""
