"""`--compat=llvm19`: llvm-symbolizer 19's `--filter-markup`, byte for byte.

This reproduces what LLVM 19.1 prints, including what it gets wrong, so
its output and stackmark's can be compared side by side (LLVM's
llvm/lib/DebugInfo/Symbolize/MarkupFilter.cpp; README, `--compat=llvm19`):

* a line holding a contextual element (`reset`, `module`, `mmap`) loses
  everything after that element; the text before it is kept only when the
  element starts a new module info line; an mmap that extends the open
  module info line makes the whole input line vanish;
* a `reset` with nothing to forget prints nothing;
* a contextual element with an error takes no effect and its line vanishes;
* a missing debug file gives `error: could not find build ID` (no module
  named) and the raw element;
* `hexdict` and `dumpfile` pass through as text; no multi-line elements.
"""

from __future__ import annotations

from typing import assert_never

from stackmark.markup import layout
from stackmark.markup.context import Mapping, MarkupContext, lookup_address
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
    decode,
)
from stackmark.markup.fastpath import BtLines, context_line
from stackmark.markup.layout import FrameText
from stackmark.markup.naming import Naming
from stackmark.markup.parser import MarkupParser
from stackmark.markup.report import DiagnosticPrinter
from stackmark.markup.resolve import Resolver
from stackmark.markup.styled import StyledWriter
from stackmark.markup.syntax import CONTEXTUAL_TAGS, Continuation, Element, Sgr, Span, Text
from stackmark.model import Module

# The dispatchers below `match` on the class, the most frequent kinds first, and end in
# `assert_never`, so mypy names each one a new element kind misses (as in markup/filter.py).


class _InfoLine:
    """The module info line being printed: more mmaps of its module may join it."""

    __slots__ = ("mappings", "module")

    def __init__(self, module: Module) -> None:
        self.module = module
        self.mappings: list[Mapping] = []


