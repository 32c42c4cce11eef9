"""GSYM: LLVM's symbolication format, read and written byte for byte.

Modules, in the order a file is laid out:

- `header`: the 48-byte version-1 header;
- `reader`: tables over mmap, FunctionInfo records, lookups;
- `function_info`, `line_table`, `inline_info`, `call_sites`: the records;
- `creator`: strings, files, functions in; LLVM's bytes out;
- `dump`, `lookup`: the text llvm-gsymutil prints.

Converters into GSYM live beside them (`from_dwarf`, `from_symtab`, `from_macho`,
`convert`); Breakpad's, which reads another format, is above both
(`stackmark.conversion.from_breakpad`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stackmark.formats.gsym.creator import (
        GsymCreator,
        GsymWriteError,
        encode_gsym,
        reencode,
    )
    from stackmark.formats.gsym.function_info import FunctionInfo
    from stackmark.formats.gsym.inline_info import InlineInfo
    from stackmark.formats.gsym.line_table import LineEntry
    from stackmark.formats.gsym.lookup import GsymLookupError, LookupResult, SourceLocation
    from stackmark.formats.gsym.reader import GsymReader

# Names are imported on first use (PEP 562): a warm cache lookup reads GSYM
# and never needs the writer, whose import costs tens of milliseconds.
_MODULE_OF = {
    "FunctionInfo": "function_info",
    "GsymCreator": "creator",
    "GsymLookupError": "lookup",
    "GsymReader": "reader",
    "GsymWriteError": "creator",
    "InlineInfo": "inline_info",
    "LineEntry": "line_table",
    "LookupResult": "lookup",
    "SourceLocation": "lookup",
    "encode_gsym": "creator",
    "reencode": "creator",
}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
