"""`stackmark sframe`: dump, look up and generate SFrame stack-trace tables.

stackmark sframe dump BINARY [--style 2.40|2.44|2.47]
stackmark sframe lookup BINARY PC [PC ...]
stackmark sframe generate BINARY -o OUT [--raw] [--sframe-version 1|2|3]
"""

from __future__ import annotations

import argparse
import os
import sys

from stackmark.errors import StackmarkError
from stackmark.unwind.describe import describe_row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    dump = sub.add_parser("dump", help="print the section as objdump --sframe does")
    dump.add_argument("binary", help="ELF file with an .sframe section")
    dump.add_argument(
        "--style",
        choices=("2.40", "2.44", "2.47"),
        help="the binutils release to imitate (default: the one that emits the "
        "section's version: v1 2.40, v2 2.44, v3 2.47; s390x 2.47)",
    )

    lookup = sub.add_parser("lookup", help="the unwind rules that hold at a PC")
    lookup.add_argument("binary", help="ELF file with an .sframe section")
    lookup.add_argument(
        "pcs", nargs="+", metavar="PC", type=_address, help="address (hex with 0x, or decimal)"
    )

    generate = sub.add_parser(
        "generate", help="build SFrame from the binary's DWARF CFI (.eh_frame/.debug_frame)"
    )
    generate.add_argument("binary", help="ELF file (x86-64 or AArch64) with call-frame info")
    generate.add_argument("-o", "--output", required=True, help="where to write the result")
    generate.add_argument(
        "--raw", action="store_true", help="write the bare section bytes, not an ELF copy"
    )
    generate.add_argument(
        "--sframe-version",
        type=int,
        choices=(1, 2, 3),
        default=3,
        help="SFrame version to write (default 3; v3 alone can express DRAP prologues)",
    )
    generate.add_argument(
        "--address",
        type=_address,
        default=0,
        help="with --raw: the address the section will be linked at (default 0)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "dump":
        return _dump(args)
    if args.action == "lookup":
        return _lookup(args)
    return _generate(args)


def _dump(args: argparse.Namespace) -> int:
    from stackmark.formats.sframe.dump import objdump_text
    from stackmark.formats.sframe.reader import read_sframe_file

    section = read_sframe_file(args.binary)
    sys.stdout.write(objdump_text(section, args.binary, style=args.style))
    return 0


def _lookup(args: argparse.Namespace) -> int:
    from stackmark.elf import STT_FUNC, ElfFile
    from stackmark.formats.sframe.lookup import SFrameTable

    pcs: list[int] = args.pcs
    table = SFrameTable.from_elf(args.binary)
    with ElfFile.open(args.binary) as elf:
        functions = sorted(
            (s.value, s.size, s.name) for s in elf.symbols() if s.type == STT_FUNC and s.is_defined
        )
    arch = table.header.arch
    missing = 0
    for pc in pcs:
        match = table.find(pc)
        if match is None:
            print(f"0x{pc:x}: no SFrame row covers this address")
            missing += 1
            continue
        fde = match.fde
        name = _symbol_at(functions, fde.start)
        where = f" {name}" if name else ""
        fre_text = "no FREs" if match.fre is None else f"FRE at +0x{match.fre.start:x}"
        print(
            f"0x{pc:x}: FDE {fde.index}{where} [0x{fde.start:x}, 0x{fde.end:x}), {fre_text}, "
            f"row [0x{match.row.start:x}, 0x{match.row.end:x})"
        )
        print(f"  {describe_row(match.row, arch)}")
    return 1 if missing else 0


def _generate(args: argparse.Namespace) -> int:
    from stackmark.formats.sframe.embed import SECTION_ADDRESS, add_sframe_section
    from stackmark.formats.sframe.from_cfi import generate_from_file
    from stackmark.formats.sframe.writer import encode_sframe

    address = args.address if args.raw else SECTION_ADDRESS
    result = generate_from_file(args.binary, version=args.sframe_version, address=address)
    data = encode_sframe(result.section)
    if args.raw:
        try:
            with open(args.output, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise StackmarkError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    else:
        if os.path.abspath(args.output) == os.path.abspath(args.binary):
            raise StackmarkError("the output must not be the input file")
        add_sframe_section(args.binary, data, args.output)
    section = result.section
    print(
        f"{args.output}: SFrame v{section.version} from {result.cfi_source}: "
        f"{len(section.fdes)} functions, {section.num_fres} rows, {len(data)} bytes"
    )
    if result.skipped:
        print(f"{len(result.skipped)} function(s) could not be expressed in SFrame:")
        for skipped in result.skipped:
            print(f"  {skipped.describe()}")
    return 0


def _symbol_at(functions: list[tuple[int, int, str]], address: int) -> str | None:
    for value, _size, name in functions:
        if value == address:
            return name
    return None


def _address(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an address: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not an address: {text!r}")
    return value
