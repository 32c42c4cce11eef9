"""How a debugger command is declared once and run in any debugger.

A `Command` names itself by its words under the `stackmark` prefix
(`("bt",)`, `("cbf", "decode")`), declares its arguments on an argparse
parser, and produces lines of text. `run_command` parses the argument
vector the debugger split, runs the command and returns its lines; help
and usage problems come back as lines or as a `DebuggerError`, never as
`SystemExit` or output printed behind the debugger's back. Each debugger
plugin registers every `Command` of `stackmark.debugger.commands.COMMANDS`
with its own mechanism (a `gdb.Command`, an LLDB class command) and
writes the lines through its own output channel.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from stackmark.debugger.backend import DebuggerError

if TYPE_CHECKING:
    from stackmark.debugger.session import Session

PREFIX = "stackmark"


class Completion(enum.Enum):
    """What a debugger should complete for a command's arguments."""

    NONE = "none"
    FILENAME = "filename"
    EXPRESSION = "expression"


class _HelpShown(Exception):
    """argparse asked to exit after printing help."""


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that reports instead of exiting or printing."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.printed: list[str] = []

    def _print_message(self, message: str, file: object = None) -> None:
        if message:
            self.printed.append(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self.printed.append(message)
        raise _HelpShown()

    def error(self, message: str) -> NoReturn:
        raise DebuggerError(f"{message}\n{self.format_usage().rstrip()}")


RunFunction = Callable[["Session", argparse.Namespace], Iterable[str]]


@dataclass(frozen=True)
class Command:
    """One `stackmark ...` command.

    `words` follow the `stackmark` prefix. `configure` adds the arguments
    to the parser; `run` yields output lines (without newlines). `aliases`
    are extra top-level names the command is also registered under (for
    `symbolize`). `run` finds the unsplit argument string in `args.raw`
    and the split one in `args.argv` (commands that take free text, such
    as markup, want it verbatim).
    """

    words: tuple[str, ...]
    summary: str
    description: str
    configure: Callable[[CommandParser], None]
    run: RunFunction
    completion: Completion = Completion.NONE
    aliases: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The full command name as typed: "stackmark cbf decode"."""
        return " ".join((PREFIX, *self.words))

    def parser(self, prog: str | None = None) -> CommandParser:
        parser = CommandParser(
            prog=prog or self.name,
            description=self.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            add_help=True,
        )
        self.configure(parser)
        return parser

    def completions(self, word: str) -> list[str]:
        """Option names and positional choices that start with `word`."""
        words: list[str] = []
        for action in self.parser()._actions:
            if action.option_strings:
                if word.startswith("-"):
                    words.extend(action.option_strings)
            elif action.choices:
                words.extend(str(choice) for choice in action.choices)
        return sorted(w for w in words if w.startswith(word))

    def help_text(self, prog: str | None = None) -> str:
        """The full help: the summary line, then usage, description and options."""
        return f"{self.summary}\n\n{self.parser(prog).format_help()}".rstrip()


@dataclass(frozen=True)
class CommandGroup:
    """A prefix with subcommands of its own (`stackmark cbf`), or the root."""

    words: tuple[str, ...]
    summary: str

    @property
    def name(self) -> str:
        return " ".join((PREFIX, *self.words))


def run_command(
    session: Session,
    command: Command,
    argv: Sequence[str],
    raw: str = "",
    prog: str | None = None,
) -> Iterable[str]:
    """Parse `argv` for `command` and run it; its output lines, or help text."""
    parser = command.parser(prog)
    try:
        args = parser.parse_intermixed_args(list(argv))  # options may follow positionals
    except _HelpShown:  # -h/--help
        return command.help_text(prog).splitlines()
    args.raw = raw
    args.argv = list(argv)
    return command.run(session, args)
