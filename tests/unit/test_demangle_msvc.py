"""Microsoft C++ names: stackmark.demangle against llvm-undname-19 and llvm-symbolizer-19.

The corpus is every decorated name of tests/fixtures/src/msvc_names.cpp compiled by
clang-19 for x86-64, x86 and AArch64 Windows (listed by llvm-nm-19), so it holds what a
real compiler writes: operators, structors, vftables and RTTI, templates, lambdas,
local statics, calling conventions, string literals. `{{{symbol}}}` prints
llvm::demangle's whole declaration; a function name prints as llvm-symbolizer's
narrower spelling.
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest

from stackmark.demangle import demangle, demangle_symbol
from tests.conftest import require_tool
from tests.support.build import compile_program
from tests.support.demangling import UNDNAME_SYMBOLIZER_FLAGS, undname
from tests.support.markup_programs import add_to_debug_dir, build_id, llvm, stackmark

TARGETS = ("x86_64-pc-windows-msvc", "i686-pc-windows-msvc", "aarch64-pc-windows-msvc")


@cache
def corpus() -> list[str]:
    names: set[str] = set()
    for target in TARGETS:
        obj = compile_program(
            f"msvc_names-{target}.obj",
            ["msvc_names.cpp"],
            compiler=require_tool("clang-19"),
            flags=("-target", target, "-std=c++20", "-c", "-Wno-unused-command-line-argument"),
        )
        listing = subprocess.run(
            [require_tool("llvm-nm-19"), "--format=just-symbols", obj],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        names.update(line for line in listing.splitlines() if line.startswith("?"))
    assert len(names) > 100, len(names)
    return sorted(names)


def llvm_spelling(names: list[str], *flags: str) -> list[str]:
    """llvm-undname-19's expansion of each name; the name itself where LLVM cannot
    read it (as llvm::demangle and llvm-symbolizer leave it)."""
    answers = undname(names, *flags)
    return [text if text is not None else name for name, text in zip(names, answers, strict=True)]


def test_every_name_a_compiler_writes_reads_as_llvm_undname_reads_it() -> None:
    names = corpus()
    assert [demangle(name) for name in names] == llvm_spelling(names)


def test_function_names_read_as_llvm_symbolizer_prints_them() -> None:
    names = corpus()
    expected = llvm_spelling(names, *UNDNAME_SYMBOLIZER_FLAGS)
    assert [demangle_symbol(name) for name in names] == expected


@pytest.mark.parametrize("suffix", ["junk", ")", "'", "@", "Z", "?", "$1", "?f@@YAXXZ"])
def test_characters_after_a_name_are_ignored_where_llvm_ignores_them(suffix: str) -> None:
    # LLVM reads one name and ignores what follows, except after a type descriptor name
    # or an RTTI type descriptor (`??_R0...@8`), which must end the input.
    names = [name + suffix for name in corpus()] + [".?AUBase@@" + suffix]
    assert [demangle(name) for name in names] == llvm_spelling(names)


def test_names_llvm_cannot_read_are_left_alone() -> None:
    names = ["?", "?x", "??", "?foo@", "??_R0?AVS@@@8x", ".?AUS@@x", "?" + "A" * 5000]
    assert undname(names[:-1]) == [None] * (len(names) - 1)
    assert [demangle(name) for name in names] == names
    assert [demangle_symbol(name) for name in names] == names


def test_symbol_elements_print_what_llvm_symbolizer_prints() -> None:
    names = [*corpus(), "?f@@YAXXZ)", "?x", ".?AUBase@@", "?g@@YAHH@Z trailing words"]
    log = "".join(f"symbol {{{{{{symbol:{name}}}}}}} end\n" for name in names).encode()
    ours, theirs = stackmark(log), llvm(log)
    assert ours.stdout == theirs.stdout
    assert ours.text.count("__cdecl") > 50


C_SOURCE = """\
int method(int x) __asm__("?method@Widget@ui@@QEAAHH@Z");
int method(int x) { return x * 3; }
int free_fn(int x) __asm__("?free_fn@@YAHH@Z");
int free_fn(int x) { return method(x) + 1; }
int templ(int x) __asm__("??$convert@N@Outer@@SANN@Z");
int templ(int x) { return free_fn(x) - 1; }
int counter __asm__("?counter@Stats@@2HA") = 7;
int main(int argc, char **argv) { (void)argv; return templ(argc) + counter; }
"""


def test_functions_with_microsoft_names_in_a_linux_program(tmp_path: Path) -> None:
    source = tmp_path / "msvc_named.c"
    source.write_text(C_SOURCE)
    program = compile_program(
        "msvc_named", [source], compiler=require_tool("clang-19"), flags=("-g", "-O0")
    )
    add_to_debug_dir(tmp_path / "debug", program)
    symbols = subprocess.run(
        ["nm", "--defined-only", program], capture_output=True, text=True, check=True
    ).stdout
    where = {line.split()[2]: int(line.split()[0], 16) for line in symbols.splitlines()}
    base = 0x7F0000000000
    lines = [
        f"{{{{{{module:0:msvc_named:elf:{build_id(program)}}}}}}}",
        f"{{{{{{mmap:{base:#x}:0x10000:load:0:rx:0x0}}}}}}",
    ]
    functions = ["?method@Widget@ui@@QEAAHH@Z", "?free_fn@@YAHH@Z", "??$convert@N@Outer@@SANN@Z"]
    lines += [f"{{{{{{bt:{i}:{base + where[f] + 4:#x}:pc}}}}}}" for i, f in enumerate(functions)]
    lines.append(f"at {{{{{{pc:{base + where[functions[0]] + 4:#x}}}}}}}")
    lines.append(f"data {{{{{{data:{base + where['?counter@Stats@@2HA']:#x}}}}}}}")
    log = ("\n".join(lines) + "\n").encode()
    option = f"--debug-file-directory={tmp_path / 'debug'}"
    ours, theirs = stackmark(log, option), llvm(log, option)
    assert ours.stdout == theirs.stdout
    assert "ui::Widget::method(int)" in ours.text
    assert "Outer::convert<double>(double)" in ours.text
