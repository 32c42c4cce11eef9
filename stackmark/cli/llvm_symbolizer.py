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
line or one request a line on stdin, with `--obj FILE` or `--build-id HEX`
(the module with that build ID, found where a debug file is: debug-file
directories, --symbol-path, debuginfod), when a request is
`[CODE|DATA|FRAME] ADDRESS`, or without either (then `[CODE|DATA|FRAME]
MODULE ADDRESS`, MODULE quoted when it holds spaces). `--print-address`
and `--pretty-print` shape the answer as llvm's do; `--output-style=JSON`
answers in llvm's JSON records (stackmark.cli.llvm_json), with each
frame's start (ElfSymbolSource.frame_starts), read from DWARF.
"""

from __future__ import annotations

import errno
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, BinaryIO

from stackmark.cli import llvm_json
from stackmark.cli.llvm_json import UNKNOWN_FRAME, JsonFrame
from stackmark.errors import StackmarkError
from stackmark.markup.naming import NameOptions, Naming
from stackmark.model import Module, SourceFrame
from stackmark.plain import Record

if TYPE_CHECKING:
    import argparse

    from stackmark.dwarf.locals import Local
    from stackmark.dwarf.reader import DwarfReader
    from stackmark.symbols.by_path import ModuleProblem, ModulesByPath
    from stackmark.symbols.elf_source import FrameStart
    from stackmark.symbols.symbolizer import Symbolizer

ANSWERS_KEPT = 1 << 16
"""Answers the Symbolizer remembers: a sanitizer asks again for the frames of every
report it prints."""

PROGRAM = "llvm-symbolizer-stackmark"
COMMANDS = ("CODE", "DATA", "FRAME")
OPTIONS_VARIABLE = "LLVM_SYMBOLIZER_OPTS"

BUILD_ID_NOT_FOUND = "could not find build ID"  # llvm's words
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
            "  [CODE|DATA|FRAME] ADDRESS            with --obj or --build-id\n"
            '  [CODE|DATA|FRAME] "MODULE" ADDRESS   without (MODULE may end in :ARCH)\n'
            "answers end with an empty line; ?? means unknown.\n\n"
            f"Options in ${OPTIONS_VARIABLE} are read before the command line's (a\n"
            "sanitizer starts this program with its own). Exit status: 0, 1 when the\n"
            "--obj file cannot be read (--output-style=JSON only), or 2 for a usage error."
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
    where.add_argument(
        "--build-id",
        type=_build_id,
        metavar="HEX",
        help="the module with this build ID, found as its debug file is (requests then "
        "carry no module name; not with --obj)",
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
        "--pretty-print",
        "-p",
        action="store_true",
        help="FUNCTION at FILE:LINE:COLUMN (JSON: indented)",
    )
    out.add_argument(
        "--output-style",
        choices=["LLVM", "JSON"],
        default="LLVM",
        help="LLVM: lines, as below (the default); JSON: llvm's JSON, an object a line per "
        "request (one array for ADDRESS arguments), each frame with its function's start",
    )
    out.add_argument(
        "--default-arch",
        metavar="ARCH",
        help="accepted as compiler-rt passes it; an ELF file has one architecture",
    )
    return parser


def _build_id(text: str) -> str:
    """A build ID in hex (lower case), as --build-id takes it."""
    digits = text.lower()
    if not digits or len(digits) % 2 or any(c not in "0123456789abcdef" for c in digits):
        import argparse

        raise argparse.ArgumentTypeError(f"expected a build ID in hex, but got {text!r}")
    return digits


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


class BadRequest(Record):
    """A line that is no request: `reason` for a person, and the module it named, if any
    (llvm's JSON answer still names it)."""

    __slots__ = _fields = ("module", "reason")
    module: str | None
    reason: str

    def __init__(self, module: str | None, reason: str) -> None:
        self.module = module
        self.reason = reason


def parse_request(line: str, with_obj: bool) -> Request | BadRequest:
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
                return BadRequest(None, f"unterminated module name in {line.strip()!r}")
            module, text = text[1:end], text[end + 1 :].lstrip()
        else:
            module, _, text = text.partition(" ")
            text = text.lstrip()
        if not module:
            return BadRequest(None, "no module name (give --obj, or a module before the address)")
    address = parse_address(text)
    if address is None:
        return BadRequest(module, f"{text!r}: expected a number as module offset")
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
        build_id: str | None = None,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        """`build_id`: every request is about the module with this build ID (--build-id)."""
        from stackmark.symbols.by_path import ModulesByPath

        self.symbolizer = symbolizer
        self.naming = naming
        self.inlines = inlines
        self.print_address = print_address
        self.pretty = pretty
        self.warn = warn
        self.modules: ModulesByPath = ModulesByPath()
        # llvm names the module of --build-id by its build ID, in upper case.
        self.by_build_id = Module(0, build_id.upper(), build_id) if build_id is not None else None
        self._warned: set[str] = set()
        self._failed: set[str] = set()  # modules whose JSON error is out
        self._readers: dict[str, DwarfReader | None] = {}

    def module_of(self, request: Request, obj: str | None) -> tuple[str, Module | ModuleProblem]:
        """The name llvm gives the module of `request`, and the module (or why none)."""
        if self.by_build_id is not None:
            return self.by_build_id.name, self.by_build_id
        name = obj if obj is not None else request.module
        assert name is not None
        found = self.modules.module(name)
        if isinstance(found, Module) and found.path is not None and found.build_id:
            # The named file is the module (as with --obj): its symbols, and the
            # DWARF of its debug file when it has none, as llvm-symbolizer pairs them.
            self.symbolizer.add_object(found.path)
        return name, found

    def answer(self, request: Request | BadRequest, obj: str | None) -> str:
        """The whole answer to one request, ending with its empty line."""
        if isinstance(request, BadRequest):
            self._warn_once(request.reason, request.reason)
            return self._header(None) + UNKNOWN_CODE + "\n"
        _, found = self.module_of(request, obj)
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
        except (StackmarkError, OSError) as exc:
            self._lookup_failed(found, exc)
            body = unknown(request.command)
        return head + body + "\n"

    def answer_json(self, request: Request | BadRequest, obj: str | None) -> llvm_json.JsonRecord:
        """The answer to one request as llvm's JSON record (stackmark.cli.llvm_json)."""
        if isinstance(request, BadRequest):
            self._warn_once(request.reason, request.reason)
            name = self.by_build_id.name if self.by_build_id is not None else obj
            name = name if name is not None else request.module or ""
            return llvm_json.code(name, None, [UNKNOWN_FRAME])
        name, found = self.module_of(request, obj)
        address = request.address
        if not isinstance(found, Module):
            self._problem(found)
            if name not in self._failed:
                self._failed.add(name)
                return llvm_json.error(name, address, llvm_message(found))
            return self._empty_json(request.command, name, address, [])
        if found is self.by_build_id and self.symbolizer.resolve(found).binary is None:
            self._check_resolution(found)
            return llvm_json.error(name, address, BUILD_ID_NOT_FOUND)
        try:
            if request.command == "CODE":
                return llvm_json.code(name, address, self._code_json(found, address))
            if request.command == "DATA":
                symbol = self.symbolizer.data(found, address).symbol
                self._check_resolution(found)
                if symbol is None:
                    return llvm_json.data(name, address, "", 0, 0)
                data_name = self.naming.data(symbol)
                return llvm_json.data(name, address, data_name, symbol.start, symbol.size)
            return llvm_json.frame(name, address, self._frame_locals(found, address))
        except (StackmarkError, OSError) as exc:
            self._lookup_failed(found, exc)
            return self._empty_json(request.command, name, address, [UNKNOWN_FRAME])

    @staticmethod
    def _empty_json(
        command: str, name: str, address: int, code_frames: list[JsonFrame]
    ) -> llvm_json.JsonRecord:
        """An answer with nothing in it (`code_frames`: what a CODE answer lists then)."""
        if command == "CODE":
            return llvm_json.code(name, address, code_frames)
        if command == "DATA":
            return llvm_json.data(name, address, "", 0, 0)
        return llvm_json.frame(name, address, [])

    def _lookup_failed(self, module: Module, exc: StackmarkError | OSError) -> None:
        """Say once per file why its lookups fail (a StackmarkError names the file and
        the offset)."""
        if isinstance(exc, StackmarkError):
            self._warn_once(f"{module.path}:error", str(exc))
        else:
            self._warn_once(f"{module.path}:error", f"{module.path}: {exc.strerror or exc}")

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

    def _code_json(self, module: Module, address: int) -> list[JsonFrame]:
        """The frames of a CODE answer with llvm's JSON fields (`_code`'s, plus starts)."""
        from stackmark.symbols.elf_source import ElfSymbolSource

        lookup = self.symbolizer.code(module, address)
        self._check_resolution(module)
        frames = lookup.frames
        if not frames:
            return [UNKNOWN_FRAME]
        source = self.symbolizer.source(module)
        starts = (
            source.frame_starts(address, inlines=self.inlines)
            if isinstance(source, ElfSymbolSource)
            else []
        )
        basenames = self.naming.options.paths == "basename"
        if not self.inlines:
            start = starts[0] if starts else None
            one = JsonFrame(
                self.naming.pc_function(frames),
                self.naming.file(frames[0]),
                frames[0].line,
                frames[0].column,
            )
            return [self._with_start(one, start, basenames)]
        out: list[JsonFrame] = []
        for index, frame in enumerate(frames):
            name, file, line, column = self._frame(frame)
            start = starts[index] if index < len(starts) else None
            out.append(self._with_start(JsonFrame(name, file, line, column), start, basenames))
        return out

    @staticmethod
    def _with_start(frame: JsonFrame, start: FrameStart | None, basenames: bool) -> JsonFrame:
        if start is not None:
            frame.start_address = start.address
            frame.start_line = start.line
            frame.discriminator = start.discriminator
            file = start.file
            frame.start_file = os.path.basename(file) if file and basenames else file
        return frame

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

    def _frame_locals(self, module: Module, address: int) -> list[Local]:
        from stackmark.dwarf.locals import frame_locals

        binary = self.symbolizer.resolve(module).binary
        reader = self._dwarf(binary) if binary is not None else None
        return frame_locals(reader, address) if reader is not None else []

    def _locals(self, module: Module, address: int) -> str:
        found = self._frame_locals(module, address)
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
        if resolution.binary is None and module is self.by_build_id:
            self._warn_once(module.name, f"{module.name}: {BUILD_ID_NOT_FOUND}")
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


def llvm_message(problem: ModuleProblem) -> str:
    """The message llvm's JSON gives for a module it cannot read (ours when llvm's
    would be about another object format)."""
    from stackmark.symbols.by_path import NOT_ELF

    if not os.path.exists(problem.path):
        return os.strerror(errno.ENOENT)
    if os.path.isdir(problem.path):
        return os.strerror(errno.EISDIR)
    if problem.reason == NOT_ELF:
        return "The file was not recognized as a valid object file"
    return f"{problem.path}: {problem.reason}"


def _build(args: argparse.Namespace, warn: Callable[[str], None]) -> Answerer:
    from stackmark.cli import scale_args
    from stackmark.markup.stream import make_naming
    from stackmark.symbols.setup import SymbolSettings, build_symbolizer

    settings = SymbolSettings(
        debug_file_directories=list(args.debug_file_directory),
        objects=[args.obj] if args.obj else [],
        symbol_paths=list(args.symbol_path),
        gsym_paths=list(args.gsym_path),
        # A GSYM cache entry keeps no function starts, which JSON answers carry.
        gsym_cache="off" if args.output_style == "JSON" else args.gsym_cache,
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
        build_id=args.build_id,
        warn=warn,
    )


def serve(lines: Iterable[str], out: BinaryIO, answerer: Answerer, obj: str | None) -> None:
    """Answer each request line, flushing each answer (the asker waits for it)."""
    alone = obj is not None or answerer.by_build_id is not None
    for line in lines:
        text = answerer.answer(parse_request(line, alone), obj)
        out.write(text.encode("utf-8", "surrogateescape"))
        out.flush()


def serve_json(
    lines: Iterable[str], out: BinaryIO, answerer: Answerer, obj: str | None, *, one_array: bool
) -> None:
    """`serve` in llvm's JSON: a record a line as each is answered, or (`one_array`, for
    ADDRESS arguments) all of them as one array at the end, as llvm prints them."""
    alone = obj is not None or answerer.by_build_id is not None
    records = []
    for line in lines:
        record = answerer.answer_json(parse_request(line, alone), obj)
        if one_array:
            records.append(record)
            continue
        out.write(llvm_json.dumps(record, answerer.pretty).encode("utf-8", "surrogateescape"))
        out.flush()
    if one_array:
        out.write(llvm_json.dumps(records, answerer.pretty).encode("utf-8", "surrogateescape"))
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
    command_line = parser()
    args = command_line.parse_args([*from_environment, *arguments])
    if args.obj is not None and args.build_id is not None:
        command_line.error("give --obj or --build-id, not both")

    def warn(message: str) -> None:
        sys.stderr.write(f"{PROGRAM}: warning: {message}\n")
        sys.stderr.flush()

    json_style = args.output_style == "JSON"
    answerer = _build(args, warn)
    if args.obj is not None and json_style:
        found = answerer.modules.module(args.obj)
        if not isinstance(found, Module):  # llvm reads --obj first, and stops there
            record = llvm_json.error(args.obj, 0, llvm_message(found))
            sys.stdout.write(llvm_json.dumps(record, args.pretty_print))
            answerer.symbolizer.close()
            return 1
    elif args.obj is not None and not os.path.isfile(args.obj):
        warn(f"{args.obj}: no such file")
    lines = args.addresses or _stdin_lines(sys.stdin.buffer)
    try:
        if json_style:
            one_array = bool(args.addresses)
            serve_json(lines, sys.stdout.buffer, answerer, args.obj, one_array=one_array)
        else:
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
