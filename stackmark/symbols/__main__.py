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

import sys
from collections.abc import Iterable

from stackmark.errors import StackmarkError
from stackmark.model import Module, SourceFrame
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions

USAGE = """usage: python -m stackmark.symbols (--obj=FILE | --build-id=HEX)
                                 [--debug-file-directory=DIR]... [--symbol-path=DIR]...
                                 [--json] [--no-demangle] [--data] [ADDRESS...]

Addresses are read from stdin when none are given."""

_FLAGS = ("--json", "--no-demangle", "--data")
_VALUED = ("--obj", "--build-id", "--debug-file-directory", "--symbol-path")


class _Args:
    """The parsed command line (argparse is not used: it costs more than a lookup)."""

    def __init__(self) -> None:
        self.obj: str | None = None
        self.build_id: str | None = None
        self.debug_file_directory: list[str] | None = None
        self.symbol_path: list[str] = []
        self.json = False
        self.no_demangle = False
        self.data = False
        self.addresses: list[str] = []


def _parse(argv: list[str]) -> _Args:
    args = _Args()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        if arg in _FLAGS:
            setattr(args, arg[2:].replace("-", "_"), True)
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                if i >= len(argv):
                    raise SystemExit(f"error: {name} needs a value\n{USAGE}")
                value = argv[i]
                i += 1
            key = name[2:].replace("-", "_")
            if key in ("debug_file_directory", "symbol_path"):
                current = getattr(args, key) or []
                setattr(args, key, [*current, value])
            else:
                setattr(args, key, value)
            continue
        if arg.startswith("-") and not arg[1:2].isdigit():
            raise SystemExit(f"error: unknown option {arg}\n{USAGE}")
        args.addresses.append(arg)
    return args


def _frame_name(frame: SourceFrame, demangle: bool) -> str:
    name = frame.function
    if not name:
        return ""
    if demangle:
        from stackmark.demangle import demangle_symbol

        return demangle_symbol(name)
    return name


def _addresses(args: _Args) -> Iterable[str]:
    if args.addresses:
        yield from args.addresses
    else:
        for line in sys.stdin:
            if line.strip():
                yield line.strip()


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
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
