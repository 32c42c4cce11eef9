"""The client's capabilities, as the handlers read them: an absent part means "cannot",
except the hover's formats, where none named means markdown (LSP's default)."""

from __future__ import annotations

from lsprotocol import types
from stackmark_lsp import capabilities


def test_hovers_are_markdown_unless_the_client_names_formats_without_it() -> None:
    nothing = types.ClientCapabilities()
    plain = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.PlainText])
        )
    )
    both = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
            )
        )
    )
    assert [capabilities.markdown_hovers(c) for c in (nothing, plain, both)] == [
        True,
        False,
        True,
    ]


def test_an_absent_capability_is_one_the_client_lacks() -> None:
    nothing = types.ClientCapabilities()
    assert not capabilities.location_links(nothing)
    assert not capabilities.link_tooltips(nothing)
    assert not capabilities.show_document(nothing)
    assert not capabilities.work_done_progress(nothing)
    assert not capabilities.refreshes(nothing, "inlay_hint")
    assert not capabilities.content_registration(nothing)


def test_each_question_reads_its_own_part_of_the_capabilities() -> None:
    given = types.ClientCapabilities(
        window=types.WindowClientCapabilities(
            work_done_progress=True,
            show_document=types.ShowDocumentClientCapabilities(support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            definition=types.DefinitionClientCapabilities(link_support=True),
            document_link=types.DocumentLinkClientCapabilities(tooltip_support=True),
        ),
        workspace=types.WorkspaceClientCapabilities(
            inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True),
            text_document_content=types.TextDocumentContentClientCapabilities(
                dynamic_registration=True
            ),
        ),
    )
    assert capabilities.location_links(given)
    assert capabilities.link_tooltips(given)
    assert capabilities.show_document(given)
    assert capabilities.work_done_progress(given)
    assert capabilities.refreshes(given, "inlay_hint")
    assert not capabilities.refreshes(given, "code_lens")
    assert capabilities.content_registration(given)