class Llvm19Filter:
    """Feeds lines (without their terminator); returns the output for each."""

    def __init__(
        self,
        resolver: Resolver,
        naming: Naming,
        printer: DiagnosticPrinter,
        *,
        colour: bool = False,
        fast_paths: bool = True,
        first_line: int = 0,
    ) -> None:
        """`first_line`: the 0-based number of the first line fed (as `StackmarkFilter`)."""
        self.resolver = resolver
        self.naming = naming
        self.printer = printer
        self.unresolved = 0  # pc/bt/data elements printed without a name
        self.context = MarkupContext()
        self.out = StyledWriter(colour)
        self.fast_paths = fast_paths  # off: every line takes the general path (tests)
        self._bt_lines = BtLines(resolver, naming, show_invalid=True)
        self._parser = MarkupParser(frozenset())
        self._info: _InfoLine | None = None
        self._line_no = first_line - 1
        self._text = ""
        self._eol = "\n"

    # --- driving -------------------------------------------------------------

    def feed(self, text: str, eol: str) -> str:
        """Process one input line; `eol` is its terminator ('\\n', '\\r\\n' or '')."""
        if eol == "" and text.endswith("\r"):
            text, eol = text[:-1], "\r\n"  # llvm appends '\n' to a last line
        self._line_no += 1
        self._text, self._eol = text, ("\r\n" if eol == "\r\n" else "\n")
        out = self.out
        if (
            self.fast_paths
            and out.colour is None
            and not out.bold
            and "{{{" not in text
            and "\x1b" not in text
        ):
            if self._info is None:
                return text + self._eol  # plain text, the common case: nothing to do
            self._end_info_line()  # the line after a context block closes its info line
            out.write(text + self._eol)
            return out.take()
        out.reset_state()
        if self.fast_paths and not out.enabled:
            if text.startswith("{{{"):
                replayed = context_line(text, self.context)
                if replayed is not None:
                    if replayed.kind == "reset":
                        self._reset_now("reset", [])
                    elif replayed.mapping is not None:
                        self._add_mapping(replayed.mapping, [])
                    elif replayed.module is not None:
                        self._module_line(replayed.module, [])
                    return out.take()
            fast = self._bt_lines.line(text, self.context, self._eol)
            if fast is not None:
                self._end_info_line()
                out.write(fast + self._eol)
                return out.take()
        parsed = self._parser.parse(text, self._line_no)
        deferred: list[Span] = []
        for span in parsed.spans:
            if isinstance(span, Element) and span.tag in CONTEXTUAL_TAGS:
                self._contextual(span, deferred)
                return self.out.take()
            deferred.append(span)
        self._end_info_line()
        for span in deferred:
            self._span(span)
        self.out.write(self._eol)
        return self.out.take()

    def finish(self) -> str:
        """End of input: close any module info line and forget the context."""
        self._end_info_line()
        self.out.reset_state()
        self.context = MarkupContext()
        return self.out.take()

    @property
    def errors(self) -> int:
        return self.printer.errors

    @property
    def passes_plain_lines(self) -> bool:
        """True when a whole line without `{{{` or ESC, ending in a line feed, would
        come out exactly as it came in: the caller may copy such lines itself and
        count them with `skip_plain_lines`."""
        out = self.out
        return self.fast_paths and self._info is None and out.colour is None and not out.bold

    def skip_plain_lines(self, count: int) -> None:
        self._line_no += count

    def feed_bt_lines(self, data: bytes, start: int, end: int, out: list[bytes]) -> int:
        """As `StackmarkFilter.feed_bt_lines`: lone `bt` lines rendered as bytes."""
        if not self.passes_plain_lines or self.out.enabled:
            return start
        stop = self._bt_lines.lines_bytes(data, start, end, self.context, out)
        if stop > start:
            self._line_no += data.count(b"\n", start, stop)
        return stop

    # --- helpers -------------------------------------------------------------

    def _report(self, diag: Diagnostic) -> None:
        self.printer.report(diag, self._text, self._eol)

    def _report_all(self, diags: list[Diagnostic]) -> bool:
        """Print `diags`; True when there was no error among them."""
        for diag in diags:
            self._report(diag)
        return not any(d.is_error for d in diags)

    def _lookup_failed(self, message: str) -> None:
        self._report(Diagnostic(Severity.ERROR, message, self._line_no, None, None, "no-symbols"))

    def _no_mmap(self, element: Element) -> None:
        first = element.fields[0]
        self._report(
            Diagnostic(
                Severity.ERROR,
                "no mmap covers address",
                first.line,
                first.start,
                first.end,
                "no-mmap",
            )
        )
        layout.raw_element(self.out, element)

    def _flush(self, deferred: list[Span]) -> None:
        for span in deferred:
            self._span(span)

    def _begin_info_line(self, module: Module) -> None:
        layout.module_info_begin(self.out, module)
        self._info = _InfoLine(module)

    def _end_info_line(self) -> None:
        if self._info is None:
            return
        layout.module_info_end(self.out, self._info.mappings, self._eol)
        self._info = None

    # --- contextual elements ---------------------------------------------------

    def _contextual(self, element: Element, deferred: list[Span]) -> None:
        typed = decode(element)
        match typed:
            case MmapElement():  # the most frequent first: modules have several
                self._mmap(typed, deferred)
            case ModuleElement():
                self._module(typed, deferred)
            case ResetElement():
                self._reset(typed, deferred)
            case (
                BtElement()
                | PcElement()
                | DataElement()
                | SymbolElement()
                | HexdictElement()
                | DumpfileElement()
                | OtherElement()
            ):
                pass  # never here: feed() sends only contextual tags
            case _:
                assert_never(typed)

    def _mmap(self, typed: MmapElement, deferred: list[Span]) -> None:
        if not self._report_all(typed.diagnostics):
            return
        result = self.context.map_segment(typed)
        if isinstance(result, Diagnostic):
            self._report(result)
            return
        self._add_mapping(result, deferred)

    def _add_mapping(self, mapping: Mapping, deferred: list[Span]) -> None:
        if self._info is None or self._info.module is not mapping.module:
            self._end_info_line()
            self._flush(deferred)
            self._begin_info_line(mapping.module)
            layout.module_adds(self.out)
        assert self._info is not None
        self._info.mappings.append(mapping)

    def _reset(self, typed: ResetElement, deferred: list[Span]) -> None:
        self._report_all(typed.diagnostics)  # only a warning is possible
        element = typed.element
        self._reset_now(element.tag, [f.text for f in element.fields], deferred)

    def _reset_now(self, tag: str, fields: list[str], deferred: list[Span] | None = None) -> None:
        """Forget the context, printing `[[[reset]]]`, unless there is nothing to forget."""
        if self.context.empty:
            return
        self._end_info_line()
        if deferred:
            self._flush(deferred)
        layout.raw_text(self.out, tag, fields)
        self.out.write(self._eol)
        self.context.reset()

    def _module(self, typed: ModuleElement, deferred: list[Span]) -> None:
        if not self._report_all(typed.diagnostics):
            return
        result = self.context.declare_module(typed)
        if isinstance(result, Diagnostic):
            self._report(result)
            return
        self._module_line(result, deferred)

    def _module_line(self, module: Module, deferred: list[Span]) -> None:
        self._end_info_line()
        self._flush(deferred)
        self._begin_info_line(module)
        layout.module_build_id(self.out, module)

    # --- everything else -------------------------------------------------------

    def _span(self, span: Span) -> None:
        match span:
            case Text():
                self.out.write(span.text)
            case Element():
                self._element(span)
            case Sgr():
                self.out.sgr(span.code)
            case Continuation():  # never produced without multi-line tags
                self.out.write(span.text)
            case _:
                assert_never(span)

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
                    layout.plain_name(self.out, self.naming.symbol_element(typed.name))
            case OtherElement():
                if typed.diagnostics:
                    self._report_all(typed.diagnostics)  # a bad tag: the element is dropped
                else:
                    self.out.write(element.text)  # an unknown tag: as it is
            case (
                HexdictElement()
                | DumpfileElement()
                | ResetElement()
                | ModuleElement()
                | MmapElement()
            ):
                self.out.write(element.text)  # hexdict, dumpfile: as they are
            case _:
                assert_never(typed)

    def _pc(self, typed: PcElement) -> None:
        if not self._report_all(typed.diagnostics):
            return
        result = self.resolver.code(self.context, lookup_address(typed))
        if result.placement is None:
            self._no_mmap(typed.element)
            return
        if result.error is not None or not result.frames:
            self.unresolved += 1
        if result.error is not None:
            self._lookup_failed(result.error)
            layout.raw_element(self.out, typed.element)
            return
        frames = result.frames
        frame = FrameText(
            self.naming.pc_function(frames),
            self.naming.file(frames[0]) if frames else None,
            frames[0].line if frames else 0,
        )
        if not frame.known and not (frames and frames[0].line):
            layout.raw_element(self.out, typed.element)
            return
        layout.pc_location(self.out, frame)

    def _bt(self, typed: BtElement) -> None:
        if not self._report_all(typed.diagnostics):
            return
        result = self.resolver.code(self.context, lookup_address(typed))
        placement = result.placement
        if placement is None:
            self._no_mmap(typed.element)
            return
        if result.error is not None or not result.frames:
            self.unresolved += 1
        if result.error is not None:
            self._lookup_failed(result.error)
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
            self._eol,
        )

    def _data(self, typed: DataElement) -> None:
        if not self._report_all(typed.diagnostics):
            return
        result = self.resolver.data(self.context, lookup_address(typed))
        if result.placement is None:
            self._no_mmap(typed.element)
            return
        if result.symbol is None:
            self.unresolved += 1
        if result.error is not None:
            self._lookup_failed(result.error)
            layout.raw_element(self.out, typed.element)
            return
        layout.plain_name(self.out, self.naming.data(result.symbol))
