"""llvm-symbolizer's text layout for symbolized markup, on a `StyledWriter`.

* module info line: `[[[ELF module #0x<id> "<name>"; BuildID=<hex> [<start>-<last>](<mode>),...]]]`
  (or `; adds` instead of the build ID for mmaps of an earlier module);
* `pc`: `FUNCTION[FILE:LINE]`;
* `bt`: one line per frame, innermost inlined first:
  `    #N.K  0x<16 hex digits> FUNCTION FILE:LINE:COLUMN (MODULE+0x<offset>)`;
* anything that cannot be shown: the raw echo `[[[tag:field:...]]]`.
"""

from __future__ import annotations

from collections.abc import Sequence

from stackmark.markup.context import Mapping
from stackmark.markup.styled import StyledWriter
from stackmark.markup.syntax import Element
from stackmark.model import Module
from stackmark.plain import Record


class FrameText(Record):
    """One frame as printed: function, file, line, column (None when unknown)."""

    __slots__ = _fields = ("function", "file", "line", "column")
    function: str | None
    file: str | None
    line: int
    column: int

    def __init__(
        self, function: str | None, file: str | None, line: int = 0, column: int = 0
    ) -> None:
        self.function = function
        self.file = file
        self.line = line
        self.column = column

    @property
    def known(self) -> bool:
        return self.function is not None or self.file is not None

    def where(self, show_invalid: bool) -> str:
        """`FUNCTION FILE:LINE:COLUMN ` as a bt frame prints it ("" when nothing is
        known); `show_invalid=False` drops ` <invalid>:0:0` when there is no file.
        (Not cached: the bt fast path keeps whole frame texts per address.)"""
        if not self.known:
            return ""
        name = (self.function or "<invalid>") + " "
        if self.file is None and not show_invalid:
            return name
        return f"{name}{self.file or '<invalid>'}:{self.line}:{self.column} "


def module_info_begin(w: StyledWriter, module: Module) -> None:
    w.highlight()
    w.write("[[[ELF module")
    w.value(f" #0x{module.id:x} ")
    w.write('"')
    w.value(module.name)
    w.write('"')


def module_build_id(w: StyledWriter, module: Module) -> None:
    w.write("; BuildID=")
    w.value(module.build_id)


def module_adds(w: StyledWriter) -> None:
    w.write("; adds")


def module_info_end(w: StyledWriter, mappings: Sequence[Mapping], eol: str) -> None:
    """The segment list (by start address) and the closing `]]]`."""
    for index, mapping in enumerate(sorted(mappings, key=lambda m: m.start)):
        w.write(" [" if index == 0 else ",[")
        w.value(f"0x{mapping.start:x}")
        w.write("-")
        w.value(f"0x{mapping.last:x}")
        w.write("](")
        w.value(mapping.segment.mode)
        w.write(")")
    w.write("]]]" + eol)
    w.restore()


def raw_element(w: StyledWriter, element: Element) -> None:
    """`[[[tag:field:...]]]`: an element shown as it came, when nothing better is known."""
    raw_text(w, element.tag, [item.text for item in element.fields])


def raw_text(w: StyledWriter, tag: str, fields: Sequence[str]) -> None:
    """`raw_element` from the tag and the fields' texts."""
    w.highlight()
    w.write("[[[")
    w.value(tag)
    for text in fields:
        w.write(":")
        w.value(text)
    w.write("]]]")
    w.restore()


def pc_location(w: StyledWriter, frame: FrameText) -> None:
    """`FUNCTION[FILE:LINE]`."""
    w.highlight()
    w.value(frame.function or "<invalid>")
    w.write("[")
    w.value(frame.file or "<invalid>")
    w.write(":")
    w.value(str(frame.line))
    w.write("]")
    w.restore()


def bt_frames(
    w: StyledWriter,
    number: int,
    address: int,
    frames: Sequence[FrameText],
    module_name: str,
    module_relative: int,
    eol: str,
    *,
    show_invalid: bool = True,
) -> None:
    """One line per frame (innermost first, the physical frame `#N` last), no final newline.

    `show_invalid=False` leaves out ` <invalid>:0:0` for frames known only
    by name (stackmark's default; llvm prints it).
    """
    if not w.enabled:
        w.write(
            plain_bt_frames(
                number, address, frames, module_name, module_relative, eol, show_invalid
            )
        )
        return
    w.highlight()
    header = f"#{number}".rjust(6)
    hash_at = header.index("#") + 1
    count = len(frames)
    for index, frame in enumerate(frames):
        w.write(header[:hash_at])
        w.value(header[hash_at:])
        if index == count - 1:
            w.write("   ")
        else:
            w.write(".")
            w.value(f"{index + 1:<2}")
        w.value(f" 0x{address:016x} ")
        if frame.known:
            w.value(frame.function or "<invalid>")
            if show_invalid or frame.file is not None:
                w.write(" ")
                w.value(frame.file or "<invalid>")
                w.write(":")
                w.value(str(frame.line))
                w.write(":")
                w.value(str(frame.column))
            w.write(" ")
        w.write("(")
        w.value(module_name)
        w.write("+")
        w.value(f"0x{module_relative:x}")
        w.write(")")
        if index != count - 1:
            w.write(eol)
    w.restore()


def plain_bt_frames(
    number: int,
    address: int,
    frames: Sequence[FrameText],
    module_name: str,
    module_relative: int,
    eol: str,
    show_invalid: bool,
) -> str:
    """`bt_frames` without colour, in one string (the common case, made fast)."""
    header = f"#{number}".rjust(6)
    middle = f" 0x{address:016x} "
    tail = f"({module_name}+0x{module_relative:x})"
    last = len(frames) - 1
    if last == 0:
        return f"{header}   {middle}{frames[0].where(show_invalid)}{tail}"
    lines = [
        f"{header}.{index + 1:<2}{middle}{frame.where(show_invalid)}{tail}"
        for index, frame in enumerate(frames[:-1])
    ]
    lines.append(f"{header}   {middle}{frames[-1].where(show_invalid)}{tail}")
    return eol.join(lines)


def plain_name(w: StyledWriter, name: str) -> None:
    """A name printed highlighted as a whole (`data`, `symbol`)."""
    w.highlight()
    w.write(name)
    w.restore()


def module_offset(w: StyledWriter, module_name: str, module_relative: int) -> None:
    """`(MODULE+0xOFFSET)`: where an address is when nothing more is known."""
    w.highlight()
    w.write("(")
    w.value(module_name)
    w.write("+")
    w.value(f"0x{module_relative:x}")
    w.write(")")
    w.restore()
