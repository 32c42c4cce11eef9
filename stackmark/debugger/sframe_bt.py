"""`stackmark sframe-bt`: the backtrace as stackmark's SFrame unwinder computes it.

A debugger whose own unwinder cannot be extended (LLDB 19 has no Python
hook into it) still answers the raw questions: the registers of a
thread's innermost frame, memory, the loaded images.
`stackmark.debugger.target.BackendTarget` makes those a `Target`, and
the core `Unwinder` walks the stack with the modules' SFrame tables (from
their files, else from target memory), falling back to the frame-pointer
chain where no table covers a pc, and through signal frames by the
kernel's layout.

The frames are shown as `stackmark bt` shows the debugger's own:
symbolized (the default), as markup (`--markup`, the same lines `stackmark
bt --markup` prints) or as CBF (`--cbf`). Like `stackmark bt`, the
frames past the program's `main` are left out unless `--full`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from stackmark.debugger.backend import DebuggerError, ThreadInfo
from stackmark.debugger.bt import Snapshot, ThreadBacktrace, cbf_lines, thread_title
from stackmark.debugger.command import Command, CommandParser
from stackmark.debugger.frames import PhysicalFrame
from stackmark.debugger.modules import module_for_address
from stackmark.debugger.session import Session
from stackmark.debugger.sframe import sframe_table
from stackmark.debugger.symbolize import symbolize_lines
from stackmark.debugger.target import BackendTarget
from stackmark.elf import STT_FUNC, ElfFile
from stackmark.errors import FormatError
from stackmark.formats.sframe import SFrameTable
from stackmark.model import BacktraceFrame, Module
from stackmark.unwind.emit import context_lines, frame_lines
from stackmark.unwind.tables import NoTable, TableCache
from stackmark.unwind.unwinder import DEFAULT_MAX_FRAMES, Unwinder, UnwindResult
from stackmark.unwind_rules import Arch

FROM_CFI_HINT = "{name} has no SFrame table: --from-cfi generates one from its .eh_frame"


def main_range(modules: Sequence[Module]) -> tuple[int, int] | None:
    """Runtime [start, end) of the program's `main`, from its symbol table."""
    program = modules[0] if modules else None
    if program is None or not program.path:
        return None
    try:
        with ElfFile.open(program.path) as elf:
            symbols = elf.symbols()
    except (FormatError, OSError):
        return None
    for symbol in symbols:
        if symbol.name == "main" and symbol.type == STT_FUNC and symbol.is_defined:
            start = program.load_bias + symbol.value
            return start, start + max(symbol.size, 1)
    return None


def up_to_main(frames: list[BacktraceFrame], main: tuple[int, int] | None) -> list[BacktraceFrame]:
    """The frames up to and including the one in `main` (all of them if none is)."""
    if main is None:
        return frames
    for index, frame in enumerate(frames):
        if main[0] <= frame.lookup_address < main[1]:
            return frames[: index + 1]
    return frames


def _table(
    module: Module, read_memory: Callable[[int, int], bytes], from_cfi: bool
) -> SFrameTable | NoTable:
    """The table `stackmark sframe info` shows for the module (or, with `from_cfi`, one
    generated from its CFI when it has none), or why there is none."""
    table, source = sframe_table(module, read_memory, from_cfi)
    return table if table is not None else NoTable(source)


@dataclass(frozen=True)
class UnwoundThread:
    thread: ThreadInfo
    frames: list[BacktraceFrame]
    stop_reason: str


def unwind_threads(
    session: Session,
    *,
    all_threads: bool,
    full: bool,
    max_frames: int = DEFAULT_MAX_FRAMES,
    from_cfi: bool = False,
) -> tuple[Arch, list[Module], list[UnwoundThread]]:
    """The modules, and the selected (or every) thread unwound by the SFrame unwinder
    (with `from_cfi`, modules without .sframe get a table generated from their CFI)."""
    backend = session.backend
    modules = session.modules()
    threads = backend.threads()
    if not all_threads:
        threads = [t for t in threads if t.selected] or threads[:1]
    tables = TableCache(lambda module: _table(module, backend.read_memory, from_cfi))
    main = None if full else main_range(modules)
    unwound = []
    for thread in threads:
        target = BackendTarget(backend, thread, modules)
        result: UnwindResult = Unwinder(target, tables, max_frames=max_frames).unwind()
        frames = up_to_main(result.backtrace, main)
        reason = result.stop_reason
        if len(frames) < len(result.frames):
            reason = "at main (--full shows the frames past it)"
        elif result.truncated:
            frames = result.backtrace_with_markers  # cut at --max-frames: say so in the data
        elif not from_cfi and frames:
            last = module_for_address(modules, frames[-1].lookup_address)
            if last is not None and isinstance(tables.table_for(last), NoTable):
                reason += "; " + FROM_CFI_HINT.format(name=last.name)
        unwound.append(UnwoundThread(thread, frames, reason))
    return backend.arch(), modules, unwound


