"""`python -m stackmark.symbols`: symbolize plain addresses, like llvm-symbolizer's address mode.

    python -m stackmark.symbols --obj=prog 0x1139 0x1150
    echo 0x1139 | python -m stackmark.symbols --obj=prog --json
    python -m stackmark.symbols --build-id=ab12... --debug-file-directory=/srv/debug 0x40

Output matches llvm-symbolizer-19's default layout (one "function" and one
"file:line:column" line per frame, innermost first, then a blank line) or
its JSON layout (--json). Used by the tests and benchmarks to compare the
library with llvm-symbolizer in the same mode; the user-facing command is
`stackmark symbolize`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from stackmark.errors import StackmarkError
from stackmark.model import Module, SourceFrame
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stackmark.symbols", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--obj", help="the binary the addresses belong to")
    parser.add_argument("--build-id", help="look the module up by build ID instead")
    parser.add_argument(
        "--debug-file-directory",
        action="append",
        default=None,
        metavar="DIR",
        help="a .build-id tree (repeatable; default /usr/lib/debug)",
    )
    parser.add_argument(
        "--symbol-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a directory searched for ELF files by build ID (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="llvm-symbolizer's JSON layout")
    parser.add_argument("--no-demangle", action="store_true", help="print raw names")
    parser.add_argument("--data", action="store_true", help="addresses are data addresses")
    parser.add_argument("addresses", nargs="*", help="addresses (stdin when none are given)")
    return parser


def _frame_name(frame: SourceFrame, demangle: bool) -> str:
    name = frame.function
    if not name:
        return ""
    if demangle:
        from stackmark.demangle import demangle_symbol

        return demangle_symbol(name)
    return name


def _addresses(args: argparse.Namespace) -> Iterable[str]:
    if args.addresses:
        yield from args.addresses
    else:
        for line in sys.stdin:
            if line.strip():
                yield line.strip()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.obj and not args.build_id:
        print("error: give --obj or --build-id", file=sys.stderr)
        return 2
    options = SymbolizerOptions(objects=[args.obj] if args.obj else [])
    if args.debug_file_directory is not None:
        options.debug_file_directories = args.debug_file_directory
    options.symbol_paths = args.symbol_path
    symbolizer = Symbolizer(options)
    build_id = args.build_id or ""
    if args.obj and not build_id:
        from stackmark.elf import ElfFile

        try:
            with ElfFile.open(args.obj) as elf:
                build_id = elf.build_id or ""
        except StackmarkError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    module = Module(0, args.obj or build_id, build_id, path=args.obj)
    demangle = not args.no_demangle
    out = sys.stdout
    for text in _addresses(args):
        try:
            address = int(text, 16) if text.lower().startswith("0x") else int(text, 0)
        except ValueError:
            print(f"error: {text!r} is not an address", file=sys.stderr)
            continue
        if args.data:
            symbol = symbolizer.data(module, address).symbol
            if args.json:
                import json

                data = (
                    {"Name": symbol.name, "Size": hex(symbol.size), "Start": hex(symbol.start)}
                    if symbol
                    else {"Name": "", "Size": "0x0", "Start": "0x0"}
                )
                out.write(json.dumps({"Address": text, "Data": data}) + "\n")
            else:
                out.write(
                    f"{symbol.name}\n{symbol.start} {symbol.size}\n\n" if symbol else "??\n0 0\n\n"
                )
            continue
        frames = symbolizer.code(module, address).frames
        if args.json:
            import json

            records = [
                {
                    "Column": f.column,
                    "FileName": f.file or "",
                    "FunctionName": _frame_name(f, demangle),
                    "Line": f.line,
                }
                for f in frames
            ]
            out.write(json.dumps({"Address": text, "Symbol": records}) + "\n")
            continue
        if not frames:
            out.write("??\n??:0:0\n\n")
            continue
        for frame in frames:
            out.write(f"{_frame_name(frame, demangle) or '??'}\n")
            out.write(f"{frame.file or '??'}:{frame.line}:{frame.column}\n")
        out.write("\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
