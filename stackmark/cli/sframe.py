"""`stackmark sframe`: dump, look up and generate SFrame stack-trace tables.

stackmark sframe dump BINARY [--section NAME] [--style 2.40|2.44|2.47] [--like readelf]
stackmark sframe lookup BINARY PC [PC ...] [--section NAME]
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
        help="the binutils release to imitate byte for byte (default: one that can show "
        "the section: the release that writes its version, v1 2.40, v2 2.44, v3 2.47; "
        "2.47 for s390x and for v2 with FUNC_START_PCREL)",
    )
    dump.add_argument(
        "--like",
        choices=("objdump", "readelf"),
        default="objdump",
        help="print what 'objdump --sframe' (default) or 'readelf --sframe' prints",
    )
    _section_argument(dump)

    lookup = sub.add_parser("lookup", help="the unwind rules that hold at a PC")
    lookup.add_argument("binary", help="ELF file with an .sframe section")
    lookup.add_argument(
        "pcs", nargs="+", metavar="PC", type=_address, help="address (hex with 0x, or decimal)"
    )
    _section_argument(lookup)

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


def _section_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--section",
        default=".sframe",
        metavar="NAME",
        help="the SFrame section to read (default .sframe), as objdump --sframe=NAME",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "dump":
        return _dump(args)
    if args.action == "lookup":
        return _lookup(args)
    return _generate(args)


def _dump(args: argparse.Namespace) -> int:
    from stackmark.elf import ElfFile
    from stackmark.formats.sframe import dump
    from stackmark.formats.sframe.reader import EmptySFrameSection, read_sframe_file
    from stackmark.formats.sframe.spec import abi_for_elf

    try:
        section = read_sframe_file(args.binary, name=args.section)
    except EmptySFrameSection:
        # binutils 2.47 (the release with ld --discard-sframe): readelf says the
        # section has no data; objdump prints the file line and complains on stderr
        if args.like == "readelf":
            sys.stdout.write(dump.readelf_empty_section_text(args.section))
            return 0
        with ElfFile.open(args.binary) as elf:
            abi = abi_for_elf(elf.machine, elf.endian)
        if abi is None:
            raise
        sys.stdout.write(dump.empty_section_text(args.binary, abi))
        print(f"stackmark sframe: {args.section}: {dump.EMPTY_SECTION_ERROR}", file=sys.stderr)
        return 0
    if args.like == "readelf":
        text = dump.readelf_text(section, style=args.style, section_name=args.section)
    else:
        text = dump.objdump_text(section, args.binary, style=args.style, section_name=args.section)
    sys.stdout.write(text)
    return 0


def _lookup(args: argparse.Namespace) -> int:
    from stackmark.elf import STT_FUNC, ElfFile
    from stackmark.formats.sframe.lookup import SFrameTable
    from stackmark.formats.sframe.reader import EmptySFrameSection

    pcs: list[int] = args.pcs
    try:
        table: SFrameTable | None = SFrameTable.from_elf(args.binary, name=args.section)
    except EmptySFrameSection:
        table = None  # no functions: no PC is covered
    with ElfFile.open(args.binary) as elf:
        functions = sorted(
            (s.value, s.size, s.name) for s in elf.symbols() if s.type == STT_FUNC and s.is_defined
        )
    missing = 0
    for pc in pcs:
        match = None if table is None else table.find(pc)
        if table is None or match is None:
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
        print(f"  {describe_row(match.row, table.header.arch)}")
    return 1 if missing else 0


def _generate(args: argparse.Namespace) -> int:
    from stackmark.formats.sframe.embed import SECTION_ADDRESS, add_sframe_section
    from stackmark.formats.sframe.from_cfi import generate_from_file
    from stackmark.formats.sframe.writer import encode_sframe
    from stackmark.whole_files import write_whole

    address = args.address if args.raw else SECTION_ADDRESS
    result = generate_from_file(args.binary, version=args.sframe_version, address=address)
    data = encode_sframe(result.section)
    if args.raw:
        try:
            write_whole(args.output, data)
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
