"""GSYM: LLVM's symbolication format, read and written byte for byte.

Modules, in the order a file is laid out:

- `header`: the 48-byte version-1 header;
- `reader`: tables over mmap, FunctionInfo records, lookups;
- `function_info`, `line_table`, `inline_info`, `call_sites`: the records;
- `creator`: strings, files, functions in; LLVM's bytes out;
- `dump`, `lookup`: the text llvm-gsymutil prints.

Converters into GSYM live beside them (`from_dwarf`, `from_breakpad`).
"""

from __future__ import annotations

from stackmark.formats.gsym.creator import GsymCreator, GsymWriteError, encode_gsym, reencode
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.lookup import GsymLookupError, LookupResult, SourceLocation
from stackmark.formats.gsym.reader import GsymReader

__all__ = [
    "FunctionInfo",
    "GsymCreator",
    "GsymLookupError",
    "GsymReader",
    "GsymWriteError",
    "InlineInfo",
    "LineEntry",
    "LookupResult",
    "SourceLocation",
    "encode_gsym",
    "reencode",
]
