"""An open log: its text, its index, and the way to the element under a position.

`OpenLog` ties a `Document` and its `Index` together and converts between
the client's positions (UTF-16 units by default) and string indexes.
`Target` is what the features start from: the element under the cursor,
decoded by the core, with the epoch in force where it stands.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from lsprotocol import types

from stackmark.markup.context import Placement, lookup_address
from stackmark.markup.elements import BtElement, DataElement, PcElement, TypedElement
from stackmark.markup.syntax import Element
from stackmark_lsp.document import Document, PositionCodec
from stackmark_lsp.epochs import Epoch
from stackmark_lsp.index import Index
from stackmark_lsp.memory import quiet_gc

logger = logging.getLogger("stackmark_lsp")  # the server's log lines keep one name


def uri_to_path(uri: str) -> str | None:
    """The file system path of a `file:` URI (None for other schemes)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path)


class OpenLog:
    """One open document and what the server knows about it."""

    def __init__(
        self,
        uri: str,
        text: str,
        version: int,
        codec: PositionCodec,
        *,
        read: bool = True,
        stop: int | None = None,
    ) -> None:
        """`read=False` leaves the index unread, and `stop` the text after it out: a log
        opened in two halves (see split.py)."""
        self.uri = uri
        self.codec = codec
        self.document = Document(uri, text, version, stop=stop)
        self.index = Index(self.document, read=read)
        self.path = uri_to_path(uri)

    @property
    def version(self) -> int:
        return self.document.version

    @property
    def name(self) -> str:
        path = self.path or urlparse(self.uri).path
        return os.path.basename(path) or self.uri

    # -- edits -----------------------------------------------------------------------

    def edit(self, changes: Sequence[types.TextDocumentContentChangeEvent], version: int) -> None:
        """Apply a `didChange`'s changes in order, with the garbage collector quiet
        (memory.py). If the index cannot follow one, it is read again from the text,
        which is right: the log keeps being served."""
        with quiet_gc():
            for change in changes:
                try:
                    self.change(change, version)
                except Exception:
                    logger.exception("the index could not follow an edit of %s", self.uri)
                    self.index.rebuild()

    def change(self, change: types.TextDocumentContentChangeEvent, version: int) -> None:
        """Apply one content change (a range edit, or the whole text)."""
        self.document.version = version
        if isinstance(change, types.TextDocumentContentChangePartial):
            start = self.to_index(change.range.start)
            end = self.to_index(change.range.end)
            self.index.edit(self.document.replace(start, end, change.text))
        else:
            self.document.set_text(change.text)
            self.index.rebuild()

    # -- positions -----------------------------------------------------------------

    def to_index(self, position: types.Position) -> tuple[int, int]:
        """(line, string index) of a client position (clamped to the text)."""
        count = len(self.document)
        if position.line >= count:
            return self.document.end_position()
        line = max(position.line, 0)
        return line, self.codec.to_index(self.document.line(line), position.character)

    def position(self, line: int, index: int) -> types.Position:
        text = self.document.line(line)
        return types.Position(line=line, character=self.codec.to_client(text, index))

    def range(self, line: int, start: int, end_line: int, end: int) -> types.Range:
        return types.Range(start=self.position(line, start), end=self.position(end_line, end))

    def element_range(self, element: Element) -> types.Range:
        return self.range(element.line, element.start, element.end_line, element.end)

    def line_range(self, line: int) -> types.Range:
        return self.range(line, 0, line, len(self.document.line(line)))

    # -- elements --------------------------------------------------------------------

    def target(self, position: types.Position) -> Target | None:
        """The element under `position`, if any."""
        line, column = self.to_index(position)
        found = self.index.element_at(line, column)
        if found is None:
            return None
        element, typed = found
        return Target(element, typed, self.index.epoch_at(element.line, element.start))


@dataclass(frozen=True, slots=True)
class Target:
    """An element, decoded, and the epoch in force where it stands."""

    element: Element
    typed: TypedElement
    epoch: Epoch

    @property
    def where(self) -> tuple[int, int]:
        """Its position, for "declared before this element" questions."""
        return self.element.line, self.element.start

    def placement(self, address: int | None = None) -> Placement | None:
        """Where the element's address lies (pc/bt/data: after llvm's -1), or `address`'s."""
        if address is None:
            typed = self.typed
            if not isinstance(typed, PcElement | BtElement | DataElement) or not typed.ok:
                return None
            address = lookup_address(typed)
        mapping = self.epoch.mapping_at(address, self.where)
        if mapping is None:
            return None
        return Placement(address, mapping, mapping.to_module_relative(address))
