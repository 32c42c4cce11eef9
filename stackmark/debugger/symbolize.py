"""`symbolize [FILE... | TEXT]`: `stackmark symbolize` inside the debugger.

The same filter, options and output as the command line (the same code:
the options of `stackmark.symbolize_options`, the filter of
`stackmark.markup.stream`), with one more place to find symbols:
every file the debugger has loaded, matched by build ID. Markup recorded
in another run of the same binaries (ASLR, another machine) carries its
own module and mmap lines, so its addresses are rebased onto the loaded
files by build ID, not compared with this process's addresses.

Markup with no module context of its own (`{{{bt:0:0x...}}}` typed by
hand) is taken to be about the process being debugged: the process's
modules are put before it.

Arguments that all name existing files are read as logs; anything else is
markup text: taken verbatim as typed, or, after options, as the remaining
words joined by spaces.
"""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Iterable

from stackmark.debugger.backend import DebuggerError
from stackmark.debugger.command import Command, CommandParser, Completion
from stackmark.debugger.session import Session
from stackmark.markup.stream import filter_streams
from stackmark.symbolize_options import add_arguments, filter_settings_from, naming_from
from stackmark.unwind.emit import context_lines


def _configure(parser: CommandParser) -> None:
    add_arguments(parser, files_metavar="FILE|TEXT", files_help="log files to read, or markup text")
    parser.description = (
        "Symbolize markup ({{{module}}}, {{{mmap}}}, {{{bt}}}, {{{pc}}}, ...) from log files or\n"
        "typed as the argument, with the symbol files the debugger has loaded (matched by\n"
        "build ID: addresses from another run are rebased) and those 'stackmark symbolize'\n"
        "finds. Prints what 'stackmark symbolize' prints."
    )


def symbolize_lines(
    session: Session, text: Iterable[str], args: argparse.Namespace | None = None
) -> list[str]:
    """Symbolize markup lines as `stackmark symbolize` would, with the debugger's files."""
    options = args if args is not None else SYMBOLIZE.parser().parse_args([])
    data = "".join(line + "\n" for line in text).encode("utf-8", "surrogateescape")
    return _run(session, options, [("<text>", io.BytesIO(data))])


def _with_context(session: Session, data: bytes) -> bytes:
    """Markup without module context of its own is about this process: give it ours."""
    if b"{{{module:" in data or b"{{{reset" in data or not session.backend.has_process():
        return data
    context = "".join(line + "\n" for line in context_lines(session.modules()))
    return context.encode() + data


def _run(
    session: Session, args: argparse.Namespace, inputs: list[tuple[str, io.BufferedIOBase]]
) -> list[str]:
    inputs = [(name, io.BytesIO(_with_context(session, stream.read()))) for name, stream in inputs]
    symbolizer = session.symbolizer(args.debug_file_directory, args.obj, args.symbol_path)
    out = io.BytesIO()
    filter_streams(
        inputs,  # type: ignore[arg-type]
        out,
        session.warn,
        filter_settings_from(args),
        symbolizer,
        naming_from(args),
    )
    return out.getvalue().decode("utf-8", "surrogateescape").splitlines()


def _run_command(session: Session, args: argparse.Namespace) -> Iterable[str]:
    if args.compat is not None and args.output_style == "json":
        raise DebuggerError("--output-style=json has no llvm 19 equivalent; drop --compat=llvm19")
    names: list[str] = args.files
    if not names:
        raise DebuggerError("give log files to read, or markup text")
    if all(os.path.isfile(name) for name in names):
        inputs = []
        try:
            for name in names:
                with open(name, "rb") as stream:
                    inputs.append((name, io.BytesIO(stream.read())))
        except OSError as exc:
            raise DebuggerError(f"{exc.filename}: cannot read: {exc.strerror or exc}") from None
        return _run(session, args, inputs)  # type: ignore[arg-type]
    if not any("{{{" in name for name in names):
        missing = next(name for name in names if not os.path.isfile(name))
        raise DebuggerError(f"{missing}: no such file (and no markup to symbolize)")
    typed_plainly = not any(word.startswith("-") for word in args.argv)
    text = args.raw.strip() if typed_plainly else " ".join(names)  # verbatim when we can
    return symbolize_lines(session, [text], args)


SYMBOLIZE = Command(
    words=("symbolize",),
    summary="Symbolize markup from log files or text, with the files the debugger loaded.",
    description="",
    configure=_configure,
    run=_run_command,
    completion=Completion.FILENAME,
    aliases=("symbolize",),
)
