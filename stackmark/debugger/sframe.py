"""`stackmark sframe [info | dump [MODULE...] | lookup ADDRESS]` for the loaded modules.

The tables are found as the unwinder finds them (`stackmark.unwind.tables`):
the `.sframe` section of the module's file, else the PT_GNU_SFRAME segment
in target memory (the vDSO, a deleted file). `dump` prints what `objdump
--sframe` prints for the file; `lookup` takes a runtime address (any
expression of the debugger: `$pc`, a function name) and shows the FDE,
FRE and unwind rules that hold there.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Iterator

from stackmark.debugger.backend import DebuggerError
from stackmark.debugger.command import Command, CommandParser, Completion
from stackmark.debugger.modules import module_for_address
from stackmark.debugger.session import Session
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.sframe import SFrameTable, objdump_text
from stackmark.formats.sframe.memory import read_sframe_from_image
from stackmark.model import Module
from stackmark.unwind.describe import describe_row
from stackmark.unwind.tables import NoTable, SFrameTables

ReadMemory = Callable[[int, int], bytes]

UNREADABLE = "unreadable: "
"""How `sframe_table` starts the reason for a table that is there but damaged."""


_GENERATED: dict[tuple[str, int, int], tuple[SFrameTable | None, str]] = {}
"""(realpath, mtime, size) of a file -> the table generated from its CFI, or why none."""


def generated_table(path: str) -> tuple[SFrameTable | None, str]:
    """An SFrame table generated from the CFI (.eh_frame, .debug_frame) of the file at
    `path`, and where it came from, or why there is none. Generating takes a while
    (about 2 s for libc), so each file's table is kept while the file is unchanged."""
    from stackmark.formats.sframe.from_cfi import generate_from_file

    real = os.path.realpath(path)
    try:
        stat = os.stat(real)
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    key = (real, stat.st_mtime_ns, stat.st_size)
    found = _GENERATED.get(key)
    if found is None:
        try:
            generated = generate_from_file(real)
            table = SFrameTable(generated.section)
            found = table, f"generated from {generated.cfi_source} (v{table.header.version})"
        except StackmarkError as exc:
            found = None, str(exc)
        _GENERATED[key] = found
    return found


def sframe_table(
    module: Module, read_memory: ReadMemory, from_cfi: bool = False
) -> tuple[SFrameTable | None, str]:
    """The module's SFrame table, from its file, else from the PT_GNU_SFRAME segment
    in target memory, else (with `from_cfi`) generated from the file's CFI; and where
    it came from, or why there is none."""
    table, source = _sframe_table(module, read_memory)
    if table is None and from_cfi and module.path and os.path.isfile(module.path):
        generated, how = generated_table(module.path)
        return (generated, how) if generated is not None else (None, f"{source}; {how}")
    return table, source


def _sframe_table(module: Module, read_memory: ReadMemory) -> tuple[SFrameTable | None, str]:
    try:
        found = SFrameTables()(module)  # the file, checked against the build ID
    except StackmarkError as exc:
        return None, f"{UNREADABLE}{exc}"
    if isinstance(found, SFrameTable):
        return found, f"sframe v{found.header.version}"
    reason = found.reason if isinstance(found, NoTable) else "no table"
    if module.segments and (not module.path or not os.path.isfile(module.path)):
        try:
            loaded = read_sframe_from_image(read_memory, module.segments[0].start)
        except FormatError as exc:
            return None, f"{reason}; in memory: {UNREADABLE}{exc}"
        if loaded is not None and loaded.load_bias == module.load_bias:
            return loaded.table, f"sframe v{loaded.table.header.version} (from memory)"
        reason += "; no PT_GNU_SFRAME in memory"
    return None, reason


def _tables(session: Session, modules: list[Module]) -> list[tuple[Module, SFrameTable | str]]:
    """Each module with its SFrame table, or why it has none."""
    result: list[tuple[Module, SFrameTable | str]] = []
    for module in modules:
        table, source = sframe_table(module, session.backend.read_memory)
        result.append((module, table if table is not None else source))
    return result