def markup_lines(
    modules: list[Module], threads: list[UnwoundThread], *, notes: bool, stop_reason: bool
) -> Iterator[str]:
    """Markup as `stackmark bt --markup` writes it; with `notes`, how each frame was
    found, with `stop_reason` a plain-text line saying why unwinding stopped."""
    yield from context_lines(modules)
    for unwound in threads:
        if len(threads) > 1:
            yield thread_title(unwound.thread)
        yield from frame_lines(unwound.frames, notes=notes)
        if stop_reason:
            yield f"(unwinding stopped: {unwound.stop_reason})"


def _configure(parser: CommandParser) -> None:
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument(
        "--markup",
        dest="format",
        action="store_const",
        const="markup",
        help="symbolizer markup, as 'stackmark bt --markup' prints it",
    )
    formats.add_argument(
        "--cbf",
        dest="format",
        action="store_const",
        const="cbf",
        help="Compact Backtrace Format: 'cbf: BASE64', 'images: BASE64', then the decoded frames",
    )
    parser.set_defaults(format="symbolized")
    parser.add_argument(
        "-a", "--all-threads", action="store_true", help="every thread, not only the selected one"
    )
    parser.add_argument(
        "--full", action="store_true", help="also the frames past main (the C library's start-up)"
    )
    parser.add_argument(
        "--from-cfi",
        action="store_true",
        help="give modules without .sframe (such as the C library) a table generated from "
        "their CFI (.eh_frame), so the walk goes on through them (about 2 s for libc, "
        "the first time)",
    )
    parser.add_argument(
        "--notes",
        action="store_true",
        help="say after each frame how it was found (SFrame, frame pointer, signal frame) "
        "and why unwinding stopped",
    )
    parser.add_argument(
        "--max-frames",
        type=int,
        default=DEFAULT_MAX_FRAMES,
        metavar="N",
        help=f"stop after N frames (default {DEFAULT_MAX_FRAMES})",
    )


def _run(session: Session, args: argparse.Namespace) -> Iterable[str]:
    session.require_process()
    if args.max_frames < 1:
        raise DebuggerError("--max-frames must be at least 1")
    arch, modules, threads = unwind_threads(
        session,
        all_threads=args.all_threads,
        full=args.full,
        max_frames=args.max_frames,
        from_cfi=args.from_cfi,
    )
    if args.format == "cbf":
        snapshot = Snapshot(
            arch,
            modules,
            [
                ThreadBacktrace(t.thread, [PhysicalFrame(i, f) for i, f in enumerate(t.frames)])
                for t in threads
            ],
        )
        return cbf_lines(snapshot, session)
    if args.format == "markup":
        return markup_lines(modules, threads, notes=args.notes, stop_reason=args.notes)
    return symbolize_lines(
        session, markup_lines(modules, threads, notes=args.notes, stop_reason=True)
    )


SFRAME_BT = Command(
    words=("sframe-bt",),
    summary="Print the backtrace as stackmark's SFrame unwinder computes it.",
    description=(
        "Unwinds the stack from the innermost frame's registers with the modules' SFrame\n"
        "tables (.sframe in their files, else PT_GNU_SFRAME in memory), the frame-pointer\n"
        "chain where no table covers a pc, and the kernel's signal frames: a backtrace\n"
        "that does not depend on the debugger's unwinder (nor on .eh_frame). Frame 0 and\n"
        "frames a signal interrupted are ':pc', the others ':ra'."
    ),
    configure=_configure,
    run=_run,
)
