"""`stackmark gsym`: look up, dump, verify and make GSYM files.

stackmark gsym lookup FILE.gsym ADDR...       text as llvm-gsymutil prints it
stackmark gsym lookup --addresses-from-stdin  lines "ADDR GSYMPATH" (or "ADDR"
                                              with FILE.gsym given)
stackmark gsym lookup ... --merged-functions  also the functions folded into the
                                              one at each address (llvm 20+'s text)
stackmark gsym dump FILE.gsym                 everything, as llvm-gsymutil prints it
stackmark gsym verify FILE.gsym BINARY        our lookups against the DWARF
stackmark gsym convert INPUT -o OUT.gsym      from ELF or Mach-O (DWARF + symbols), a
                                              .dSYM bundle, or Breakpad; --arch picks
                                              slices of a universal file
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TextIO

from stackmark.errors import FormatError, StackmarkError

if TYPE_CHECKING:
    from stackmark.formats.gsym.progress import Progress
    from stackmark.formats.gsym.reader import GsymReader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    lookup = sub.add_parser("lookup", help="look addresses up (llvm-gsymutil's text)")
    lookup.add_argument("gsym", nargs="?", help="the GSYM file")
    lookup.add_argument("addresses", nargs="*", metavar="ADDR", help="addresses (0x hex, decimal)")
    lookup.add_argument(
        "--addresses-from-stdin",
        action="store_true",
        help="read 'ADDR GSYMPATH' lines (or 'ADDR' when a GSYM file is given) from stdin",
    )
    lookup.add_argument(
        "--verbose", action="store_true", help="also dump the FunctionInfo of each address"
    )
    lookup.add_argument(
        "--merged-functions",
        action="store_true",
        help=(
            "also the functions merged into the one at each address (identical code "
            "folded by the linker), and the names a call returning there may call, "
            "as llvm-gsymutil 20 and later print them (--verbose is ignored, as there)"
        ),
    )
    lookup.add_argument(
        "--merged-functions-filter",
        action="append",
        metavar="REGEX",
        help=(
            "with --merged-functions: show only the functions whose name matches one "
            "of these (Python) regular expressions; repeatable"
        ),
    )

    dump = sub.add_parser("dump", help="print the whole file (llvm-gsymutil's text)")
    dump.add_argument("gsym")
    dump.add_argument(
        "--llvm19",
        action="store_true",
        help="report merged-function and call-site records as LLVM 19 does (unsupported)",
    )

    verify = sub.add_parser("verify", help="compare every lookup with the binary's DWARF")
    verify.add_argument("gsym")
    verify.add_argument(
        "binary",
        help=(
            "the ELF or Mach-O file (or .dSYM bundle) it was made from; of a universal "
            "file, the slice with the GSYM's UUID"
        ),
    )
    verify.add_argument(
        "--max-errors", type=int, default=20, help="mismatches to print in full (default 20)"
    )

    convert = sub.add_parser(
        "convert", help="make a GSYM from an ELF or Mach-O file, a .dSYM bundle or a Breakpad .sym"
    )
    convert.add_argument(
        "input",
        help="an ELF or Mach-O file (thin or universal), a .dSYM bundle, or a Breakpad .sym",
    )
    convert.add_argument("-o", "--output", help="output path (default: INPUT.gsym)")
    convert.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=0,
        help=(
            "processes for the DWARF units and for encoding the records "
            "(default: one per core on large inputs)"
        ),
    )
    convert.add_argument(
        "--arch",
        action="append",
        default=[],
        metavar="ARCH",
        help=(
            "of a universal (fat) Mach-O file, convert only this slice: an arch name "
            "(arm64, x86_64, armv7) or a CPU type number; repeatable. Without it every "
            "slice is converted. With more than one slice, each goes to OUT.<arch>"
        ),
    )
    convert.add_argument(
        "--quiet",
        action="store_true",
        help=(
            "leave out the warnings llvm-gsymutil --quiet leaves out (addresses outside "
            "the text sections); the summary lines and other warnings are still printed, "
            "as llvm prints them"
        ),
    )
    convert.add_argument(
        "--debug-file-directory",
        action="append",
        default=[],
        metavar="DIR",
        help=(
            "find a dwz supplementary file (.gnu_debugaltlink) as DIR/.build-id/xx/rest.debug "
            "(repeatable; default /usr/lib/debug), after the path the link names"
        ),
    )
    convert.add_argument(
        "--big-endian", action="store_true", help="write a big-endian file (default: the input's)"
    )
    convert.add_argument(
        "--segment-size",
        type=_segment_size,
        metavar="BYTES",
        help=(
            "write segments of about BYTES bytes each, as llvm-gsymutil does, named "
            "OUTPUT-0x<first function address> (no OUTPUT file is written)"
        ),
    )


def run(args: argparse.Namespace) -> int:
    _reconfigure(sys.stdout)
    if args.action == "lookup":
        return _lookup(args)
    if args.action == "dump":
        return _dump(args)
    if args.action == "verify":
        return _verify(args)
    return _convert(args)


def _reconfigure(stream: TextIO) -> None:
    """Strings from files may hold any bytes: write them back unchanged."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="surrogateescape")


