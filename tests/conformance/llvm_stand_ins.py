"""stackmark standing in for llvm-symbolizer and llvm-gsymutil on LLVM's RUN lines.

The conformance runner (tests/conformance/llvm_lit.py) puts two scripts
named `llvm-symbolizer` and `llvm-gsymutil` first on PATH; each runs

    python -m tests.conformance.llvm_stand_ins TOOL ARGS...

which turns llvm's command line into stackmark's and replaces itself with
`python -m stackmark ...`:

    llvm-symbolizer --filter-markup ARGS       stackmark symbolize --compat=llvm19 ARGS
    llvm-gsymutil --convert IN [-o OUT] ...    stackmark gsym convert IN [-o OUT] ...
    llvm-gsymutil --address A... GSYM          stackmark gsym lookup GSYM A...
    llvm-gsymutil --addresses-from-stdin       stackmark gsym lookup --addresses-from-stdin
    llvm-gsymutil GSYM...                      stackmark gsym dump GSYM (each)

llvm-gsymutil's options are LLVM `cl::opt`s: `--name=value`, `--name value`
and `-name` spellings are all accepted, as llvm accepts them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

# llvm-gsymutil options that take a value, by their spellings.
_VALUE_OPTIONS = {
    "convert": ("convert",),
    "out-file": ("out-file", "o"),
    "address": ("address",),
    "arch": ("arch",),
    "segment-size": ("segment-size",),
    "num-threads": ("num-threads",),
}
_FLAGS = ("addresses-from-stdin", "verbose", "quiet", "verify", "help", "h", "version")


def _stackmark(*args: str) -> list[str]:
    return [sys.executable, "-m", "stackmark", *args]


def symbolizer_command(argv: Sequence[str]) -> list[str]:
    """`stackmark symbolize --compat=llvm19 ...` for an llvm-symbolizer command line."""
    if "--filter-markup" not in argv:
        raise SystemExit("llvm-symbolizer stand-in: only --filter-markup runs are stood in for")
    rest = [a for a in argv if a != "--filter-markup"]
    return _stackmark("symbolize", "--compat=llvm19", *rest)


def parse_gsymutil_args(argv: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(options by canonical name -> values, positional arguments), as cl::opt parses them."""
    spelled = {s: name for name, spellings in _VALUE_OPTIONS.items() for s in spellings}
    options: dict[str, list[str]] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name in spelled:
            if not eq:
                if i >= len(argv):
                    raise SystemExit(f"llvm-gsymutil stand-in: {arg} needs a value")
                value = argv[i]
                i += 1
            options.setdefault(spelled[name], []).append(value)
        elif name in _FLAGS:
            options.setdefault(name, []).append(value or "true")
        else:
            raise SystemExit(f"llvm-gsymutil stand-in: unknown option {arg}")
    return options, positional


def gsymutil_commands(argv: Sequence[str]) -> list[list[str]]:
    """The stackmark commands that do what an llvm-gsymutil command line asks."""
    options, positional = parse_gsymutil_args(argv)
    if "help" in options or "h" in options:
        return [_stackmark("gsym", "--help")]
    if "version" in options:
        return [_stackmark("--version")]
    if "convert" in options:
        command = _stackmark("gsym", "convert", options["convert"][-1])
        if "out-file" in options:
            command += ["-o", options["out-file"][-1]]
        if "quiet" in options:
            command.append("--quiet")
        for arch in options.get("arch", []):
            command += ["--arch", arch]
        if "segment-size" in options:
            command += ["--segment-size", options["segment-size"][-1]]
        if "num-threads" in options:
            command += ["-j", options["num-threads"][-1]]
        return [command]
    verbose = ["--verbose"] if "verbose" in options else []
    if "addresses-from-stdin" in options:
        return [
            _stackmark(
                "gsym",
                "lookup",
                "--addresses-from-stdin",
                *verbose,
                *positional,
                *options.get("address", []),
            )
        ]
    if "address" in options:
        return [
            _stackmark("gsym", "lookup", *verbose, path, *options["address"]) for path in positional
        ]
    return [_stackmark("gsym", "dump", path) for path in positional]


def main(argv: Sequence[str]) -> int:
    tool, args = argv[0], list(argv[1:])
    if tool == "llvm-symbolizer":
        command = symbolizer_command(args)
        os.execv(command[0], command)
    if tool != "llvm-gsymutil":
        raise SystemExit(f"no stand-in for {tool}")
    status = 0
    for command in gsymutil_commands(args):
        sys.stdout.flush()
        status = subprocess.run(command, check=False).returncode or status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
