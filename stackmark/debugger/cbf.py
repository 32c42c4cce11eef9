"""`stackmark cbf decode DATA [--images IMAGEMAP]`: CBF bytes, symbolized in the debugger.

DATA is what `stackmark cbf decode` takes on the command line (hex,
Swift's base64, Swift's Codable JSON, @FILE, a `cbf: ...` line or a whole
pasted block of `stackmark bt --cbf` output: `stackmark.cbf_input` reads
both). The frames are symbolized against the
modules of the image map when there is one (from the JSON, or `--images`,
which takes an `images: ...` line too): a backtrace from another run is
then matched to the loaded files by build ID. Without an image map, the
addresses are taken to be this process's.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from stackmark.cbf_input import CbfInput, image_map_modules, read_cbf_input, read_image_map_input
from stackmark.debugger.backend import DebuggerError
from stackmark.debugger.command import Command, CommandGroup, CommandParser
from stackmark.debugger.session import Session
from stackmark.debugger.symbolize import symbolize_lines
from stackmark.formats import cbf
from stackmark.formats.imagemap import decode_image_map
from stackmark.model import Module
from stackmark.unwind.emit import context_lines, frame_lines

GROUP = CommandGroup(("cbf",), "Compact Backtrace Format (Swift's binary backtraces).")


def decoded_listing(
    session: Session, data: bytes, image_map: bytes | None, source: str = "DATA"
) -> list[str]:
    """The frames of CBF `data`, symbolized (see the module docstring)."""
    decoded = cbf.decode(data)
    if decoded.error is not None and not decoded.kinds:  # no frame to show: an error
        where = f"offset 0x{decoded.error_offset:x}: " if decoded.error_offset is not None else ""
        raise DebuggerError(f"{source}: {where}{decoded.error}")
    modules: list[Module]
    if image_map is not None:
        images = decode_image_map(image_map, f"{source} image map")
        for warning in images.warnings:
            session.warn(f"stackmark cbf decode: warning: {warning}\n")
        modules = image_map_modules(images)
    else:
        modules = session.modules()
    lines = symbolize_lines(session, context_lines(modules) + frame_lines(decoded.frames))
    if decoded.error is not None:
        where = f"offset 0x{decoded.error_offset:x}: " if decoded.error_offset is not None else ""
        session.warn(f"stackmark cbf decode: {source}: {where}{decoded.error}\n")
    elif decoded.ending is cbf.Ending.NO_END:
        session.warn(f"stackmark cbf decode: {source}: no end marker; it may be truncated\n")
    return lines


def _configure(parser: CommandParser) -> None:
    parser.add_argument(
        "data",
        metavar="DATA",
        help="the CBF bytes: hex, base64, Swift Codable JSON, @FILE, or 'cbf: ...' / "
        "'images: ...' lines as 'stackmark bt --cbf' prints them",
    )
    parser.add_argument(
        "--images",
        metavar="IMAGEMAP",
        help="a Compact Image Map (hex, base64, @FILE or an 'images: ...' line) giving the "
        "modules the addresses belong to",
    )


def _warn_notes(session: Session, given: CbfInput) -> None:
    for note in given.notes:
        session.warn(f"stackmark cbf decode: warning: {given.source}: {note}\n")


def _run(session: Session, args: argparse.Namespace) -> Iterable[str]:
    given = read_cbf_input(args.data)
    _warn_notes(session, given)
    image_map = given.image_map
    if args.images:
        images = read_image_map_input(args.images)
        _warn_notes(session, images)
        image_map = images.image_map
    return decoded_listing(session, given.backtrace, image_map, given.source)


DECODE = Command(
    words=("cbf", "decode"),
    summary="Decode a CBF backtrace and show its frames symbolized.",
    description=(
        "With an image map (from Swift's JSON, or --images), the frames are matched to\n"
        "the loaded files by build ID, so backtraces from other runs symbolize too;\n"
        "without one, the addresses are taken to be this process's."
    ),
    configure=_configure,
    run=_run,
)
