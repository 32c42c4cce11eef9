"""LLVM symbolizer markup: parse it, replay its context, render it symbolized.

The modules, in the order data flows through them:

* `syntax`: the spans of a line (`Text`, `Sgr`, `Element`, `Continuation`)
  and `Field`; every span and field knows its line and columns.
* `parser`: `MarkupParser.parse(text, line, pending)` splits one line; the
  only state between lines is an open multi-line element (`Pending`).
  `parse_line` parses one line as llvm 19 does (no multi-line elements).
* `fields`: the field syntax (`%p`, `%i`, frame numbers, build IDs, modes).
* `elements`: `decode(element)` -> a typed element (`PcElement`,
  `MmapElement`, ...) with its `diagnostics` in llvm's order and wording.
* `context`: `MarkupContext` replays reset/module/mmap with llvm's rules
  and places runtime addresses (`place`); `lookup_address` is the -1
  table; `ContextTimeline` keeps per-line snapshots for whole documents.
* `resolve`: asks a `SymbolizerAPI` about placed addresses.
* `naming`, `layout`, `styled`: llvm's names, text layout and colours.
* `filter.StackmarkFilter` and `llvm19.Llvm19Filter`: the line filters
  behind `stackmark symbolize` (stackmark's behaviour, and llvm 19's
  exactly); `records`: the JSON records of `--output-style=json`.
* `report`: diagnostics printed the way llvm prints them.

A front end holding a whole document (the language server) parses each
line with one `MarkupParser`, decodes the elements it needs, and replays
the contextual ones on a `MarkupContext`, recording a `ContextTimeline`
snapshot after each line that changed it; after an edit at line N it
truncates the timeline at N and replays from `timeline.resume(N)`.
"""

from stackmark.markup.context import ContextTimeline, MarkupContext, Placement, lookup_address
from stackmark.markup.diagnostics import Diagnostic, Severity
from stackmark.markup.elements import decode
from stackmark.markup.parser import MarkupParser, ParsedLine, Pending, parse_line
from stackmark.markup.syntax import Continuation, Element, Field, Sgr, Text

__all__ = [
    "ContextTimeline",
    "Continuation",
    "Diagnostic",
    "Element",
    "Field",
    "MarkupContext",
    "MarkupParser",
    "ParsedLine",
    "Pending",
    "Placement",
    "Severity",
    "Sgr",
    "Text",
    "decode",
    "lookup_address",
    "parse_line",
]
