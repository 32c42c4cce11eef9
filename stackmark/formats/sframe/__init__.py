"""SFrame stack-trace tables (`.sframe`, versions 1-3): read, look up, write,
dump as objdump does, and generate from DWARF CFI.

    section = read_sframe_file("a.out")          # SFrameSection
    row = SFrameTable(section).row(pc)            # UnwindRow | None
    live = read_sframe_from_image(read, base)     # from a process: PT_GNU_SFRAME
    text = objdump_text(section, "a.out")         # objdump --sframe
    data = encode_sframe(section, version=3)      # bytes

Modules, in reading order: `spec` (numbers and bit fields), `model`
(decoded section), `reader`, `rules` (what FRE words mean), `lookup`,
`memory` (sections in a running process), `writer`, `dump`, `from_cfi`,
`embed` (add a section to an ELF copy).
"""

from stackmark.formats.sframe.dump import dump_sframe, objdump_text
from stackmark.formats.sframe.lookup import SFrameMatch, SFrameTable
from stackmark.formats.sframe.memory import LoadedSFrame, read_sframe_at, read_sframe_from_image
from stackmark.formats.sframe.model import (
    FrameRowEntry,
    FuncDescEntry,
    SFrameHeader,
    SFrameSection,
)
from stackmark.formats.sframe.reader import parse_sframe, read_elf_sframe, read_sframe_file
from stackmark.formats.sframe.writer import encode_sframe, with_version

__all__ = [
    "FrameRowEntry",
    "FuncDescEntry",
    "LoadedSFrame",
    "SFrameHeader",
    "SFrameMatch",
    "SFrameSection",
    "SFrameTable",
    "dump_sframe",
    "encode_sframe",
    "objdump_text",
    "parse_sframe",
    "read_elf_sframe",
    "read_sframe_at",
    "read_sframe_file",
    "read_sframe_from_image",
    "with_version",
]
