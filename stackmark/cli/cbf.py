"""`stackmark cbf`: encode backtraces to the Compact Backtrace Format and decode them.

    stackmark cbf encode [--word-bits 64] [--format hex|base64|raw|swift-json] < frames
    stackmark cbf decode [--json] [--images IMAGEMAP] DATA

`encode` reads markup `{{{bt:N:ADDR[:pc|:ra]}}}` elements (gaps in N are
omitted frames; a number that does not increase, or `{{{reset}}}`, starts
the next backtrace) or lines `pc:ADDR`, `ra:ADDR`, `async:ADDR`,
`omitted:COUNT`, `truncated`, and the lines `decode` writes for markers
markup has no element for (`... (3 frames omitted)` at the end,
`... (backtrace truncated)`); other lines are ignored, so a whole log can be
piped in. One encoded backtrace is printed per line.

`decode` takes DATA as hex, base64 (Swift's unpadded form included), Swift's
Codable JSON (`{"backtrace": ..., "imageMap": ...}`), the `cbf: ...` and
`images: ...` lines the debuggers' `stackmark bt --cbf` prints (one, or the
whole pasted block), or `@FILE` (`@-`: stdin) holding any of these or raw
bytes (see `stackmark.cbf_input`). It prints markup `bt` lines
(with `--images`, or an image map in the JSON, preceded by the module
context, ready for `stackmark symbolize`), or JSON with `--json`. With
`--symbolize` it runs those lines through `stackmark symbolize` itself: the
image map's files that exist here are used (as `--obj`), and `--obj` /
`--debug-file-directory` add more places.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from stackmark.cbf_input import CbfInput, image_map_modules, read_cbf_input, read_image_map_input
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats import cbf
from stackmark.formats.imagemap import ImageMap, decode_image_map
from stackmark.formats.swift_backtrace import SwiftBacktrace, encode_base64
from stackmark.model import BacktraceFrame, FrameKind, Module
from stackmark.unwind.emit import OMITTED_LINE, TRUNCATED_LINE, context_lines, frame_lines

_BT = re.compile(r"\{\{\{bt:(\d+):(0x[0-9a-fA-F]+)(?::(pc|ra))?\}\}\}")
_RESET = re.compile(r"\{\{\{reset(?::[^}]*)?\}\}\}")
_KIND_LINE = re.compile(
    r"^\s*(?:(pc|ra|async)\s*[:\s]\s*(\S+)|(omitted)\s*[:\s]\s*(\S+)|(truncated))\s*$",
    re.IGNORECASE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    enc = actions.add_parser(
        "encode",
        help="frames (markup bt lines or KIND:ADDR lines) on stdin -> CBF",
        description="Encode the backtraces on stdin as CBF, one per output line.",
    )
    enc.add_argument("--word-bits", type=int, choices=(16, 32, 64), default=64)
    enc.add_argument(
        "--format",
        choices=("hex", "base64", "raw", "swift-json"),
        default="hex",
        help="hex (default), Swift's unpadded base64, raw bytes, or Swift's Codable JSON",
    )
    enc.add_argument(
        "--absolute-first",
        action="store_true",
        help="write the first address absolute, as the CBF document asks "
        "(Swift writes it relative to 0)",
    )
    enc.add_argument(
        "--architecture", default="x86_64", help="for --format swift-json (default x86_64)"
    )
    dec = actions.add_parser(
        "decode",
        help="CBF (hex, base64, Swift JSON, @FILE) -> markup bt lines or JSON",
        description="Decode a CBF backtrace.",
    )
    dec.add_argument(
        "data",
        metavar="DATA",
        help="hex, base64, Swift JSON, 'cbf: ...' / 'images: ...' lines as `stackmark bt --cbf` "
        "prints them in a debugger, or @FILE holding any of these (@- = stdin)",
    )
    dec.add_argument("--json", action="store_true", help="print JSON instead of markup")
    dec.add_argument(
        "--symbolize",
        action="store_true",
        help="print the frames symbolized (as `stackmark symbolize` does), not as markup",
    )
    dec.add_argument(
        "--obj",
        action="append",
        default=[],
        metavar="FILE",
        help="with --symbolize: a binary or debug file to take symbols from (repeatable)",
    )
    dec.add_argument(
        "--debug-file-directory",
        action="append",
        default=[],
        metavar="DIR",
        help="with --symbolize: a directory of .build-id files (repeatable)",
    )
    dec.add_argument(
        "--images",
        metavar="IMAGEMAP",
        help="a Compact Image Map (hex, base64, an 'images: ...' line or @FILE): print module "
        "context before the frames (DATA's own 'images:' line or Swift JSON gives one too)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "encode":
        return _encode(args)
    return _decode(args)


# --- encode --------------------------------------------------------------------


@dataclass
class _Collector:
    """Frames of the backtrace being read, and the finished ones."""

    done: list[list[BacktraceFrame]]
    current: list[BacktraceFrame]
    last_number: int = -1

    def finish(self) -> None:
        if self.current:
            self.done.append(self.current)
        self.current = []
        self.last_number = -1


def parse_frames(lines: Iterable[str], source: str = "<stdin>") -> list[list[BacktraceFrame]]:
    """The backtraces in `lines` (see the module docstring)."""
    found = _Collector([], [])
    for number, line in enumerate(lines, 1):
        if _RESET.search(line):
            found.finish()
        elements = list(_BT.finditer(line))
        if elements:
            for match in elements:
                _add_bt(found, match)
            continue
        if line.strip() == TRUNCATED_LINE:
            found.current.append(BacktraceFrame(FrameKind.TRUNCATED))
            found.finish()
            continue
        omitted = OMITTED_LINE.match(line.strip())
        if omitted:
            count = int(omitted.group(1))
            found.current.append(BacktraceFrame(FrameKind.OMITTED, count=count))
            found.last_number += count
            continue
        kind_line = _KIND_LINE.match(line)
        if kind_line:
            found.current.append(_kind_frame(kind_line, number, source))
            if kind_line.group(5):
                found.finish()
    found.finish()
    return found.done


def _add_bt(found: _Collector, match: re.Match[str]) -> None:
    frame_number = int(match.group(1))
    if frame_number <= found.last_number:
        found.finish()
    gap = frame_number - found.last_number - 1
    if gap > 0:  # numbers skipped (or a first frame above 0): omitted frames
        found.current.append(BacktraceFrame(FrameKind.OMITTED, count=gap))
    kind = FrameKind.PC if match.group(3) == "pc" else FrameKind.RA
    found.current.append(BacktraceFrame(kind, int(match.group(2), 16)))
    found.last_number = frame_number


def _kind_frame(match: re.Match[str], line: int, source: str) -> BacktraceFrame:
    if match.group(5):
        return BacktraceFrame(FrameKind.TRUNCATED)
    if match.group(3):
        count = _number(match.group(4), line, source, "omitted-frame count")
        return BacktraceFrame(FrameKind.OMITTED, count=count)
    kind = FrameKind(match.group(1).lower())
    return BacktraceFrame(kind, _number(match.group(2), line, source, "address"))


def _number(text: str, line: int, source: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise FormatError(f"line {line}: bad {what} {text!r}", source=source) from None


def _encode(args: argparse.Namespace) -> int:
    backtraces = parse_frames(sys.stdin)
    if not backtraces:
        raise StackmarkError(
            "no frames on stdin (expected {{{bt:N:0xADDR:ra}}} elements or KIND:ADDR lines)"
        )
    for index, frames in enumerate(backtraces):
        try:
            data = cbf.encode(frames, args.word_bits, absolute_first=args.absolute_first)
        except cbf.CbfError as exc:
            raise StackmarkError(f"backtrace {index + 1}: {exc}") from None
        if args.format == "raw":
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        elif args.format == "hex":
            print(data.hex())
        elif args.format == "base64":
            print(encode_base64(data))
        else:
            print(SwiftBacktrace(args.architecture, data).to_json())
    return 0


# --- decode --------------------------------------------------------------------


def _decode(args: argparse.Namespace) -> int:
    given = read_cbf_input(args.data)
    _print_notes(given)
    decoded = cbf.decode(given.backtrace)
    image_bytes = given.image_map
    image_source = given.source
    if args.images:
        images_input = read_image_map_input(args.images)
        _print_notes(images_input)
        image_bytes, image_source = images_input.image_map, images_input.source
    image_map = decode_image_map(image_bytes, image_source) if image_bytes is not None else None
    if image_map is not None:
        for warning in image_map.warnings:
            print(f"stackmark cbf: warning: {image_source}: {warning}", file=sys.stderr)
    modules = image_map_modules(image_map) if image_map is not None else []
    if args.json and args.symbolize:
        raise StackmarkError("--json and --symbolize do not go together")
    if args.json:
        print(json.dumps(_json(decoded, image_map), indent=2))
    else:
        lines = (context_lines(modules) if modules else []) + frame_lines(decoded.frames)
        if args.symbolize:
            status = _symbolize(lines, modules, args, given.source)
            if status and decoded.error is None:
                return status
        else:
            for line in lines:
                print(line)
    if decoded.error is not None:
        offset = f"offset 0x{decoded.error_offset:x}: " if decoded.error_offset is not None else ""
        shown = "" if decoded.word_bits is None else f"; {len(decoded)} frames before it"
        print(f"stackmark cbf: {given.source}: {offset}{decoded.error}{shown}", file=sys.stderr)
        return 1
    if decoded.ending is cbf.Ending.NO_END:
        print(
            f"stackmark cbf: warning: {given.source}: no end marker; "
            "the backtrace may be truncated",
            file=sys.stderr,
        )
    return 0


def _print_notes(given: CbfInput) -> None:
    for note in given.notes:
        print(f"stackmark cbf: warning: {given.source}: {note}", file=sys.stderr)


def _symbolize(
    lines: list[str], modules: list[Module], args: argparse.Namespace, source: str
) -> int:
    """`lines` through the markup filter of `stackmark symbolize`, to stdout."""
    from stackmark.cli import symbolize

    parser = argparse.ArgumentParser(prog="stackmark symbolize")
    symbolize.add_arguments(parser)
    objects = [*args.obj, *(m.path for m in modules if m.path and os.path.isfile(m.path))]
    argv = [f"--obj={path}" for path in objects]
    argv += [f"--debug-file-directory={path}" for path in args.debug_file_directory]
    options = parser.parse_args(argv)
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")

    def err_write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    sys.stdout.flush()
    return symbolize.run_streams(
        [(source, io.BytesIO(data))],
        sys.stdout.buffer,
        err_write,
        options,
        symbolize._make_symbolizer(options),
        symbolize._make_naming(options),
    )


def _json(decoded: cbf.DecodedBacktrace, image_map: ImageMap | None) -> dict[str, object]:
    frames: list[dict[str, object]] = []
    for kind, value in zip(decoded.kinds, decoded.values, strict=True):
        if kind is FrameKind.OMITTED:
            frames.append({"kind": "omitted", "count": value})
        else:
            frames.append({"kind": kind.value, "address": f"0x{value:x}"})
    result: dict[str, object] = {
        "word_bits": decoded.word_bits,
        "frames": frames,
        "truncated": decoded.truncated,
        "ending": decoded.ending.value,
        "size": decoded.size,
    }
    if decoded.error is not None:
        result["error"] = {"message": decoded.error, "offset": decoded.error_offset}
    if image_map is not None:
        result["platform"] = image_map.platform
        result["images"] = [
            {
                "name": image.name,
                "path": image.path,
                "build_id": image.build_id.hex() if image.build_id else None,
                "base": f"0x{image.base:x}",
                "end_of_text": f"0x{image.end_of_text:x}",
            }
            for image in image_map.images
        ]
    return result
