"""What the client said it can do (`initialize`'s `ClientCapabilities`), one question each.

The handlers ask these to choose the shape of an answer (markdown or plain
text, location links or locations) and whether a request to the client is
worth sending (show a document, refresh the inlay hints). A capability the
client left out counts as absent, except the hover's content format: a
client that names none gets markdown, as LSP's default says.
"""

from __future__ import annotations

from lsprotocol import types


def markdown_hovers(capabilities: types.ClientCapabilities) -> bool:
    hover = capabilities.text_document and capabilities.text_document.hover
    formats = hover.content_format if hover else None
    return not formats or types.MarkupKind.Markdown in formats


def location_links(capabilities: types.ClientCapabilities) -> bool:
    definition = capabilities.text_document and capabilities.text_document.definition
    return bool(definition and definition.link_support)


def link_tooltips(capabilities: types.ClientCapabilities) -> bool:
    links = capabilities.text_document and capabilities.text_document.document_link
    return bool(links and links.tooltip_support)


def work_done_progress(capabilities: types.ClientCapabilities) -> bool:
    """Whether the server may start progress reports of its own (progress.py)."""
    window = capabilities.window
    return bool(window and window.work_done_progress)


def show_document(capabilities: types.ClientCapabilities) -> bool:
    window = capabilities.window
    return bool(window and window.show_document and window.show_document.support)


def refreshes(capabilities: types.ClientCapabilities, name: str) -> bool:
    """Whether the client can be asked to refresh `name` (inlay hints, code lenses...)."""
    workspace = capabilities.workspace
    part = getattr(workspace, name, None) if workspace else None
    return bool(part and getattr(part, "refresh_support", False))


def content_registration(capabilities: types.ClientCapabilities) -> bool:
    """Whether the client takes a registration of `workspace/textDocumentContent`
    (the symbolized view's scheme, views.py)."""
    workspace = capabilities.workspace
    content = workspace.text_document_content if workspace else None
    return content is not None and bool(content.dynamic_registration)
