"""stackmark's markup filter: llvm's layout, without llvm's ways of losing things.

The output looks like llvm-symbolizer 19's (module info lines, `pc` as
`FUNCTION[FILE:LINE]`, `bt` frames `#N.K`, colours), and every frame line
llvm gets right comes out the same. Where llvm fails its users, this
filter does the following instead (each is named in the tests):

1. Contextual lines keep their text. A line holding only contextual
   elements (and blanks) folds into a module info line as in llvm; any
   other line is printed whole, its contextual elements shown in place
   (`[[[ELF module ...]]]`, `[[[reset]]]`). Several contextual elements on
   one line all take effect. `{{{reset}}}` is always shown.
2. A malformed element is kept as it came (llvm removes it), with the
   diagnostic on stderr; so is a contextual element that cannot be used.
3. A module whose symbols cannot be found still gives best-effort output:
   `bt` frames and `pc`/`data` show `(MODULE+0xOFFSET)` (llvm issue 63178),
   and the warning names the module, once per module and process (newer
   llvm names it on every element).
4. Frames known only from the symbol table print `NAME (MODULE+0xOFFSET)`
   for `pc`, and leave out `<invalid>:0:0` in `bt`; a `data` address
   covered by no symbol prints `(MODULE+0xOFFSET)` instead of `<invalid>`.
5. `hexdict` elements, also over several lines, are kept as they are and
   followed by one note line per value that falls in a mapped module.
6. Diagnostics name the input, line and column (`log:12:7: error: ...`).

With `records` set (`--output-style=json`), the filter also describes
every element as a JSON-ready record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_never

from stackmark.markup import layout, records
from stackmark.markup.context import Mapping, MarkupContext, Placement, lookup_address
from stackmark.markup.diagnostics import Diagnostic, Severity
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    HexdictElement,
    MmapElement,
    ModuleElement,
    OtherElement,
    PcElement,
    ResetElement,
    SymbolElement,
    TypedElement,
    decode,
)
from stackmark.markup.fastpath import BtLines, context_line
from stackmark.markup.layout import FrameText
from stackmark.markup.naming import Naming
from stackmark.markup.parser import MAX_ELEMENTS_PER_LINE, MarkupParser, Pending
from stackmark.markup.report import DiagnosticPrinter
from stackmark.markup.resolve import CodeResult, Resolver
from stackmark.markup.styled import StyledWriter
from stackmark.markup.syntax import (
    CONTEXTUAL_TAGS,
    MULTILINE_TAGS,
    Continuation,
    Element,
    Sgr,
    Span,
    Text,
)
from stackmark.model import Module
from stackmark.symbols.api import ModuleResolution, Reason

# The dispatchers below `match` a `TypedElement` (or a `Span`) on its class, the most
# frequent kinds first, and end in `assert_never`, so mypy names each one a new element
# kind misses (tests/unit/test_markup_dispatch.py). Their cost against `isinstance`
# chains is measured in docs/benchmarks.md; plain lines never reach them (`feed`'s
# fast paths).


class _InfoLine:
    __slots__ = ("eol", "mappings", "module")

    def __init__(self, module: Module, eol: str) -> None:
        self.module = module
        self.eol = eol
        self.mappings: list[Mapping] = []


class _Applied:
    """What a contextual element did: declared a module, mapped a segment, reset, or nothing."""

    __slots__ = ("mapping", "module", "ok", "typed")

    def __init__(self, typed: TypedElement) -> None:
        self.typed = typed
        self.module: Module | None = None
        self.mapping: Mapping | None = None
        self.ok = True


def fileless_note(name: str) -> str:
    """What is said, once per input, about a module that never has a file (the vDSO)."""
    return (
        f'ELF module "{name}" is mapped by the kernel and has no file: '
        "its addresses stay unresolved"
    )


class StackmarkFilter:
    """Feeds lines (without their terminator); returns the output for each."""

    def __init__(
        self,
        resolver: Resolver,
        naming: Naming,
        printer: DiagnosticPrinter,
        *,
        colour: bool = False,
        fast_paths: bool = True,
        records: list[records.Record] | None = None,
        unresolved_hint: str | None = None,
        first_line: int = 0,
    ) -> None:
        """`first_line` is the 0-based number of the first line fed: diagnostics
        and records of a chunk of a larger log name the whole log's lines."""
        self.resolver = resolver
        self.unresolved_hint = unresolved_hint  # a front end's advice, after "looked for it in"
        self.unresolved = 0  # pc/bt/data elements printed without a name
        self.naming = naming
        self.printer = printer
        self.records = records
        self.context = MarkupContext()
        self.out = StyledWriter(colour)
        self.fast_paths = fast_paths  # off: every line takes the general path (tests)
        self._bt_lines = BtLines(resolver, naming, show_invalid=False)
        self._parser = MarkupParser(MULTILINE_TAGS)
        self._pending: Pending | None = None
        self._held_lines: dict[int, tuple[str, str]] = {}  # lines of an open multi-line element
        self._info: _InfoLine | None = None
        self._warned: set[tuple[int, int]] = set()  # (context generation, module id)
        self._noted_fileless: set[str] = set()  # names of modules with no file, said once
        self._line_no = first_line - 1
        self._text = ""
        self._eol = "\n"
        self._notes: list[str] = []

    @property
    def errors(self) -> int:
        return self.printer.errors

    # --- driving -------------------------------------------------------------

    @property
    def passes_plain_lines(self) -> bool:
        """True when a whole line without `{{{` or ESC would come out exactly as it
        came in (with its terminator): the caller may then copy such lines itself
        and only count them with `skip_plain_lines`."""
        out = self.out
        return (
            self.fast_paths
            and self._pending is None
            and self._info is None
            and out.colour is None
            and not out.bold
        )

    def skip_plain_lines(self, count: int) -> None:
        """`count` lines were passed through by the caller (see `passes_plain_lines`)."""
        self._line_no += count

    def feed_bt_lines(self, data: bytes, start: int, end: int, out: list[bytes]) -> int:
        """The lines of raw input from `start` on that are lone `bt` elements `feed`
        would render on its fast path, rendered as bytes onto `out`; returns where
        they end (`start` when there is none: the caller feeds that line)."""
        if not self.passes_plain_lines or self.out.enabled or self.records is not None:
            return start
        stop = self._bt_lines.lines_bytes(data, start, end, self.context, out)
        if stop > start:
            self._line_no += data.count(b"\n", start, stop)
        return stop

    def feed(self, text: str, eol: str) -> str:
        """Process one input line; `eol` is its terminator ('\\n', '\\r\\n' or '')."""
        self._line_no += 1
        self._text, self._eol = text, eol
        out = self.out
        if (
            self.fast_paths
            and self._pending is None
            and out.colour is None
            and not out.bold
            and "{{{" not in text
            and "\x1b" not in text
        ):
            if self._info is None:
                return text + eol  # plain text, the common case: nothing to do
            self._end_info_line()  # the line after a context block closes its info line
            out.write(text + eol)
            return out.take()
        out.reset_state()
        if self.fast_paths and self._pending is None and not out.enabled and self.records is None:
            if text.startswith("{{{"):
                replayed = context_line(text, self.context)
                if replayed is not None:
                    if replayed.kind == "reset":
                        self.context.reset()
                        self._fold_reset("", "reset", [])
                    elif replayed.mapping is not None:
                        self._fold_mapping("", replayed.mapping)
                    elif replayed.module is not None:
                        self._fold_module("", replayed.module)
                    return out.take()
            fast = self._bt_lines.line(text, self.context, eol or "\n")
            if fast is not None:
                self._end_info_line()
                out.write(fast + eol)
                return out.take()
        if self._pending is None:
            self._held_lines.clear()
        parsed = self._parser.parse(text, self._line_no, self._pending)
        self._pending = parsed.pending
        if parsed.capped is not None:
            self._report(
                Diagnostic(
                    Severity.WARNING,
                    f"more than {MAX_ELEMENTS_PER_LINE} elements on one line: "
                    "the rest of the line is kept as it is, not symbolized",
                    self._line_no,
                    parsed.capped,
                    parsed.capped + 3,
                    "too-many-elements",
                )
            )
        if parsed.pending is not None:
            self._held_lines[self._line_no] = (text, eol)
        spans = parsed.spans
        if self._is_context_only(spans):
            applied = [self._apply(s) for s in spans if isinstance(s, Element)]
            if all(a.ok for a in applied):
                self._fold(spans, applied)
            else:
                self._render_line(spans, iter(applied))
        else:
            self._render_line(spans, None)
        return self.out.take()

    def finish(self) -> str:
        """End of input: close any module info line; an open multi-line element was text."""
        self._end_info_line()
        self.out.reset_state()
        self.context = MarkupContext()
        self._pending = None
        self._held_lines.clear()
        return self.out.take()

    # --- reporting -------------------------------------------------------------

    def _report(self, diag: Diagnostic) -> None:
        text, eol = self._held_lines.get(diag.line, (self._text, self._eol))
        self.printer.report(diag, text, eol)

    def _report_all(self, diags: list[Diagnostic]) -> bool:
        for diag in diags:
            self._report(diag)
        return not any(d.is_error for d in diags)

    def _record(self, typed: TypedElement, extra_diags: list[Diagnostic], **fields: object) -> None:
        if self.records is None:
            return
        record = records.element(
            typed.element, self.printer.source, [*typed.diagnostics, *extra_diags]
        )
        record.update(fields)
        self.records.append(record)

    def _lookup_warning(
        self, module: Module, message: str, resolution: ModuleResolution | None
    ) -> Diagnostic:
        """Warn once per module that its symbols were not found: where they were
        looked for, which file at its own path has another build ID, what to do."""
        if module.has_no_file:
            return self._no_file_note(module)
        diag = Diagnostic(
            Severity.WARNING,
            f'{message} for ELF module #0x{module.id:x} "{module.name}"; BuildID={module.build_id}',
            self._line_no,
            None,
            None,
            "no-symbols",
        )
        key = (self.context.generation, module.id)
        if key not in self._warned:
            self._warned.add(key)
            self._report(diag)
            searched = resolution.searched if resolution is not None else []
            if searched:
                self.printer.note("looked for it in: " + ", ".join(searched))
            for path, found in resolution.mismatched if resolution is not None else []:
                self._report(
                    Diagnostic(
                        Severity.WARNING,
                        f"{path} is not the file that ran: its build ID is {found or 'missing'}, "
                        f"the log's is {module.build_id} (rebuilt since the log was written?)",
                        self._line_no,
                        None,
                        None,
                        "build-id-mismatch",
                    )
                )
            not_found = resolution is not None and resolution.reason is Reason.NOT_FOUND
            if self.unresolved_hint and not_found:
                self.printer.note(self.unresolved_hint)
        return diag

    def _no_file_note(self, module: Module) -> Diagnostic:
        """A module that never has a file (the vDSO): said once for the whole input,
        as a note, since there is nothing to look for."""
        diag = Diagnostic(
            Severity.NOTE,
            fileless_note(module.name),
            self._line_no,
            None,
            None,
            "no-file",
        )
        if module.name not in self._noted_fileless:
            self._noted_fileless.add(module.name)
            self._report(diag)
        return diag

    def _no_mmap(self, element: Element) -> Diagnostic:
        first = element.fields[0]
        diag = Diagnostic(
            Severity.ERROR, "no mmap covers address", first.line, first.start, first.end, "no-mmap"
        )
        self._report(diag)
        return diag

    # --- contextual elements ---------------------------------------------------

    @staticmethod
    def _is_context_only(spans: tuple[Span, ...]) -> bool:
        """Only contextual elements, blanks and SGR codes (and at least one element)."""
        found = False
        for span in spans:
            match span:
                case Element():
                    if span.tag not in CONTEXTUAL_TAGS or span.multiline:
                        return False
                    found = True
                case Text():
                    if not span.text.isspace():
                        return False
                case Continuation():
                    return False
                case Sgr():
                    pass
                case _:
                    assert_never(span)
        return found

    def _apply(self, element: Element) -> _Applied:
        """Replay one contextual element on the context, reporting what is wrong."""
        typed = decode(element)
        applied = _Applied(typed)
        if not self._report_all(typed.diagnostics):
            applied.ok = False
        else:
            match typed:
                case MmapElement():  # the most frequent first: modules have several
                    mapped = self.context.map_segment(typed)
                    if isinstance(mapped, Diagnostic):
                        self._report(mapped)
                        applied.ok = False
                    else:
                        applied.mapping, applied.module = mapped, mapped.module
                case ModuleElement():
                    result = self.context.declare_module(typed)
                    if isinstance(result, Diagnostic):
                        self._report(result)
                        applied.ok = False
                    else:
                        applied.module = result
                case ResetElement():
                    self.context.reset()
                case (
                    BtElement()
                    | PcElement()
                    | DataElement()
                    | SymbolElement()
                    | HexdictElement()
                    | DumpfileElement()
                    | OtherElement()
                ):
                    pass  # not contextual: nothing to replay
                case _:
                    assert_never(typed)
        self._record_context(applied)
        return applied

    def _record_context(self, applied: _Applied) -> None:
        if self.records is None:
            return
        typed = applied.typed
        match typed:
            case MmapElement():
                mapping = applied.mapping
                self._record(
                    typed,
                    [],
                    mmap=None
                    if mapping is None
                    else {
                        "module": records.module(mapping.module),
                        "start": records.hex_(mapping.start),
                        "size": records.hex_(mapping.segment.size),
                        "last": records.hex_(mapping.last),
                        "mode": mapping.segment.mode,
                        "module_relative": records.hex_(mapping.segment.module_relative),
                    },
                )
            case ModuleElement():
                self._record(
                    typed, [], module=records.module(applied.module) if applied.module else None
                )
            case (
                ResetElement()
                | BtElement()
                | PcElement()
                | DataElement()
                | SymbolElement()
                | HexdictElement()
                | DumpfileElement()
                | OtherElement()
            ):
                self._record(typed, [])
            case _:
                assert_never(typed)

    def _fold(self, spans: tuple[Span, ...], applied: list[_Applied]) -> None:
        """A context-only line: fold it into module info lines, as llvm does."""
        lead = spans[0].text if spans and isinstance(spans[0], Text) else ""
        for item in applied:
            typed = item.typed
            match typed:
                case MmapElement():
                    if item.mapping is None:
                        continue
                    self._fold_mapping(lead, item.mapping)
                case ModuleElement():
                    if item.module is None:
                        continue
                    self._fold_module(lead, item.module)
                case ResetElement():
                    element = typed.element
                    self._fold_reset(lead, element.tag, [f.text for f in element.fields])
                case (
                    BtElement()
                    | PcElement()
                    | DataElement()
                    | SymbolElement()
                    | HexdictElement()
                    | DumpfileElement()
                    | OtherElement()
                ):
                    continue  # not contextual: nothing to fold
                case _:
                    assert_never(typed)
            lead = ""

    def _fold_reset(self, lead: str, tag: str, fields: list[str]) -> None:
        self._end_info_line()
        self.out.write(lead)
        layout.raw_text(self.out, tag, fields)
        self.out.write(self._eol)

    def _fold_module(self, lead: str, module: Module) -> None:
        self._end_info_line()
        self.out.write(lead)
        self._info = _InfoLine(module, self._eol)
        layout.module_info_begin(self.out, module)
        layout.module_build_id(self.out, module)

    def _fold_mapping(self, lead: str, mapping: Mapping) -> None:
        """Add `mapping` to the open info line of its module, or start an `adds`
        line for it (after `lead`)."""
        if self._info is None or self._info.module is not mapping.module:
            self._end_info_line()
            self.out.write(lead)
            self._info = _InfoLine(mapping.module, self._eol)
            layout.module_info_begin(self.out, mapping.module)
            layout.module_adds(self.out)
        self._info.mappings.append(mapping)

    def _end_info_line(self) -> None:
        if self._info is None:
            return
        layout.module_info_end(self.out, self._info.mappings, self._info.eol)
        self._info = None

    def _context_in_place(self, item: _Applied) -> None:
        """A contextual element on a line with other text: shown where it stands."""
        typed = item.typed
        if not item.ok:
            self.out.write(typed.element.text)
            return
        match typed:
            case MmapElement():
                if item.mapping is not None:
                    layout.module_info_begin(self.out, item.mapping.module)
                    layout.module_adds(self.out)
                    layout.module_info_end(self.out, [item.mapping], "")
            case ModuleElement():
                if item.module is not None:
                    layout.module_info_begin(self.out, item.module)
                    layout.module_build_id(self.out, item.module)
                    layout.module_info_end(self.out, [], "")
            case ResetElement():
                layout.raw_element(self.out, typed.element)
            case (
                BtElement()
                | PcElement()
                | DataElement()
                | SymbolElement()
                | HexdictElement()
                | DumpfileElement()
                | OtherElement()
            ):
                pass  # not contextual: never applied
            case _:
                assert_never(typed)

    # --- a whole line, in place --------------------------------------------------

    def _render_line(self, spans: tuple[Span, ...], done: Iterator[_Applied] | None) -> None:
        """Print a line as it stands; `done` has its contextual elements if already applied."""
        self._end_info_line()
        for span in spans:
            match span:
                case Text():
                    self.out.write(span.text)
                case Element():
                    if span.tag in CONTEXTUAL_TAGS and not span.multiline:
                        item = next(done) if done is not None else self._apply(span)
                        self._context_in_place(item)
                    else:
                        self._element(span)
                case Sgr():
                    self.out.sgr(span.code)
                case Continuation():
                    self.out.write(span.text)
                case _:
                    assert_never(span)
        self.out.write(self._eol)
        if self._notes:
            if not self._eol:
                self.out.write("\n")
            for note in self._notes:
                self.out.write(note)
                self.out.write(self._eol or "\n")
            self._notes.clear()

    def _element(self, element: Element) -> None:
        typed = decode(element)
        match typed:
            case BtElement():  # the most frequent first: logs are mostly backtraces
                self._bt(typed)
            case PcElement():
                self._pc(typed)
            case DataElement():
                self._data(typed)
            case SymbolElement():
                if self._report_all(typed.diagnostics):
                    demangled = self.naming.symbol_element(typed.name)
                    layout.plain_name(self.out, demangled)
                    self._record(typed, [], name=typed.name, demangled=demangled)
                else:
                    self._keep(typed)
            case HexdictElement():
                self._hexdict(typed)
            case DumpfileElement():
                self._keep(typed)
                if self.records is not None:
                    layout_now = records.context(self.context)
                    self._record(typed, [], type=typed.dump_type, name=typed.name, **layout_now)
            case OtherElement():
                self._report_all(typed.diagnostics)
                self._keep(typed)
                self._record(typed, [], fields=[f.text for f in typed.element.fields])
            case ResetElement() | ModuleElement() | MmapElement():
                raise AssertionError("contextual elements are applied (_apply), never rendered")
            case _:
                assert_never(typed)

    def _keep(self, typed: TypedElement) -> None:
        """Write an element as it came (the part of it on this line)."""
        element = typed.element
        self.out.write(element.text if not element.multiline else self._text[: element.end])

    # --- presentation elements ---------------------------------------------------

    def _code(self, typed: PcElement | BtElement) -> tuple[CodeResult, list[Diagnostic]]:
        result = self.resolver.code(self.context, lookup_address(typed))
        extra: list[Diagnostic] = []
        if result.placement is None:
            extra.append(self._no_mmap(typed.element))
        elif result.error is not None:
            extra.append(
                self._lookup_warning(result.placement.module, result.error, result.resolution)
            )
        if result.placement is not None and not result.frames:
            # (a module with no file, the vDSO, is expected to stay unresolved)
            self.unresolved += not result.placement.module.has_no_file
        return result, extra

    def _pc(self, typed: PcElement) -> None:
        if not self._report_all(typed.diagnostics):
            self._keep(typed)
            self._record(typed, [])
            return
        result, extra = self._code(typed)
        if self.records is not None:
            self._record(
                typed,
                extra,
                address=records.hex_(typed.address),
                type=typed.pc_type,
                **records.code(result, self.naming),
            )
        placement = result.placement
        if placement is None:
            layout.raw_element(self.out, typed.element)
            return
        frames = result.frames
        frame = FrameText(
            self.naming.pc_function(frames),
            self.naming.file(frames[0]) if frames else None,
            frames[0].line if frames else 0,
        )
        if frame.file is not None:
            layout.pc_location(self.out, frame)
        elif frame.function is not None:
            self.out.highlight()
            self.out.value(frame.function)
            self.out.write(" ")
            self.out.restore()
            layout.module_offset(self.out, placement.module.name, placement.module_relative)
        else:
            layout.module_offset(self.out, placement.module.name, placement.module_relative)

    def _bt(self, typed: BtElement) -> None:
        if not self._report_all(typed.diagnostics):
            self._keep(typed)
            self._record(typed, [])
            return
        result, extra = self._code(typed)
        if self.records is not None:
            self._record(
                typed,
                extra,
                frame=typed.frame,
                address=records.hex_(typed.address),
                type=typed.pc_type,
                **records.code(result, self.naming),
            )
        placement = result.placement
        if placement is None:
            layout.raw_element(self.out, typed.element)
            return
        frames = self.naming.frame_texts_for(result.frames)
        layout.bt_frames(
            self.out,
            typed.frame,
            result.address,
            frames,
            placement.module.name,
            placement.module_relative,
            self._eol or "\n",
            show_invalid=False,
        )

    def _data(self, typed: DataElement) -> None:
        if not self._report_all(typed.diagnostics):
            self._keep(typed)
            self._record(typed, [])
            return
        result = self.resolver.data(self.context, lookup_address(typed))
        extra: list[Diagnostic] = []
        placement = result.placement
        if placement is None:
            extra.append(self._no_mmap(typed.element))
        elif result.error is not None:
            extra.append(self._lookup_warning(placement.module, result.error, result.resolution))
        if placement is not None and result.symbol is None:
            self.unresolved += not placement.module.has_no_file
        if self.records is not None:
            self._record(
                typed,
                extra,
                address=records.hex_(typed.address),
                **records.data(result, self.naming),
            )
        if placement is None:
            layout.raw_element(self.out, typed.element)
        elif result.symbol is None:
            layout.module_offset(self.out, placement.module.name, placement.module_relative)
        else:
            layout.plain_name(self.out, self.naming.data(result.symbol))

    # --- hexdict -------------------------------------------------------------------

    def _hexdict(self, typed: HexdictElement) -> None:
        """Keep the dump as it is; note what each value points at, after the line."""
        self._report_all(typed.diagnostics)
        self._keep(typed)
        pairs_out: list[records.Record] = []
        indent = self._held_indent(typed.element)
        for pair in typed.pairs:
            if pair.value is None or pair.value == 0:
                continue
            placement = self.context.place(pair.value)
            if placement is None:
                continue
            entry: records.Record = {"key": pair.key, "value": records.hex_(pair.value)}
            note = self._hexdict_note(pair.key, pair.value, placement, entry)
            self._notes.append(indent + note)
            pairs_out.append(entry)
        if self.records is not None:
            self._record(typed, [], pairs=pairs_out)

    def _held_indent(self, element: Element) -> str:
        text = self._held_lines.get(element.line, (self._text, ""))[0]
        return text[: len(text) - len(text.lstrip())]

    def _hexdict_note(
        self, key: str, value: int, placement: Placement, entry: records.Record
    ) -> str:
        """`    KEY: 0x<value> DESCRIPTION (MODULE+0xOFFSET)`, styled like a bt frame."""
        w = StyledWriter(self.out.enabled)
        w.highlight()
        w.write("    ")
        w.value(key)
        w.write(":")
        w.value(f" 0x{value:016x} ")
        module = placement.module
        if "x" in placement.segment.mode:
            result = self.resolver.code(self.context, value)
            if self.records is not None:
                entry.update(records.code(result, self.naming))
            if result.error is not None:
                self._lookup_warning(module, result.error, result.resolution)
            if result.frames:
                inner = result.frames[0]
                name = self.naming.function(inner)
                file = self.naming.file(inner)
                if name is not None:
                    w.value(name)
                    w.write(" ")
                if file is not None:
                    w.value(f"{file}:{inner.line}:{inner.column}")
                    w.write(" ")
        else:
            data = self.resolver.data(self.context, value)
            if self.records is not None:
                entry.update(records.data(data, self.naming))
            if data.error is not None:
                self._lookup_warning(module, data.error, data.resolution)
            if data.symbol is not None:
                offset = placement.module_relative - data.symbol.start
                w.value(self.naming.data(data.symbol) + (f"+0x{offset:x}" if offset else ""))
                w.write(" ")
        w.write("(")
        w.value(module.name)
        w.write("+")
        w.value(f"0x{placement.module_relative:x}")
        w.write(")")
        w.restore()
        return w.take()
