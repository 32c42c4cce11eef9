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
Codable JSON (`{"backtrace": ..., "imageMap": ...}`) or `@FILE` (`@-`:
stdin) holding any of these or raw bytes. It prints markup `bt` lines
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

from stackmark.elf import PT_LOAD, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats import cbf
from stackmark.formats.imagemap import ImageMap, decode_image_map
from stackmark.formats.swift_backtrace import SwiftBacktrace, decode_base64, encode_base64
from stackmark.model import BacktraceFrame, FrameKind, Module
from stackmark.unwind.emit import OMITTED_LINE, TRUNCATED_LINE, context_lines, frame_lines

_BT = re.compile(r"\{\{\{bt:(\d+):(0x[0-9a-fA-F]+)(?::(pc|ra))?\}\}\}")
_RESET = re.compile(r"\{\{\{reset(?::[^}]*)?\}\}\}")
_KIND_LINE = re.compile(
    r"^\s*(?:(pc|ra|async)\s*[:\s]\s*(\S+)|(omitted)\s*[:\s]\s*(\S+)|(truncated))\s*$",
    re.IGNORECASE,
)
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F\s:]*$")


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
    dec.add_argument("data", metavar="DATA", help="hex, base64, Swift JSON, or @FILE (@- = stdin)")
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
        help="a Compact Image Map (hex, base64 or @FILE): print module context before the frames",
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


@dataclass
class _Input:
    """What DATA held: the CBF bytes and, from Swift JSON, the image map."""

    backtrace: bytes
    image_map: bytes | None
    source: str


def read_data(argument: str, what: str = "DATA") -> _Input:
    """Hex, base64, Swift JSON or @FILE (raw bytes allowed in files)."""
    source = what
    if argument.startswith("@"):
        name = argument[1:]
        source = "<stdin>" if name == "-" else name
        try:
            if name == "-":
                raw = sys.stdin.buffer.read()
            else:
                with open(name, "rb") as f:
                    raw = f.read()
        except OSError as exc:
            raise StackmarkError(f"{name}: cannot read: {exc.strerror or exc}") from None
        if raw[:1] in (b"\x00", b"\x01", b"\x02"):  # an info byte: raw binary
            return _Input(raw, None, source)
        try:
            argument = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _Input(raw, None, source)
    text = argument.strip()
    if text.startswith("{"):
        swift = SwiftBacktrace.from_json(text, source)
        return _Input(swift.backtrace, swift.image_map, source)
    return _Input(_text_bytes(text, source), None, source)


def _text_bytes(text: str, source: str) -> bytes:
    """Hex (what CBF/CIF hex starts with: '0') or base64 (starts with 'A')."""
    compact = "".join(text.split())
    if compact.startswith(("0", "0x")) and _HEX.match(compact):
        digits = compact.removeprefix("0x").replace(":", "")
        if len(digits) % 2:
            raise FormatError(f"odd number of hex digits ({len(digits)})", source=source)
        return bytes.fromhex(digits)
    decoded = decode_base64(compact)
    if decoded.stopped_at is not None:
        print(
            f"stackmark cbf: warning: {source}: base64 stops at character {decoded.stopped_at} "
            f"({compact[decoded.stopped_at]!r}); using the {len(decoded.data)} bytes before it",
            file=sys.stderr,
        )
    return decoded.data


def image_map_modules(image_map: ImageMap) -> list[Module]:
    """Modules for an image map; an image whose file is here gets the module-relative
    address of its first PT_LOAD (ET_EXEC links above 0), else 0."""
    modules = []
    for index, image in enumerate(image_map.images):
        module_relative = 0
        if image.path and os.path.isfile(image.path):
            try:
                with ElfFile.open(image.path) as elf:
                    loads = [s.vaddr for s in elf.segments if s.type == PT_LOAD]
                    if loads:
                        module_relative = min(loads) & ~0xFFF
            except StackmarkError:
                pass
        modules.append(image.to_module(index, module_relative))
    return modules


def _decode(args: argparse.Namespace) -> int:
    given = read_data(args.data)
    decoded = cbf.decode(given.backtrace)
    image_bytes = given.image_map
    image_source = given.source
    if args.images:
        images_input = read_data(args.images, "IMAGEMAP")
        image_bytes, image_source = images_input.backtrace, images_input.source
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
