"""The LLVM conformance runner's lit emulation and its llvm-gsymutil stand-in."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conformance.llvm_lit import run_lines, substitute, unsupported_reason
from tests.conformance.llvm_stand_ins import gsymutil_commands, symbolizer_command

STACKMARK = [sys.executable, "-m", "stackmark"]


def test_run_lines_join_continuations_whatever_the_comment_prefix() -> None:
    text = "## RUN: yaml2obj %s -o %t\n; RUN: llvm-mc a \\\n; RUN:   -o b\nCHECK: x\n"
    assert run_lines(text) == ["yaml2obj %s -o %t", "llvm-mc a -o b"]


def test_substitutions_are_lits() -> None:
    source = Path("/l/test/X86/a.yaml")
    tmp = Path("/o/a.yaml.tmp")
    command = "x %s %S %p %t.gsym %/t %T 100%%"
    assert substitute(command, source, tmp) == (
        "x /l/test/X86/a.yaml /l/test/X86 /l/test/X86 /o/a.yaml.tmp.gsym /o/a.yaml.tmp /o 100%"
    )


def test_requires_and_unsupported_lines_are_judged_against_llvm_19s_features() -> None:
    assert unsupported_reason("REQUIRES: x86-registered-target\n") is None
    assert unsupported_reason("UNSUPPORTED: system-windows\n") is None
    assert unsupported_reason("REQUIRES: mips-registered-target\n") is not None
    assert unsupported_reason("UNSUPPORTED: system-linux || system-windows\n") is not None


def test_llvm_symbolizer_becomes_symbolize_in_compat_mode() -> None:
    assert symbolizer_command(["--filter-markup", "--color=always"]) == [
        *STACKMARK,
        "symbolize",
        "--compat=llvm19",
        "--color=always",
    ]


def test_llvm_gsymutil_command_lines_become_stackmark_gsym_actions() -> None:
    assert gsymutil_commands(["--convert=in", "--out-file=in.gsym", "--quiet"]) == [
        [*STACKMARK, "gsym", "convert", "in", "-o", "in.gsym", "--quiet"]
    ]
    assert gsymutil_commands(["--convert", "f", "--arch", "arm64", "-o", "g"]) == [
        [*STACKMARK, "gsym", "convert", "f", "-o", "g", "--arch", "arm64"]
    ]
    assert gsymutil_commands(["--address=0x13", "--verbose", "a.gsym", "--address", "1"]) == [
        [*STACKMARK, "gsym", "lookup", "--verbose", "a.gsym", "0x13", "1"]
    ]
    assert gsymutil_commands(["a.gsym"]) == [[*STACKMARK, "gsym", "dump", "a.gsym"]]
