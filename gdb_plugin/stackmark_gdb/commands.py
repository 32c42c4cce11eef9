"""Register stackmark's commands as GDB commands.

Every `stackmark.debugger.command.Command` becomes a `gdb.Command` named
`stackmark <words>` (plus its top-level aliases); every `CommandGroup` a
prefix command that lists its subcommands. Help text is the command's
argparse help, so `help stackmark bt` and `stackmark bt --help` agree.
Output goes through `gdb.write`; every error becomes a `gdb.GdbError`, so
GDB prints one message and no Python traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import gdb

from stackmark.debugger.command import Command, CommandGroup, Completion, run_command
from stackmark.debugger.session import Session
from stackmark.errors import StackmarkError

_GDB_COMPLETION = {
    Completion.NONE: gdb.COMPLETE_NONE,
    Completion.FILENAME: gdb.COMPLETE_FILENAME,
    Completion.EXPRESSION: gdb.COMPLETE_EXPRESSION,
}


def write_lines(lines: Iterable[str]) -> None:
    for line in lines:
        gdb.write(line + "\n")


def gdb_error(exc: BaseException) -> gdb.GdbError:
    """The GdbError to raise for `exc`: its message, never a traceback."""
    if isinstance(exc, gdb.GdbError):
        return exc
    if isinstance(exc, StackmarkError | gdb.error | gdb.MemoryError):
        return gdb.GdbError(str(exc))
    if isinstance(exc, KeyboardInterrupt):
        return gdb.GdbError("interrupted")
    return gdb.GdbError(f"stackmark: internal error: {type(exc).__name__}: {exc}")


class StackmarkCommand(gdb.Command):  # type: ignore[misc]
    """A stackmark command (its help is set per instance)."""

    def __init__(self, name: str, command: Command, session: Session):
        self.__doc__ = command.help_text(prog=name).rstrip()
        self._command = command
        self._session = session
        self._prog = name
        super().__init__(name, gdb.COMMAND_USER)

    def complete(self, text: str, word: str | None) -> object:
        """Options and choices of the command; else what its arguments are.

        GDB breaks words at '-' too, so `word` may be the tail of the last
        argument (`all-th` of `--all-th`); completions are cut to match it.
        """
        last = "" if not text or text[-1].isspace() else text.split()[-1]
        words = self._command.completions(last)
        if words or self._command.completion is Completion.NONE:
            cut = len(last) - len(word or "")
            return [w[cut:] for w in words]
        return _GDB_COMPLETION[self._command.completion]

    def invoke(self, argument: str, from_tty: bool) -> None:
        try:
            argv = gdb.string_to_argv(argument)
            write_lines(run_command(self._session, self._command, argv, argument, self._prog))
        except BaseException as exc:  # everything reaches the user as one message
            raise gdb_error(exc) from None


class StackmarkPrefix(gdb.Command):  # type: ignore[misc]
    """A prefix command: shows its help, with GDB's list of subcommands, when run alone."""

    def __init__(self, group: CommandGroup):
        self.__doc__ = group.summary
        self._name = group.name
        super().__init__(group.name, gdb.COMMAND_USER, gdb.COMPLETE_COMMAND, True)

    def invoke(self, argument: str, from_tty: bool) -> None:
        if argument.strip():
            raise gdb.GdbError(f'undefined command: "{self._name} {argument.strip()}"')
        gdb.write(gdb.execute(f"help {self._name}", to_string=True))


def register(session: Session, groups: Sequence[CommandGroup], commands: Sequence[Command]) -> None:
    """Create the GDB commands (GDB replaces commands registered again)."""
    for group in groups:
        StackmarkPrefix(group)
    for command in commands:
        StackmarkCommand(command.name, command, session)
        for alias in command.aliases:
            StackmarkCommand(alias, command, session)
