"""What a Mach-O image gives a GSYM besides DWARF: header values and symbol-table functions.

As llvm-gsymutil 19's object-file step does it (llvm-gsymutil.cpp,
ObjectFileTransformer.cpp, MachOObjectFile.cpp):

- UUID: the 16 bytes of LC_UUID (none without it);
- base address: the vmaddr of the first segment named `__TEXT` (None
  without one: the writer then uses the first function's address);
- text ranges: every section with S_ATTR_PURE_INSTRUCTIONS whose size, as
  LLVM counts it (clipped to the bytes the file holds), is not zero;
- functions: nlist entries that are not stabs, are N_SECT in a code
  section, and whose n_value lies in a text range; size 0; the name with
  one leading `_` removed. An n_sect past the section list skips the
  symbol silently; a name outside the file skips it with a message
  (`ObjectFileTransformer: truncated or malformed object (...)`).
"""

from __future__ import annotations

from stackmark.errors import FormatError
from stackmark.formats.gsym.creator import GsymCreator
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.ranges import Range
from stackmark.macho import N_SECT, MachOFile


def macho_base_address(macho: MachOFile) -> int | None:
    text = macho.segment("__TEXT")
    return None if text is None else text.vmaddr


def macho_text_ranges(macho: MachOFile) -> list[Range]:
    ranges = []
    for section in macho.sections:
        size = macho.file_size_of(section)
        if section.is_text and size > 0:
            ranges.append((section.addr, section.addr + size))
    return ranges


def add_macho_symbols(creator: GsymCreator, macho: MachOFile, messages: list[str]) -> int:
    """Add a FunctionInfo per eligible nlist entry; returns how many.

    Messages LLVM prints about skipped symbols are appended to `messages`."""
    added = 0
    for symbol in macho.symbols():
        if symbol.is_stab or symbol.kind != N_SECT:
            continue
        try:
            section = macho.symbol_section(symbol)
        except FormatError:
            continue  # LLVM: the symbol's type cannot be computed; skipped silently
        if section is None or not section.is_text:
            continue
        if not creator.is_valid_text_address(symbol.value):
            continue
        if symbol.name is None:
            messages.append(
                f"ObjectFileTransformer: truncated or malformed object ({symbol.name_error})"
            )
            continue
        name = symbol.name.removeprefix("_")
        creator.add_function(FunctionInfo(symbol.value, 0, creator.insert_string(name)))
        added += 1
    return added