def parse_address(text: str) -> int | None:
    """An unsigned integer as LLVM reads one: 0x hex, 0b binary, 0o or leading-0 octal."""
    s = text
    radix = 10
    if s[:2] in ("0x", "0X"):
        radix, s = 16, s[2:]
    elif s[:2] in ("0b", "0B"):
        radix, s = 2, s[2:]
    elif s[:2] == "0o":
        radix, s = 8, s[2:]
    elif len(s) > 1 and s[0] == "0":
        radix, s = 8, s[1:]
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:radix]
    if not s or any(c not in digits for c in s.lower()):
        return None
    value = int(s, radix)
    return value if value < 1 << 64 else None


# -- lookup ---------------------------------------------------------------------


class LookupStyle:
    """How each address is printed: llvm-gsymutil's plain or verbose lookup, or its
    `--merged-functions` lookup, with the function names it keeps (`filters`: None
    keeps all; an expression that does not compile matches nothing, as in LLVM)."""

    def __init__(
        self, verbose: bool, merged: bool = False, filters: list[str] | None = None
    ) -> None:
        import contextlib
        import re

        if filters and not merged:
            raise StackmarkError("--merged-functions-filter requires --merged-functions")
        self.verbose = verbose
        self.merged = merged
        self.filters: list[re.Pattern[str]] | None = None
        if filters:
            self.filters = []
            for text in filters:
                with contextlib.suppress(re.error):
                    self.filters.append(re.compile(text))

    def keeps(self, name: str) -> bool:
        return self.filters is None or any(f.search(name) for f in self.filters)


def _lookup(args: argparse.Namespace) -> int:
    from stackmark.formats.gsym.reader import GsymReader

    out = sys.stdout
    style = LookupStyle(args.verbose, args.merged_functions, args.merged_functions_filter)
    if args.addresses_from_stdin:
        if args.addresses:
            raise StackmarkError("no addresses can be given with --addresses-from-stdin")
        return _lookup_stdin(args.gsym, style, out)
    if not args.gsym:
        raise StackmarkError("give a GSYM file and addresses, or --addresses-from-stdin")
    addresses = []
    for text in args.addresses:
        value = parse_address(text)
        if value is None:
            raise StackmarkError(f"invalid address {text!r} (expected 0x hex or decimal)")
        addresses.append(value)
    reader = GsymReader.open(args.gsym)
    out.write(f'Looking up addresses in "{args.gsym}":\n')
    for addr in addresses:
        out.write(_lookup_text(reader, addr, style))
    return 0


def _lookup_text(reader: object, addr: int, style: LookupStyle) -> str:
    """One address as llvm-gsymutil prints it (with --verbose's FunctionInfo dump)."""
    from stackmark.formats.gsym.codec import RecordError
    from stackmark.formats.gsym.dump import function_text
    from stackmark.formats.gsym.lookup import GsymLookupError, error_text
    from stackmark.formats.gsym.reader import GsymReader

    assert isinstance(reader, GsymReader)
    if style.merged:
        return _merged_lookup_text(reader, addr, style)
    verbose = style.verbose
    head = ""
    try:
        result = reader.lookup(addr)
    except GsymLookupError as exc:
        text = error_text(addr, str(exc))
        if verbose:
            return f"\nLookupResult for 0x{addr:016x}:\n{text}\n"
        return text
    except RecordError as exc:
        text = error_text(addr, exc.llvm_reason)
        return f"\nLookupResult for 0x{addr:016x}:\n{text}\n" if verbose else text
    if verbose:
        index = reader.find_index(addr)
        try:
            info_text = function_text(reader, reader.function_info(index, keep_unknown=False))
            head = (
                f"FunctionInfo for 0x{addr:016x}:\n{info_text}\nLookupResult for 0x{addr:016x}:\n"
            )
        except FormatError:
            head = ""
        return head + result.text() + "\n"
    return result.text()


def _merged_lookup_text(reader: GsymReader, addr: int, style: LookupStyle) -> str:
    """One address as `llvm-gsymutil --merged-functions` prints it: a count, then
    each result indented, a blank line between them. An address with no answer
    prints nothing there; a damaged record is named on stderr, not in the output."""
    from stackmark.formats.gsym.codec import RecordError
    from stackmark.formats.gsym.lookup import GsymLookupError

    try:
        results = reader.lookup_all(addr)
    except GsymLookupError:
        return ""
    except RecordError as exc:
        print(f"stackmark gsym lookup: 0x{addr:x}: {exc}", file=sys.stderr)
        return ""
    last = len(results) - 1
    # LLVM separates a shown result from the next by a blank line unless it is
    # the last before filtering: a filter can leave a blank line at the end.
    shown = [
        "   " + result.text() + ("\n" if i != last else "")
        for i, result in enumerate(results)
        if style.keeps(result.name)
    ]
    noun = "function" if len(shown) == 1 else "functions"
    return f"Found {len(shown)} {noun} at address 0x{addr:016x}:\n" + "".join(shown)


