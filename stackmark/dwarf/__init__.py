"""A lazy DWARF 2-5 reader over `stackmark.elf` (no pyelftools: start-up matters).

Map of the package, in the order data flows:

* `sections`  - section views read in place, LEB128 primitives
* `abbrev`    - abbreviation tables compiled into skip/decode plans
* `unit`      - unit headers, the unit DIE, attribute values by form
* `ranges`    - .debug_ranges / .debug_rnglists
* `aranges`   - address -> unit, as llvm merges it
* `lines`     - line number programs and llvm-exact row lookup
* `functions` - the per-unit tree of subprograms and inlined calls
* `reader`    - `DwarfReader`, the entry point (see its docstring)

Import `stackmark.dwarf.reader.DwarfReader`; this package module imports
nothing so that importing it stays free.
"""
