"""Breakpad symbols to GSYM, as the 2018 GSYM design intended.

`convert_breakpad` reads a `.sym` file (`formats/breakpad.py`) and feeds its
records to the GSYM creator (`formats/gsym/creator.py`), then finishes as
every conversion does (`finish_conversion`); `stackmark gsym convert` and
the Breakpad symbol store (`symbols/breakpad_store.py`) call it. It sits
above both formats, which import no other format.

LLVM has no Breakpad converter, so there are no reference bytes; the
mapping follows the DWARF conversion's rules wherever they apply:

- each FUNC gives a FunctionInfo [address, address + size) named as in the
  file (dump_syms writes demangled names); its line records become the line
  table, in address order, a row with the same file and line as the row
  kept before it being skipped; records outside the function are dropped;
  a gap between line records cannot be expressed in GSYM and reads as the
  row before it;
- INLINE records become the inline tree (level 0 under the function, level
  n+1 under the last level-n record); a range outside its parent's is
  dropped, and a record left without ranges is dropped with its children;
  the call-site file -1 (unknown) becomes file 0;
- each PUBLIC gives a size-0 FunctionInfo (a symbol without a size); where
  a FUNC starts at the same address the FUNC replaces it; PUBLICs at
  address 0 are ignored, as Breakpad's resolver ignores them;
- the UUID is the build ID from `INFO CODE_ID` (else the 16 bytes inside
  the debug ID); addresses stay module-relative, as in the .sym file.
"""

from __future__ import annotations

from stackmark.errors import FormatError
from stackmark.formats.breakpad import BreakpadFunction, BreakpadModule, read_breakpad
from stackmark.formats.gsym.convert import ConversionResult, ProgressSink, finish_conversion
from stackmark.formats.gsym.creator import GsymCreator
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.inline_info import InlineInfo
from stackmark.formats.gsym.line_table import LineEntry
from stackmark.formats.gsym.ranges import contains_range, merged

BIG_ENDIAN_ARCHES = frozenset({"ppc", "ppc64", "sparc", "sparcv9", "s390", "s390x", "mips"})


def breakpad_is_little_endian(module: BreakpadModule) -> bool:
    return module.arch.lower() not in BIG_ENDIAN_ARCHES


class _Converter:
    def __init__(self, module: BreakpadModule, creator: GsymCreator, source: str):
        self.module = module
        self.creator = creator
        self.source = source
        self._files: dict[int, int] = {}

    def file_index(self, file_id: int | None, where: str) -> int:
        if file_id is None:
            return 0
        index = self._files.get(file_id)
        if index is None:
            path = self.module.files.get(file_id)
            if path is None:
                raise FormatError(f"{where}: no FILE record with id {file_id}", source=self.source)
            index = self.creator.insert_file(path)
            self._files[file_id] = index
        return index

    def function(self, func: BreakpadFunction) -> FunctionInfo:
        c = self.creator
        info = FunctionInfo(func.address, func.size, c.insert_string(func.name))
        end = func.address + func.size
        rows: list[LineEntry] = []
        for rec in sorted(func.lines, key=lambda r: r.address):
            if not func.address <= rec.address < end:
                continue
            file_index = self.file_index(rec.file, f"line record of FUNC {func.name}")
            if rows and rows[-1].file == file_index and rows[-1].line == rec.line:
                continue
            rows.append(LineEntry(rec.address, file_index, rec.line))
        if rows:
            info.line_table = rows
        if func.inlines and func.size:
            root = InlineInfo(info.name, [(func.address, end)])
            stack: list[InlineInfo | None] = [root]
            for call in func.inlines:
                if call.level + 1 > len(stack):
                    raise FormatError(
                        f"line {call.line_number}: INLINE level {call.level} has no "
                        f"enclosing level {call.level - 1}",
                        source=self.source,
                    )
                del stack[call.level + 1 :]
                parent = stack[call.level]
                node: InlineInfo | None = None
                if parent is not None:
                    ranges = merged(
                        (a, a + size)
                        for a, size in call.ranges
                        if size and contains_range(parent.ranges, a, a + size)
                    )
                    if ranges:
                        origin = self.module.origins.get(call.origin)
                        if origin is None:
                            raise FormatError(
                                f"line {call.line_number}: no INLINE_ORIGIN with id {call.origin}",
                                source=self.source,
                            )
                        node = InlineInfo(
                            c.insert_string(origin.name),
                            ranges,
                            self.file_index(call.call_file, f"line {call.line_number}"),
                            call.call_line,
                        )
                        parent.children.append(node)
                stack.append(node)
            if root.children:
                info.inline = root
        return info


def add_breakpad(creator: GsymCreator, module: BreakpadModule, source: str) -> tuple[int, int]:
    """Add the FUNC and PUBLIC records; returns (functions, publics) added."""
    conv = _Converter(module, creator, source)
    creator.uuid = module.build_id()[:20]
    for func in module.functions:
        creator.add_function(conv.function(func))
    for public in module.publics:
        if public.address == 0:  # Breakpad's own resolver ignores these too
            continue
        creator.add_function(FunctionInfo(public.address, 0, creator.insert_string(public.name)))
    return len(module.functions), len(module.publics)


def convert_breakpad(
    path: str,
    *,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    segment_size: int | None = None,
) -> ConversionResult:
    """GSYM bytes for the Breakpad .sym file at `path` (the FUNC and PUBLIC counts
    are the result's `dwarf_functions` and `symbol_functions`, as llvm's log names
    its two sources)."""
    module = read_breakpad(path)
    creator = GsymCreator()
    result = ConversionResult(b"", arch=module.arch)
    funcs, publics = add_breakpad(creator, module, path)
    result.dwarf_functions = funcs
    result.symbol_functions = publics
    if little is None:
        little = breakpad_is_little_endian(module)
    finish_conversion(creator, result, little, progress, segment_size=segment_size)
    return result