def _lookup_stdin(default_gsym: str | None, style: LookupStyle, out: TextIO) -> int:
    from stackmark.formats.gsym.reader import GsymReader

    current_path: str | None = None
    reader: GsymReader | None = None
    for raw in sys.stdin:
        line = raw.replace("\r", "").replace("\n", "")
        addr_text, _, path = line.partition(" ")
        if not path:
            if default_gsym is None:
                out.write(f"error: invalid address {addr_text}, expected: Address GsymFile.\n")
                return 1
            path = default_gsym
        if path != current_path:
            if reader is not None:
                reader.close()
            try:
                reader = GsymReader.open(path)
            except FormatError as exc:
                print(f"{path}: {exc.reason}", file=sys.stderr)
                return 1
            current_path = path
        addr = parse_address(addr_text)
        if addr is None:
            out.write(f"error: invalid address {addr_text}, expected: Address GsymFile.\n")
            return 1
        assert reader is not None
        out.write(_lookup_text(reader, addr, style))
        out.write("\n")
        out.flush()
    return 0


# -- dump ---------------------------------------------------------------------------


def _dump(args: argparse.Namespace) -> int:
    from stackmark.formats.gsym.dump import dump_lines
    from stackmark.formats.gsym.reader import GsymReader

    reader = GsymReader.open(args.gsym)
    out = sys.stdout
    chunk: list[str] = []
    for piece in dump_lines(reader, llvm19=args.llvm19):
        chunk.append(piece)
        if len(chunk) >= 4096:
            out.write("".join(chunk))
            chunk.clear()
    out.write("".join(chunk))
    return 0


# -- verify -------------------------------------------------------------------------


def _verify(args: argparse.Namespace) -> int:
    from stackmark.dwarf.split_files import SplitDwarfFinder
    from stackmark.dwarf.supplementary import supplementary_finder
    from stackmark.formats.gsym.verify import verify_gsym
    from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES

    report = verify_gsym(
        args.gsym,
        args.binary,
        progress=_progress_printer(),
        # a dwz file: beside the binary, then where GDB looks by default
        load_supplementary=supplementary_finder(DEFAULT_DEBUG_FILE_DIRECTORIES),
        load_split=SplitDwarfFinder(),  # split DWARF: where llvm looks
    )
    out = sys.stdout
    for line in report.details[: args.max_errors]:
        out.write(line + "\n")
    if len(report.details) > args.max_errors:
        out.write(f"... {len(report.details) - args.max_errors} more mismatches not shown\n")
    out.write(report.summary() + "\n")
    return 0 if report.ok else 1


# -- convert ---------------------------------------------------------------------


def _progress_printer() -> Progress:
    """Progress ("label: done/total") on stderr when it is a terminal."""
    from stackmark.formats.gsym.progress import Progress

    return Progress(sys.stderr)


def _arch_filters(texts: list[str]) -> set[str | int]:
    """What `--arch` values match: each as a name, and as a CPU type number when
    it reads as an unsigned 32-bit integer (as llvm-gsymutil reads it)."""
    filters: set[str | int] = set(texts)
    for text in texts:
        number = parse_address(text)
        if number is not None and number < 1 << 32:
            filters.add(number)
    return filters


def _segment_size(text: str) -> int:
    """A size as llvm's to_integer reads it: decimal, 0x hex or 0 octal, above 0."""
    try:
        octal = len(text) > 1 and text.startswith("0") and text.isdigit()
        value = int(text, 8) if octal else int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a valid integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("invalid segment size zero")
    return value


def _convert(args: argparse.Namespace) -> int:
    from stackmark.conversion.files import convert_file
    from stackmark.dwarf.split_files import SplitDwarfFinder
    from stackmark.dwarf.supplementary import supplementary_finder
    from stackmark.process_end import keep_until_exit
    from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES

    output = args.output or args.input + ".gsym"
    if not os.path.exists(args.input):
        raise StackmarkError(f"{args.input}: no such file")
    result = convert_file(
        args.input,
        output,
        log=sys.stdout,
        quiet=args.quiet,
        jobs=args.jobs,
        segment_size=args.segment_size,
        big_endian=True if args.big_endian else None,
        progress=_progress_printer(),
        arch_filters=_arch_filters(args.arch),
        load_supplementary=supplementary_finder(
            args.debug_file_directory or DEFAULT_DEBUG_FILE_DIRECTORIES
        ),
        load_split=SplitDwarfFinder(),  # split DWARF: where llvm looks
    )
    keep_until_exit(result)
    return 0
