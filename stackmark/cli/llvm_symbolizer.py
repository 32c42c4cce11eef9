"""`llvm-symbolizer-stackmark`: llvm-symbolizer's address mode, answered by stackmark.

The sanitizers (ASan, UBSan, TSan, ...) symbolize their reports by starting
an external symbolizer and talking to it over a pipe; with
`ASAN_SYMBOLIZER_PATH` (or `UBSAN_SYMBOLIZER_PATH`, or the
`external_symbolizer_path` runtime option) they run any program whose file
name starts with `llvm-symbolizer`. This is such a program. compiler-rt
(sanitizer_symbolizer_libcdep.cpp, sanitizer_symbolizer_posix_libcdep.cpp)
starts it as

    llvm-symbolizer-stackmark --demangle|--no-demangle --inlines|--no-inlines
                              --default-arch=ARCH

and writes one request a line, `CODE|DATA|FRAME "MODULE[:ARCH]" 0xOFFSET`,
where MODULE is the path of a loaded file and OFFSET an address in it as
the ELF file numbers it (the runtime address less the load bias). It reads
the answer up to the first empty line:

    CODE   per frame, innermost inlined first:  FUNCTION / FILE:LINE:COLUMN
           (`??` and `??:0:0` when unknown; one frame with --no-inlines)
    DATA   NAME / START SIZE (decimal) / DECLFILE:DECLLINE  (`??`, `0 0`, `??:?`)
    FRAME  per local variable or parameter of the subroutine there:
           FUNCTION / NAME / DECLFILE:DECLLINE / FRAMEOFFSET SIZE TAGOFFSET
           (`??` for each unknown part; `??` alone when there are none;
           stackmark.dwarf.locals; HWASan's stack reports ask)

Answers come from stackmark's sources. The file a request names is read
as llvm-symbolizer reads the file it is given (as if given with --obj):
its symbol table and DWARF, or, when it has no DWARF, the DWARF of the file
with its build ID in a debug-file directory, a --symbol-path directory,
next to it through .gnu_debuglink, or on a debuginfod server; a GSYM cache
entry or --gsym-path file answers in their place when there is one.
Options a sanitizer cannot pass on the command line go in
`LLVM_SYMBOLIZER_OPTS`, read first, as llvm-symbolizer reads it.

On its own it is llvm-symbolizer's address mode: addresses on the command
line or one request a line on stdin, with `--obj FILE` (then a request is
`[CODE|DATA|FRAME] ADDRESS`) or without (then `[CODE|DATA|FRAME] MODULE
ADDRESS`, MODULE quoted when it holds spaces). `--print-address` and
`--pretty-print` shape the answer as llvm's do.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, BinaryIO

from stackmark.errors import StackmarkError
from stackmark.markup.naming import NameOptions, Naming
from stackmark.model import Module, SourceFrame
from stackmark.plain import Record

if TYPE_CHECKING:
    import argparse

    from stackmark.dwarf.reader import DwarfReader
    from stackmark.symbols.by_path import ModuleProblem, ModulesByPath
    from stackmark.symbols.symbolizer import Symbolizer

ANSWERS_KEPT = 1 << 16
"""Answers the Symbolizer remembers: a sanitizer asks again for the frames of every
report it prints."""

PROGRAM = "llvm-symbolizer-stackmark"
COMMANDS = ("CODE", "DATA", "FRAME")
OPTIONS_VARIABLE = "LLVM_SYMBOLIZER_OPTS"

UNKNOWN_CODE = "??\n??:0:0\n"
UNKNOWN_DATA = "??\n0 0\n??:?\n"
NO_LOCALS = "??\n"  # a FRAME answer without locals


def unknown(command: str) -> str:
    """The answer to `command` when nothing is known."""
    return {"CODE": UNKNOWN_CODE, "DATA": UNKNOWN_DATA}.get(command, NO_LOCALS)


def parser() -> argparse.ArgumentParser:
    import argparse

    from stackmark.symbolize_options import (
        add_debuginfod_arguments,
        add_naming_arguments,
        add_symbol_source_arguments,
    )

    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="llvm-symbolizer's address mode, answered by stackmark: the external "
        "symbolizer\nof the sanitizers (ASAN_SYMBOLIZER_PATH=$(command -v "
        f"{PROGRAM})), or a command\nthat symbolizes addresses in a file.",
        epilog=(
            "requests (stdin, one a line, or ADDRESS arguments):\n"
            "  [CODE|DATA|FRAME] ADDRESS            with --obj\n"
            '  [CODE|DATA|FRAME] "MODULE" ADDRESS   without (MODULE may end in :ARCH)\n'
            "answers end with an empty line; ?? means unknown.\n\n"
            f"Options in ${OPTIONS_VARIABLE} are read before the command line's (a\n"
            "sanitizer starts this program with its own). Exit status: 0, or 2 for a\n"
            "usage error."
        ),
    )
    parser.add_argument("addresses", nargs="*", metavar="ADDRESS", help="requests to answer")
    where = add_symbol_source_arguments(parser, objects=False)
    where.add_argument(
        "--obj",
        "--exe",
        "-e",
        metavar="FILE",
        help="the file the addresses are in (requests then carry no module name)",
    )
    add_debuginfod_arguments(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--inlines",
        "-i",
        dest="inlines",
        action="store_true",
        default=True,
        help="a frame for each inlined call, innermost first (the default)",
    )
    out.add_argument(
        "--no-inlines",
        dest="inlines",
        action="store_false",
        help="one frame per address (the physical function's name, the innermost line)",
    )
    add_naming_arguments(out, short_functions=True)
    out.add_argument(
        "--print-address", "--addresses", "-a", action="store_true", help="echo each address"
    )
    out.add_argument(
        "--pretty-print", "-p", action="store_true", help="FUNCTION at FILE:LINE:COLUMN"
    )
    out.add_argument(
        "--default-arch",
        metavar="ARCH",
        help="accepted as compiler-rt passes it; an ELF file has one architecture",
    )
    return parser


class Request(Record):
    """One parsed request: what to answer, about which file, at which address."""

    __slots__ = _fields = ("command", "module", "address")
    command: str
    module: str | None
    address: int

    def __init__(self, command: str, module: str | None, address: int) -> None:
        self.command = command
        self.module = module
        self.address = address


def parse_request(line: str, with_obj: bool) -> Request | str:
    """A request line as llvm-symbolizer reads it, or why it is not one."""
    text = line.strip()
    command = "CODE"
    head, _, rest = text.partition(" ")
    if head in COMMANDS:
        command, text = head, rest.lstrip()
    module: str | None = None
    if not with_obj:
        if text[:1] in ('"', "'"):
            end = text.find(text[0], 1)
            if end < 0:
                return f"unterminated module name in {line.strip()!r}"
            module, text = text[1:end], text[end + 1 :].lstrip()
        else:
            module, _, text = text.partition(" ")
            text = text.lstrip()
        if not module:
            return "no module name (give --obj, or a module before the address)"
    address = parse_address(text)
    if address is None:
        return f"{text!r}: expected a number as module offset"
    return Request(command, module, address)


def parse_address(text: str) -> int | None:
    """A C-style number (0x hex, 0 octal, decimal) below 2**64, or None."""
    digits = text.strip()
    try:
        if digits[:2] in ("0x", "0X"):
            value = int(digits[2:], 16)
        elif len(digits) > 1 and digits[0] == "0":
            value = int(digits[1:], 8)
        else:
            value = int(digits, 10)
    except ValueError:
        return None
    if not digits[:1].isdigit() or value >= 1 << 64:
        return None
    return value


class Answerer:
    """Answers requests from a Symbolizer, in llvm-symbolizer's plain output style."""

    def __init__(
        self,
        symbolizer: Symbolizer,
        naming: Naming,
        *,
        inlines: bool = True,
        print_address: bool = False,
        pretty: bool = False,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        from stackmark.symbols.by_path import ModulesByPath

        self.symbolizer = symbolizer
        self.naming = naming
        self.inlines = inlines
        self.print_address = print_address
        self.pretty = pretty
        self.warn = warn
        self.modules: ModulesByPath = ModulesByPath()
        self._warned: set[str] = set()
        self._readers: dict[str, DwarfReader | None] = {}

    def answer(self, request: Request | str, obj: str | None) -> str:
        """The whole answer to one request, ending with its empty line."""
        if isinstance(request, str):
            self._warn_once(request, request)
            return self._header(None) + UNKNOWN_CODE + "\n"
        name = obj if obj is not None else request.module
        assert name is not None
        found = self.modules.module(name)
        if isinstance(found, Module) and found.path is not None and found.build_id:
            # The named file is the module (as with --obj): its symbols, and the
            # DWARF of its debug file when it has none, as llvm-symbolizer pairs them.
            self.symbolizer.add_object(found.path)
        head = self._header(request.address)
        if not isinstance(found, Module):
            self._problem(found)
            return head + self._pretty_unknown(unknown(request.command), request.command) + "\n"
        try:
            if request.command == "CODE":
                body = self._code(found, request.address)
            elif request.command == "DATA":
                body = self._data(found, request.address)
            else:
                body = self._locals(found, request.address)
        except StackmarkError as exc:  # it names the file and the offset
            self._warn_once(f"{found.path}:error", str(exc))
            body = unknown(request.command)
        except OSError as exc:
            self._warn_once(f"{found.path}:error", f"{found.path}: {exc.strerror or exc}")
            body = unknown(request.command)
        return head + body + "\n"

    # --- the three answers -------------------------------------------------------

    def _code(self, module: Module, address: int) -> str:
        lookup = self.symbolizer.code(module, address)
        self._check_resolution(module)
        frames = lookup.frames
        if not frames:
            return self._pretty_unknown(UNKNOWN_CODE, "CODE")
        if not self.inlines:
            one = (
                self.naming.pc_function(frames),
                self.naming.file(frames[0]),
                frames[0].line,
                frames[0].column,
            )
            return self._frames_text([one])
        return self._frames_text([self._frame(frame) for frame in frames])

    def _frame(self, frame: SourceFrame) -> tuple[str | None, str | None, int, int]:
        return (self.naming.function(frame), self.naming.file(frame), frame.line, frame.column)

    def _frames_text(self, frames: Sequence[tuple[str | None, str | None, int, int]]) -> str:
        lines: list[str] = []
        hide_names = self.naming.options.functions == "none"
        for index, (function, file, line, column) in enumerate(frames):
            where = f"{file}:{line}:{column}" if file else "??:0:0"
            if self.pretty:
                prefix = " (inlined by) " if index else ""
                lines.append(f"{prefix}{function or '??'} at {where}\n")
                continue
            if not hide_names:
                lines.append(f"{function or '??'}\n")
            lines.append(where + "\n")
        return "".join(lines)

    def _data(self, module: Module, address: int) -> str:
        lookup = self.symbolizer.data(module, address)
        self._check_resolution(module)
        symbol = lookup.symbol
        if symbol is None:
            return UNKNOWN_DATA
        place = self._declaration(module, symbol.start, symbol.name)
        where = f"{place[0]}:{place[1]}" if place is not None else "??:?"
        return f"{self.naming.data(symbol)}\n{symbol.start} {symbol.size}\n{where}\n"

    def _locals(self, module: Module, address: int) -> str:
        from stackmark.dwarf.locals import frame_locals

        binary = self.symbolizer.resolve(module).binary
        reader = self._dwarf(binary) if binary is not None else None
        found = frame_locals(reader, address) if reader is not None else []
        if not found:
            return NO_LOCALS
        lines: list[str] = []
        for local in found:
            lines.append(f"{local.function or '??'}\n{local.name or '??'}\n")
            lines.append(f"{local.decl_file or '??'}:{local.decl_line}\n")
            numbers = (local.frame_offset, local.size, local.tag_offset)
            lines.append(" ".join("??" if n is None else str(n) for n in numbers) + "\n")
        return "".join(lines)

    def _dwarf(self, path: str) -> DwarfReader | None:
        """The DWARF of `path`, opened once (None: none there, e.g. a GSYM file)."""
        if path not in self._readers:
            from stackmark.dwarf.reader import DwarfReader

            try:
                # dwz and .dwo files: where the symbolizer's store looks for them
                store = self.symbolizer.store
                self._readers[path] = DwarfReader.open(
                    path,
                    load_supplementary=store.load_supplementary,
                    load_split=store.split_dwarf_finder(),
                )
            except (StackmarkError, OSError):
                self._readers[path] = None
        return self._readers[path]

    def _declaration(self, module: Module, start: int, name: str) -> tuple[str, int] | None:
        """Where the variable at `start` is declared, as the symbolizer answers it."""
        place = self.symbolizer.declaration_of(module, name, start)
        if place is None:
            return None
        if self.naming.options.paths != "basename":
            return (place.file, place.line)
        return (os.path.basename(place.file), place.line)

    # --- shapes and warnings ---------------------------------------------------------

    def _header(self, address: int | None) -> str:
        if not self.print_address:
            return ""
        shown = f"0x{address:x}" if address is not None else "??"
        return shown + (": " if self.pretty else "\n")

    def _pretty_unknown(self, body: str, command: str) -> str:
        if self.pretty and command == "CODE":
            return "?? at ??:0:0\n"
        return body

    def _problem(self, problem: ModuleProblem) -> None:
        self._warn_once(problem.path, f"{problem.path}: {problem.reason}")

    def _check_resolution(self, module: Module) -> None:
        resolution = self.symbolizer.resolve(module)
        if resolution.binary is None and module.path is not None:
            self._warn_once(
                module.path,
                f"{module.path}: {resolution.error or 'no symbols'} "
                f"(BuildID={module.build_id or 'none'}); give its debug file with --obj or "
                f"--debug-file-directory (in ${OPTIONS_VARIABLE} under a sanitizer)",
            )
        for path, found in resolution.mismatched:
            self._warn_once(
                f"{path}:mismatch", f"{path}: build ID {found or 'none'} does not match"
            )

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.warn(message)


def _build(args: argparse.Namespace, warn: Callable[[str], None]) -> Answerer:
    from stackmark.cli import scale_args
    from stackmark.markup.stream import make_naming
    from stackmark.symbols.setup import SymbolSettings, build_symbolizer

    settings = SymbolSettings(
        debug_file_directories=list(args.debug_file_directory),
        objects=[args.obj] if args.obj else [],
        symbol_paths=list(args.symbol_path),
        gsym_paths=list(args.gsym_path),
        gsym_cache=args.gsym_cache,
        gsym_cache_dir=args.gsym_cache_dir,
        relative_names=args.relativenames,
        module_names=True,
        cache_size=ANSWERS_KEPT,
    )
    # No file is listed per request here: a server's wrong file or error is worth
    # its one line (a plain "not found" is not).
    debuginfod = scale_args.make_client(args, report_failures=True)
    paths = "basename" if args.basenames else "relative" if args.relativenames else "absolute"
    naming = make_naming(NameOptions(functions=args.functions, demangle=args.demangle, paths=paths))
    return Answerer(
        build_symbolizer(settings, debuginfod, report=warn),
        naming,
        inlines=args.inlines,
        print_address=args.print_address,
        pretty=args.pretty_print,
        warn=warn,
    )


def serve(lines: Iterable[str], out: BinaryIO, answerer: Answerer, obj: str | None) -> None:
    """Answer each request line, flushing each answer (the asker waits for it)."""
    for line in lines:
        text = answerer.answer(parse_request(line, obj is not None), obj)
        out.write(text.encode("utf-8", "surrogateescape"))
        out.flush()


def _stdin_lines(stream: BinaryIO) -> Iterable[str]:
    """Lines as they arrive (a sanitizer writes one and waits for its answer)."""
    while True:
        raw = stream.readline()
        if not raw:
            return
        yield raw.decode("utf-8", "surrogateescape").rstrip("\r\n")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        from_environment = shlex.split(os.environ.get(OPTIONS_VARIABLE, ""))
    except ValueError as exc:
        print(f"{PROGRAM}: error: ${OPTIONS_VARIABLE}: {exc}", file=sys.stderr)
        return 2
    args = parser().parse_args([*from_environment, *arguments])

    def warn(message: str) -> None:
        sys.stderr.write(f"{PROGRAM}: warning: {message}\n")
        sys.stderr.flush()

    answerer = _build(args, warn)
    if args.obj is not None and not os.path.isfile(args.obj):
        warn(f"{args.obj}: no such file")
    lines = args.addresses or _stdin_lines(sys.stdin.buffer)
    try:
        serve(lines, sys.stdout.buffer, answerer, args.obj)
    except BrokenPipeError:
        # The asker went away (a sanitizer exits once its report is out).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except KeyboardInterrupt:
        return 130
    finally:
        answerer.symbolizer.close()
    return 0


def entry() -> None:
    """The console script `llvm-symbolizer-stackmark`."""
    sys.exit(main())
