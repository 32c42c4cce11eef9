"""What a user hands `stackmark cbf decode`, on the command line or in a debugger.

DATA (and `--images`) may be:

- hex (`0x` and `:` or spaces allowed) or Swift's base64;
- Swift's Codable JSON `{"backtrace": ..., "imageMap": ...}`;
- a line `cbf: BASE64` or `images: BASE64`, as `stackmark bt --cbf` prints
  them in GDB and LLDB, or a whole pasted block of such output: the first
  `cbf:` line is the backtrace and the first `images:` line after it the
  image map (other lines, such as the decoded frames, are ignored);
- `@FILE` (`@-`: stdin) holding any of these, or raw CBF bytes.

Both front ends (`stackmark.cli.cbf` and `stackmark.debugger.cbf`) read
their arguments here, so they accept the same things.

    given = read_cbf_input("cbf: AhV...\\nimages: AgV...")
    given.backtrace, given.image_map, given.notes
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field

from stackmark.elf import PT_LOAD, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.imagemap import ImageMap
from stackmark.formats.swift_backtrace import SwiftBacktrace, decode_base64
from stackmark.model import Module

BACKTRACE_LABEL = "cbf:"
IMAGE_MAP_LABEL = "images:"
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F\s:]*$")


@dataclass(frozen=True, slots=True)
class CbfInput:
    """The CBF bytes a DATA argument held, the image map that came with them (Swift
    JSON, an `images:` line), where they came from, and what the user should be told
    (base64 cut short, a block with several backtraces)."""

    backtrace: bytes
    image_map: bytes | None
    source: str
    notes: list[str] = field(default_factory=list)


def read_cbf_input(argument: str, what: str = "DATA") -> CbfInput:
    """DATA as the module docstring lists; `what` names it in messages."""
    source = what
    if argument.startswith("@"):
        name = argument[1:]
        source = "<stdin>" if name == "-" else name
        raw = _read_file(name)
        if raw[:1] in (b"\x00", b"\x01", b"\x02"):  # an info byte: raw binary
            return CbfInput(raw, None, source)
        try:
            argument = raw.decode("utf-8")
        except UnicodeDecodeError:
            return CbfInput(raw, None, source)
    text = argument.strip()
    if text.startswith("{"):
        swift = SwiftBacktrace.from_json(text, source)
        return CbfInput(swift.backtrace, swift.image_map, source)
    labelled = _labelled_lines(text)
    if not labelled:
        notes: list[str] = []
        return CbfInput(_text_bytes(text, source, notes), None, source, notes)
    return _from_labelled(labelled, source)


def read_image_map_input(argument: str, what: str = "IMAGEMAP") -> CbfInput:
    """`--images`: the same forms, the image map in `image_map` (`backtrace` empty).
    In a block, the first `images:` line is the image map."""
    source = what
    if argument.startswith("@"):
        name = argument[1:]
        source = "<stdin>" if name == "-" else name
        raw = _read_file(name)
        if raw[:1] in (b"\x00", b"\x01", b"\x02"):  # an info byte: raw binary
            return CbfInput(b"", raw, source)
        try:
            argument = raw.decode("utf-8")
        except UnicodeDecodeError:
            return CbfInput(b"", raw, source)
    text = argument.strip()
    images = [value for label, value in _labelled_lines(text) if label == IMAGE_MAP_LABEL]
    notes: list[str] = []
    image_map = _text_bytes(images[0] if images else text, source, notes)
    return CbfInput(b"", image_map, source, notes)


def _read_file(name: str) -> bytes:
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        with open(name, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise StackmarkError(f"{name}: cannot read: {exc.strerror or exc}") from None


def _labelled_lines(text: str) -> list[tuple[str, str]]:
    """(label, value) for each `cbf:` / `images:` line of `text`, in order."""
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        for label in (BACKTRACE_LABEL, IMAGE_MAP_LABEL):
            if stripped.startswith(label):
                found.append((label, stripped[len(label) :].strip()))
    return found


def _from_labelled(labelled: list[tuple[str, str]], source: str) -> CbfInput:
    """The first `cbf:` line and the first `images:` line after it (`stackmark bt
    --cbf` prints one pair per thread)."""
    notes: list[str] = []
    first = next((i for i, (label, _v) in enumerate(labelled) if label == BACKTRACE_LABEL), None)
    if first is None:
        raise FormatError(
            f"an '{IMAGE_MAP_LABEL}' line but no '{BACKTRACE_LABEL}' line "
            "(give the image map with --images)",
            source=source,
        )
    backtraces = sum(1 for label, _v in labelled if label == BACKTRACE_LABEL)
    if backtraces > 1:
        notes.append(f"{backtraces} '{BACKTRACE_LABEL}' lines; decoding the first")
    backtrace = _text_bytes(labelled[first][1], source, notes)
    following = labelled[first + 1 :]
    image_text = next((value for label, value in following if label == IMAGE_MAP_LABEL), None)
    image_map = None if image_text is None else _text_bytes(image_text, source, notes)
    return CbfInput(backtrace, image_map, source, notes)


def _text_bytes(text: str, source: str, notes: list[str]) -> bytes:
    """Hex (what CBF/CIF hex starts with: '0') or base64 (starts with 'A')."""
    compact = "".join(text.split())
    if compact.startswith(("0", "0x")) and _HEX.match(compact):
        digits = compact.removeprefix("0x").replace(":", "")
        if len(digits) % 2:
            raise FormatError(f"odd number of hex digits ({len(digits)})", source=source)
        return bytes.fromhex(digits)
    decoded = decode_base64(compact)
    if decoded.stopped_at is not None:
        notes.append(
            f"base64 stops at character {decoded.stopped_at} "
            f"({compact[decoded.stopped_at]!r}); using the {len(decoded.data)} bytes before it"
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
