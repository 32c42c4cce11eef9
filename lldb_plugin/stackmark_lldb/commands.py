"""Register stackmark's commands as LLDB commands.

Every `CommandGroup` becomes a command container (`command container add`),
every `stackmark.debugger.command.Command` a class command in it (`command
script add -c`), plus its top-level aliases. LLDB finds a class command by
a dotted name it resolves from the module it imported, so each command's
class is created here and published on that module (pwndbg does the same).

LLDB quirks: output written with `print()` is not captured by a command's
result (lldb-dap, IDEs and `SBCommandInterpreter.HandleCommand` see only
what is written to the `SBCommandReturnObject`), so every line is written
to the result, and `sys.stdout`/`sys.stderr` are sent there while a
command runs; an exception escaping a command only prints a traceback
while the command still "succeeds", so every error becomes
`result.SetError` with one message.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import lldb

from stackmark.debugger.command import Command, CommandGroup, Completion, run_command
from stackmark.debugger.session import Session
from stackmark.errors import StackmarkError
from stackmark_lldb.backend import LldbBackend

_LLDB_COMPLETION = {
    Completion.NONE: None,
    Completion.FILENAME: "disk-file",
    Completion.EXPRESSION: "symbol",
}


def error_message(exc: BaseException) -> str:
    """What the user is told about `exc`: its message, never a traceback."""
    if isinstance(exc, StackmarkError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"stackmark: internal error: {type(exc).__name__}: {exc}"


class Output:
    """Where the running command's warnings go: its result, else stderr."""

    def __init__(self) -> None:
        self.result: lldb.SBCommandReturnObject | None = None

    def warn(self, text: str) -> None:
        """A diagnostic (LLDB writes "warning: " before it: not twice)."""
        message = text.rstrip("\n").replace(": warning: ", ": ", 1)
        if self.result is not None:
            self.result.AppendWarning(message)
        else:
            sys.stderr.write(message + "\n")


class _LineWriter(io.TextIOBase):
    """A text stream that hands each complete line to `sink` (for `sys.stdout`/`stderr`)."""

    def __init__(self, sink: Callable[[str], None]):
        super().__init__()
        self._sink = sink
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        for line in lines:
            self._sink(line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            line, self._pending = self._pending, ""
            self._sink(line)


def write_line(result: lldb.SBCommandReturnObject, line: str) -> None:
    """One line of output, as is (AppendMessage would drop an empty line and trailing
    spaces, which `objdump --sframe`-style tables have)."""
    result.Print(line + "\n")


class StackmarkCommand:
    """Base of the generated class commands; the class attributes below are set
    on each subclass by `register`."""

    command: Command
    prog: str
    session: Session
    backend: LldbBackend
    output: Output
    on_call: Callable[[], None]

    def __init__(self, debugger: lldb.SBDebugger, internal_dict: dict[str, Any]):
        pass

    def get_short_help(self) -> str:
        return self.command.summary

    def get_long_help(self) -> str:
        """Usage, description and options (LLDB shows the short help above them)."""
        return self.command.parser(self.prog).format_help().rstrip()

    def __call__(
        self,
        debugger: lldb.SBDebugger,
        arguments: str,
        context: lldb.SBExecutionContext,
        result: lldb.SBCommandReturnObject,
    ) -> None:
        previous, self.output.result = self.output.result, result
        try:
            try:
                argv = shlex.split(arguments)
            except ValueError as exc:  # an unbalanced quote
                raise StackmarkError(f"{exc}: {arguments}") from None
            # What the core prints itself (rare) must reach the result too.
            stdout = _LineWriter(lambda line: write_line(result, line))
            stderr = _LineWriter(self.output.warn)
            with (
                self.backend.bound(debugger, context),
                contextlib.redirect_stdout(stdout),
                contextlib.redirect_stderr(stderr),
            ):
                try:
                    self.on_call()
                    for line in run_command(self.session, self.command, argv, arguments, self.prog):
                        write_line(result, line)
                finally:
                    stdout.flush()
                    stderr.flush()
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
        except BaseException as exc:  # everything reaches the user as one message
            result.SetError(error_message(exc))
        finally:
            self.output.result = previous


def _class_name(name: str) -> str:
    return "_stackmark_command_" + name.replace(" ", "_").replace("-", "_")


def _handle(debugger: lldb.SBDebugger, command: str) -> None:
    """Run an LLDB command; raise with LLDB's message when it fails."""
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(command, result)
    if not result.Succeeded():
        raise StackmarkError(f"{command}: {(result.GetError() or '').strip()}")


def register(
    debugger: lldb.SBDebugger,
    module: ModuleType,
    session: Session,
    backend: LldbBackend,
    output: Output,
    groups: Sequence[CommandGroup],
    commands: Sequence[Command],
    on_call: Callable[[], None],
) -> None:
    """Create the containers and class commands (`-o`: importing again replaces them)."""
    for group in groups:
        _handle(debugger, f"command container add -o -h {shlex.quote(group.summary)} {group.name}")
    for command in commands:
        for name in (command.name, *command.aliases):
            class_name = _class_name(name)
            attributes = {
                "command": command,
                "prog": name,
                "session": session,
                "backend": backend,
                "output": output,
                "on_call": staticmethod(on_call),
                "__doc__": command.summary,
            }
            setattr(module, class_name, type(class_name, (StackmarkCommand,), attributes))
            completion = _LLDB_COMPLETION[command.completion]
            options = f"-C {completion} " if completion else ""
            _handle(
                debugger,
                f"command script add -o {options}-c {module.__name__}.{class_name} {name}",
            )
