"""The `stackmark` commands every debugger plugin registers.

Each entry of `COMMANDS` is a `Command` (see `command.py`): its words
under the `stackmark` prefix, its arguments, and a function from a
`Session` and the parsed arguments to output lines. `GROUPS` lists the
prefixes (`stackmark` itself, `stackmark cbf`) a debugger must create
before the commands under them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from stackmark.debugger import backtrace
from stackmark.debugger.command import Command, CommandGroup, CommandParser
from stackmark.debugger.session import Session

ROOT = CommandGroup((), "stackmark: symbolizer markup, SFrame and CBF in the debugger.")

# -- stackmark bt ------------------------------------------------------------------


def _configure_bt(parser: CommandParser) -> None:
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument(
        "--markup",
        dest="format",
        action="store_const",
        const="markup",
        help="symbolizer markup: {{{reset}}}, {{{module}}}, {{{mmap}}}, {{{bt}}} (the default)",
    )
    formats.add_argument(
        "--cbf",
        dest="format",
        action="store_const",
        const="cbf",
        help="Compact Backtrace Format: a 'cbf: BASE64' line, an 'images: BASE64' line "
        "(Compact Image Map), then the decoded frames",
    )
    formats.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="modules, threads and frames as JSON",
    )
    parser.set_defaults(format="markup")
    parser.add_argument(
        "-a", "--all-threads", action="store_true", help="every thread, not only the selected one"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="also the frames the debugger hides by default: those past main "
        "(the C library's start-up code, _start)",
    )


def _run_bt(session: Session, args: argparse.Namespace) -> Iterable[str]:
    session.require_process()
    snapshot = backtrace.collect(
        session.backend,
        all_threads=args.all_threads,
        past_main=args.full,
        symbols=args.format == "json",
    )
    if args.format == "json":
        return backtrace.json_lines(snapshot)
    if args.format == "cbf":
        return backtrace.cbf_lines(snapshot)
    return backtrace.markup_lines(snapshot)


BT = Command(
    words=("bt",),
    summary="Print the backtrace as symbolizer markup, CBF or JSON.",
    description=(
        "One entry per physical frame: inlined calls are folded into the frame they were\n"
        "inlined into; frame 0 and frames interrupted by a signal are ':pc', the others\n"
        "':ra' (return addresses). The markup symbolizes with 'stackmark symbolize' or\n"
        "'llvm-symbolizer --filter-markup', here or on another machine."
    ),
    configure=_configure_bt,
    run=_run_bt,
)

GROUPS: list[CommandGroup] = [ROOT]
COMMANDS: list[Command] = [BT]