def _info(session: Session) -> Iterator[str]:
    tables = _tables(session, session.modules())
    width = max((len(m.name) for m, _ in tables), default=0)
    for module, table in tables:
        if isinstance(table, str):
            yield f"{module.name:<{width}}  no SFrame: {table}"
            continue
        section = table.section
        address = section.address + module.load_bias
        try:
            rows = section.num_fres  # decodes every function's FREs
        except StackmarkError as exc:
            yield f"{module.name:<{width}}  SFrame v{section.version} at 0x{address:x}: {exc}"
            continue
        yield (
            f"{module.name:<{width}}  SFrame v{section.version} at 0x{address:x}: "
            f"{len(section.fdes)} functions, {rows} rows, "
            f"{'sorted' if table.binary_search else 'unsorted'}, {section.arch.value}"
        )


def _matches(module: Module, name: str) -> bool:
    return name in (module.name, module.path) or (module.path or "").endswith("/" + name)


def _dump(session: Session, names: list[str]) -> Iterator[str]:
    modules = session.modules()
    if names:
        unknown = [n for n in names if not any(_matches(m, n) for m in modules)]
        if unknown:
            loaded = ", ".join(m.name for m in modules)
            raise DebuggerError(f"no loaded module named {', '.join(unknown)} (loaded: {loaded})")
        modules = [m for m in modules if any(_matches(m, n) for n in names)]
    shown = 0
    for module, table in _tables(session, modules):
        if isinstance(table, str):
            if names:
                yield f"{module.name}: no SFrame: {table}"
            continue
        shown += 1
        try:
            text = objdump_text(table.section, module.path or module.name)
        except StackmarkError as exc:  # FREs are decoded as they are dumped
            yield f"{module.name}: SFrame {UNREADABLE}{exc}"
            continue
        yield from text.splitlines()
    if not shown and not names:
        yield "no loaded module has SFrame data"


def _lookup(session: Session, expression: str, as_return_address: bool) -> Iterator[str]:
    address = session.backend.address_of(expression)
    modules = session.modules()
    module = module_for_address(modules, address)
    if module is None:
        raise DebuggerError(f"0x{address:x} is not in any loaded module")
    lookup = address - 1 if as_return_address else address
    relative = next(s for s in module.segments if s.contains(address)).to_module_relative(lookup)
    ((_, table),) = _tables(session, [module])
    where = f"0x{address:x} = {module.name}+0x{relative:x}"
    if as_return_address:
        where += " (looked up as a return address: -1)"
    if isinstance(table, str):
        yield f"{where}: no SFrame: {table}"
        return
    try:
        match = table.find(relative)
    except StackmarkError as exc:  # the function's FREs are decoded now
        yield f"{where}: SFrame {UNREADABLE}{exc}"
        return
    if match is None:
        yield f"{where}: no SFrame row covers this address"
        return
    fde = match.fde
    fre_text = "no FREs" if match.fre is None else f"FRE at +0x{match.fre.start:x}"
    yield (
        f"{where}: FDE {fde.index} [0x{fde.start:x}, 0x{fde.end:x}), {fre_text}, "
        f"row [0x{match.row.start:x}, 0x{match.row.end:x})"
    )
    yield f"  {describe_row(match.row, table.header.arch)}"


def _configure(parser: CommandParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=("info", "dump", "lookup"),
        default="info",
        help="info: the SFrame table of each loaded module (the default); dump [MODULE...]: "
        "the tables as objdump --sframe prints them; lookup ADDRESS: the rules at an address",
    )
    parser.add_argument(
        "arguments",
        nargs="*",
        metavar="MODULE|ADDRESS",
        help="modules to dump (name or path; default: all with SFrame), or the address to "
        "look up (an expression: $pc, a function name, 0x...)",
    )
    parser.add_argument(
        "--return-address",
        action="store_true",
        help="with lookup: the address is a return address; look up the instruction before it",
    )


def _run(session: Session, args: argparse.Namespace) -> Iterable[str]:
    session.require_process()
    if args.action == "info":
        if args.arguments:
            raise DebuggerError("info takes no arguments")
        return _info(session)
    if args.action == "dump":
        return _dump(session, args.arguments)
    if len(args.arguments) != 1:
        raise DebuggerError("lookup takes one ADDRESS (quote an expression with spaces)")
    return _lookup(session, args.arguments[0], args.return_address)


SFRAME = Command(
    words=("sframe",),
    summary="Show the SFrame tables of the loaded modules.",
    description=(
        "SFrame (.sframe, versions 1-3) is the stack-trace table stackmark unwinds with\n"
        "(GDB: 'stackmark unwinder'; LLDB: 'stackmark sframe-bt'). Tables come from the\n"
        "modules' files, else from target memory."
    ),
    configure=_configure,
    run=_run,
    completion=Completion.EXPRESSION,
)
