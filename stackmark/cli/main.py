"""`stackmark` command line: dispatch to one module per subcommand.

Subcommand modules are imported only when run, so that `stackmark
symbolize` starts fast. Each module defines `add_arguments(parser)` and
`run(args) -> int`; a module may also define `parse_quick(argv)`, which
returns the arguments argparse would give for a common command line, or
None (then argparse parses it, and prints help and errors): argparse and
what it imports cost more start-up time than a short log takes to symbolize.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from stackmark import __version__
from stackmark.errors import StackmarkError
from stackmark.process_end import anything_kept, end_without_freeing

if TYPE_CHECKING:
    import argparse

# name -> (module, one-line help). Keep in the order `--help` shows them.
COMMANDS: dict[str, tuple[str, str]] = {
    "symbolize": ("stackmark.cli.symbolize", "symbolize a log that carries symbolizer markup"),
    "gsym": ("stackmark.cli.gsym", "look up, dump, verify and make GSYM files"),
    "cache": ("stackmark.cli.cache", "show, prune or clear the download and GSYM caches"),
    "cbf": ("stackmark.cli.cbf", "encode or decode Compact Backtrace Format (Swift) backtraces"),
    "unwind": ("stackmark.cli.unwind", "print the backtrace of a core file as markup, CBF or JSON"),
    "gdb-init": ("stackmark.cli.debuggers", "print (or --install) the ~/.gdbinit line for GDB"),
    "lldb-init": ("stackmark.cli.debuggers", "print (or --install) the ~/.lldbinit line for LLDB"),
    "sframe": ("stackmark.cli.sframe", "dump, look up or generate SFrame stack-trace tables"),
    "lsp": ("stackmark.cli.lsp", "run the language server for logs with markup (editors start it)"),
    "serve": ("stackmark.cli.serve", "run the symbolication service (HTTP; Symbolication API v5)"),
}


def _top_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="stackmark",
        description="Turn raw crash addresses back into functions, files and lines.",
        epilog="Run 'stackmark COMMAND --help' for the options of a command.",
    )
    from stackmark._native import implementation

    parser.add_argument(
        "--version", action="version", version=f"stackmark {__version__} ({implementation()})"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def command_parser(name: str, module: object) -> argparse.ArgumentParser:
    """The argparse parser of subcommand `name` (its module's `add_arguments`)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"stackmark {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)  # type: ignore[attr-defined]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] not in COMMANDS:
        parser = _top_parser()
        if not args_list:
            parser.print_help()
            return 2
        parser.parse_args(args_list)  # prints help/version or a usage error
        return 2
    name = args_list[0]
    module = importlib.import_module(COMMANDS[name][0])
    parse_quick = getattr(module, "parse_quick", None)
    args = parse_quick(args_list[1:]) if parse_quick is not None else None
    if args is None:
        args = command_parser(name, module).parse_args(args_list[1:])
    try:
        return int(module.run(args))
    except StackmarkError as exc:
        print(f"stackmark {name}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error worth a traceback.
        sys.stderr.close()
        return 141


def _nothing_left_to_finish() -> bool:
    """True when the interpreter's shutdown would only free memory: no exit handler
    is registered (logging, multiprocessing, concurrent.futures' process pools
    register one) and no other thread runs. Then `entry` ends the process at once:
    tearing down the modules of a one-frame `stackmark symbolize` was 9% of it."""
    threading = sys.modules.get("threading")
    return atexit._ncallbacks() == 0 and (threading is None or threading.active_count() == 1)


def entry() -> NoReturn:
    """The `stackmark` program: `main`; then, when a command kept a large heap
    (`stackmark.process_end.keep_until_exit`) or nothing is left to finish
    (`_nothing_left_to_finish`), the end of the process without freeing it object
    by object (the operating system takes it back at once), exit handlers run and
    the standard streams flushed first. Not under a profiler or tracer (cProfile,
    coverage): they write their results at exit."""
    ending_quickly = sys.getprofile() is None and sys.gettrace() is None
    end_without_freeing(ending_quickly)
    status = main()
    if not anything_kept() and not (ending_quickly and _nothing_left_to_finish()):
        sys.exit(status)
    atexit._run_exitfuncs()  # with a kept heap, exit handlers may be registered
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except ValueError:  # closed (a reader that went away, see `main`)
            pass
        except OSError:  # e.g. a full disk: the normal shutdown reports it
            sys.exit(status)
    os._exit(status)


if __name__ == "__main__":
    entry()
