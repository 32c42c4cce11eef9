"""Declaring and running debugger commands (stackmark.debugger.command)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

import pytest

from stackmark.debugger.backend import DebuggerError
from stackmark.debugger.command import Command, CommandParser, run_command
from stackmark.debugger.session import Session


def _configure(parser: CommandParser) -> None:
    parser.add_argument("action", nargs="?", choices=("info", "dump"), default="info")
    parser.add_argument("--json", action="store_true")


def _run(session: Session, args: argparse.Namespace) -> Iterable[str]:
    return [f"{args.action} json={args.json} raw={args.raw!r}"]


EXAMPLE = Command(("thing",), "Do a thing.", "Longer text.", _configure, _run)


def test_runs_with_parsed_arguments_and_the_raw_text() -> None:
    session = Session(backend=None)  # type: ignore[arg-type]
    lines = run_command(session, EXAMPLE, ["dump", "--json"], raw="dump  --json")
    assert list(lines) == ["dump json=True raw='dump  --json'"]


def test_help_is_returned_as_lines_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    lines = list(run_command(Session(None), EXAMPLE, ["--help"]))  # type: ignore[arg-type]
    assert lines[0] == "Do a thing."
    assert any(line.startswith("usage: stackmark thing") for line in lines)
    assert capsys.readouterr() == ("", "")


def test_usage_errors_raise_a_debugger_error_with_the_usage() -> None:
    with pytest.raises(DebuggerError) as caught:
        run_command(Session(None), EXAMPLE, ["bogus"])  # type: ignore[arg-type]
    assert "invalid choice: 'bogus'" in str(caught.value)
    assert "usage: stackmark thing" in str(caught.value)


def test_completions() -> None:
    assert EXAMPLE.completions("d") == ["dump"]
    assert EXAMPLE.completions("--j") == ["--json"]
    assert EXAMPLE.completions("") == ["dump", "info"]
    assert EXAMPLE.name == "stackmark thing"
