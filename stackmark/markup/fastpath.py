"""The common backtrace line, without the general machinery.

Most markup lines in a real log are one `{{{bt:N:ADDR[:ra|:pc]}}}` with
plain text around it. `bt_line` renders such a line directly (colour off)
and returns None for anything else, or for anything that needs a
diagnostic, so that the filter's general path handles it: the output is
the same either way (tests/unit/test_markup_properties.py checks that),
only faster.
"""

from __future__ import annotations

from stackmark.markup.context import MarkupContext
from stackmark.markup.fields import U64_MASK, parse_address, parse_frame_number
from stackmark.markup.layout import plain_bt_frames
from stackmark.markup.naming import Naming
from stackmark.markup.resolve import Resolver


def bt_line(
    text: str,
    context: MarkupContext,
    resolver: Resolver,
    naming: Naming,
    eol: str,
    show_invalid: bool,
) -> str | None:
    """`text` with its one `bt` element symbolized, or None (use the general path)."""
    start = text.find("{{{bt:")
    if start < 0 or "\x1b" in text:
        return None
    end = text.find("}}}", start + 6)
    if end < 0 or "{{{" in text[:start] or "{{{" in text[end + 3 :]:
        return None
    fields = text[start + 6 : end].split(":")
    if len(fields) == 3:
        kind = fields[2]
        if kind not in ("ra", "pc"):
            return None
    elif len(fields) == 2:
        kind = "ra"
    else:
        return None
    number = parse_frame_number(fields[0])
    address = parse_address(fields[1])
    if number is None or address is None:
        return None
    if kind == "ra":
        address = (address - 1) & U64_MASK
    result = resolver.code(context, address)
    placement = result.placement
    if placement is None or result.error is not None:
        return None
    module = placement.module
    frames = naming.frame_texts((module.build_id, placement.module_relative), result.frames)
    rendered = plain_bt_frames(
        number, address, frames, module.name, placement.module_relative, eol, show_invalid
    )
    return text[:start] + rendered + text[end + 3 :]
