"""Hand-written markup logs through llvm-symbolizer-19 and `stackmark symbolize`.

Every element, every error and every context rule of llvm-symbolizer 19's
markup filter (llvm/docs/SymbolizerMarkupFormat.rst), written against a real program (the `pie`
fixture and its library) placed at fixed addresses. `--compat=llvm19`
must match llvm byte for byte (stdout and stderr, with and without
colour); the default mode must agree on every line llvm gets right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from stackmark.elf import ElfFile
from tests.conftest import require_tool
from tests.integration.test_symbolize_oracle import assert_in_order, llvm_got_right
from tests.support.markup_programs import add_to_debug_dir, build_variant, llvm, stackmark

PROG_BASE = 0x555500000000
LIB_BASE = 0x7F0000000000


@dataclass(frozen=True)
class Layout:
    """The pie program and its library, and where the logs put them."""

    program: Path
    library: Path
    debug_dir: Path
    symbols: dict[str, tuple[int, int]]  # program symbol -> (runtime address, size)
    lib_symbols: dict[str, tuple[int, int]]

    def context(self, with_library: bool = True) -> list[str]:
        lines = module_lines(self.program, 0, "markup_prog", PROG_BASE)
        if with_library:
            lines += module_lines(self.library, 1, "libmarkup_lib.so", LIB_BASE)
        return lines

    def at(self, name: str, offset: int = 0) -> str:
        return f"{self.symbols[name][0] + offset:#x}"

    def lib_at(self, name: str, offset: int = 0) -> str:
        return f"{self.lib_symbols[name][0] + offset:#x}"

    def middle(self, name: str) -> str:
        address, size = self.symbols[name]
        return f"{address + size // 2:#x}"


def el(*parts: str) -> str:
    """One markup element: el("pc", "0x10", "ra") is {{{pc:0x10:ra}}}."""
    return "{{{" + ":".join(parts) + "}}}"


def module_lines(binary: Path, module_id: int, name: str, base: int) -> list[str]:
    with ElfFile.open(binary) as elf:
        ident = elf.build_id
        loads = elf.load_segments()
    assert ident is not None
    lines = [el("module", str(module_id), name, "elf", ident)]
    for seg in loads:
        first = seg.vaddr & ~0xFFF
        last = (seg.vaddr + seg.memsz + 0xFFF) & ~0xFFF
        lines.append(
            el(
                "mmap",
                hex(base + first),
                hex(last - first),
                "load",
                str(module_id),
                seg.mode,
                hex(first),
            )
        )
    return lines


def symbol_table(binary: Path, base: int) -> dict[str, tuple[int, int]]:
    with ElfFile.open(binary) as elf:
        return {s.name: (base + s.value, s.size) for s in elf.symbols() if s.is_defined and s.name}


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Layout:
    require_tool("llvm-symbolizer-19")
    program, library, _ = build_variant("pie")
    assert library is not None
    debug_dir = tmp_path_factory.mktemp("handwritten") / "debug"
    add_to_debug_dir(debug_dir, program)
    add_to_debug_dir(debug_dir, library)
    return Layout(
        program,
        library,
        debug_dir,
        symbol_table(program, PROG_BASE),
        symbol_table(library, LIB_BASE),
    )


ESC = "\x1b"


def log_elements(p: Layout) -> list[str]:
    main = p.middle("main")
    return [
        el("reset"),
        *p.context(),
        f"precise {el('pc', p.at('run_pipeline'))} mid {el('pc', p.middle('capture'))}",
        f"suffixes {el('pc', p.at('capture', 1), 'ra')} {el('pc', p.at('capture', 1), 'pc')}",
        "  " + el("bt", "0", p.middle("capture"), "pc"),
        "  " + el("bt", "1", p.middle("run_pipeline"), "ra"),
        "  " + el("bt", "2", main),
        el("bt", "3", p.lib_at("markup_lib_walk", 4), "ra") + " in the library",
        f"{el('bt', '123456', main)} wide number {el('bt', '7', main)}",
        f"data {el('data', p.at('g_counter'))} {el('data', p.at('g_banner', 9))}",
        f"more data {el('data', p.at('g_table', 16))} code {el('data', main)}",
        f"library data {el('data', p.lib_at('markup_lib_table', 3))}",
        f"uncovered {el('data', hex(PROG_BASE + 0x8))}",
        f"{el('symbol', '_ZN7Mangled4NameEv')} {el('symbol', 'g_counter')} {el('symbol', '')}",
        el("hexdict", f"RIP: {p.at('capture')} RSP: 0x7ffc00001000")
        + " "
        + el("dumpfile", "sancov", "sancov.8675"),
        "regs {{{hexdict:",
        f"  RIP: {p.at('capture')} RBX: {p.at('g_counter')}",
        "}}}",
        f"{el('foo', 'bar')} {el('frame', '1')} {el('hexdict')}",
        "plain text with no markup",
        "",
    ]


def log_errors(p: Layout) -> list[str]:
    return [
        *p.context(with_library=False),
        "tags {{{PC:0x1}}} {{{p-c:2}}} {{{pc2:3}}} {{{ pc:4}}} {{{{pc:5}}}} {{{}}} {{{:x}}}",
        "counts {{{pc}}} {{{bt:1}}} {{{data}}} {{{data:0x1:2}}} {{{symbol}}} {{{symbol:a:b}}}",
        "more counts {{{pc:0x1:ra:x}}} {{{bt:1:0x1:ra:x}}}",
        "types {{{pc: 0x1}}} {{{pc:0X1}}} {{{pc:42}}} {{{pc:0x}}} {{{pc:0x10000000000000000}}}",
        "frames {{{bt:0x1:0x1}}} {{{bt:-1:0x1}}} {{{bt:18446744073709551616:0x1}}}",
        "pc types {{{pc:0x1:RA}}} {{{pc:0x1:}}} {{{bt:1:0x1:PC}}}",
        "{{{module:1:a}}}",
        "{{{module:x:a:elf:12}}}",
        "{{{module:1:a:ELF:12}}}",
        "{{{module:1:a:elf}}}",
        "{{{module:1:a:elf:zz}}}",
        "{{{module:1:a:elf::extra}}}",
        "{{{module:0:duplicate:elf:12}}}",
        "{{{mmap:0x1:2}}}",
        "{{{mmap:1:2:load:0:r:0}}}",
        "{{{mmap:0x1:0x:load:0:r:0}}}",
        "{{{mmap:0x1:079:load:0:r:0}}}",
        "{{{mmap:0x1:2:store:0:r:0}}}",
        "{{{mmap:0x1:2:load:0:r}}}",
        "{{{mmap:0x1:2:load:q:r:0}}}",
        "{{{mmap:0x1:2:load:0:xr:0}}}",
        "{{{mmap:0x1:2:load:0::0}}}",
        "{{{mmap:0x1:2:load:9:r:zz}}}",
        "{{{mmap:0x1:2:load:0:r:zz}}}",
        "{{{mmap:0x1:2:load:0:r:0:extra}}}",
        el("mmap", hex(PROG_BASE), "0x10", "load", "0", "r", "0"),
        el("mmap", hex(PROG_BASE - 0x800), "0x1000", "load", "0", "r", "0"),
        "outside {{{pc:0x10}}} {{{bt:0:0x10}}} {{{data:0x10}}}",
        f"first byte {el('bt', '0', hex(PROG_BASE))} {el('bt', '1', hex(PROG_BASE + 0x1000))}",
        "{{{module:7:notfound:elf:abad1d}}}",
        "{{{mmap:0x7e0000000000:0x1000:load:7:rx:0}}}",
        "missing {{{pc:0x7e0000000010}}} {{{bt:1:0x7e0000000010}}} {{{data:0x7e0000000020}}}",
        "{{{reset:x}}}",
    ]


def log_context(p: Layout) -> list[str]:
    prog = p.context(with_library=False)
    lib = module_lines(p.library, 1, "libmarkup_lib.so", LIB_BASE)
    pc = el("pc", p.at("capture"))
    return [
        "text {{{reset}}} more",
        prog[0],
        f"keep {lib[0]} skip {pc}",
        prog[1],
        prog[2],
        f"pc on an mmap line {pc} {prog[3]} also gone",
        "",
        f"pc before context {pc} {lib[1]} kept?",
        *lib[2:],
        *prog[4:],
        "  {{{reset}}} tail",
        *prog,
        pc + "{{{reset:y}}}tail",
        "x {{{reset:y}}} z",
        "{{{module:1:late:elf:9ab5}}}",
        '{{{module:010:octal id eight & "quoted" name:elf:AbC}}}',
        "{{{mmap:0x20000:0:load:8:r:0}}}",
        "{{{mmap:0x30000:0x1000:load:1:rwx:0}}}",
        "{{{mmap:0x40000:0x1000:load:1:R:0}}}{{{mmap:0x50000:0x1000:load:8:r:0}}}",
    ]


def log_colour(p: Layout) -> list[str]:
    pc = el("pc", p.at("capture"))
    bt = el("bt", "1", p.middle("run_pipeline"))
    data = el("data", p.at("g_counter"))
    return [
        *p.context(),
        f"{ESC}[31mred {pc} red {ESC}[0m plain",
        f"{ESC}[1m{ESC}[34mbold blue {bt} x {el('symbol', '_Z3foov')}",
        f"{ESC}[34m{data}{ESC}[4m{ESC}[38;5;196m{pc}{ESC}[0;31m{ESC}[m",
        f"{ESC}[1mbold only {pc}",
        f"{ESC}[32m{ESC}[1mgreen then bold {bt}",
        el("symbol", f"{ESC}[31mx") + f" {ESC}[37m{ESC}[30m{ESC}[33m{ESC}[35m{ESC}[36mcolours",
        "after a coloured line",
        f"{ESC}[1m{el('reset')}",
        *p.context(with_library=False),
        f"{ESC}[36m{el('bt', '0', '0x10')} {pc}",
    ]


def log_processes(p: Layout) -> list[str]:
    second = module_lines(p.program, 1, "markup_prog", PROG_BASE + 0x100000)
    main = p.middle("main")
    return [
        *p.context(),
        el("bt", "0", main, "pc"),
        el("reset"),
        *second,
        el("bt", "0", main, "pc") + " (old address: no mmap)",
        el("bt", "0", hex(int(main, 16) + 0x100000), "pc"),
        el("reset"),
        el("reset"),
        "after two resets",
    ]


SYMBOLS = [
    "_ZN7Mangled4NameEv",
    "_Z3foov.cold",
    "_Z3barv.isra.0",
    "__Z3foov",
    "_ZNSt6vectorIS_IiSaIiEESaIS1_EE9push_backERKS1_",
    "_ZZN3geo4mainEvENKUlPKNS_5ShapeEE_clES3_",
    "_ZN3std2rt10lang_start17h0123456789abcdefE",
    "_RNvCs1234_7mycrate4main",
    "?foo@@YAXXZ",
    "??_7Circle@geo@@6B@",
    "?f@@YAXXZ)",
    ".?AUBase@@",
    "_ZN3geo6SquareC2Ed",
    "_D3foo3barFZv",
    "_Zinvalid",
    "_Z",
    "_Znwm@GLIBCXX_3.4",
    "_Z1fv@plt",
    "main",
    "",
]


def log_symbols(_p: Layout) -> list[str]:
    rows = range(0, len(SYMBOLS), 4)
    return [" ".join(el("symbol", name) for name in SYMBOLS[i : i + 4]) for i in rows]


CASES: dict[str, Callable[[Layout], list[str]]] = {
    "elements": log_elements,
    "errors": log_errors,
    "context": log_context,
    "colour": log_colour,
    "processes": log_processes,
    "symbols": log_symbols,
}


@pytest.mark.parametrize("colour", ["--color=never", "--color=always"])
@pytest.mark.parametrize("case", list(CASES))
def test_compat_is_byte_identical(layout: Layout, case: str, colour: str) -> None:
    log = ("\n".join(CASES[case](layout)) + "\n").encode()
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs = llvm(log, debug, colour)
    ours = stackmark(log, debug, colour, "--compat=llvm19")
    assert ours.stdout.decode() == theirs.stdout.decode()
    assert ours.stderr.decode() == theirs.stderr.decode()


@pytest.mark.parametrize("case", [case for case in CASES if case != "errors"])
def test_default_mode_agrees_where_llvm_is_right(layout: Layout, case: str) -> None:
    """(The `errors` log is all lines llvm mangles; test_symbolize_differences.py has it.)"""
    log = ("\n".join(CASES[case](layout)) + "\n").encode()
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs = [line for line in llvm(log, debug).lines if llvm_got_right(line)]
    ours = stackmark(log, debug)
    assert_in_order(theirs, ours.lines)


def test_line_endings_and_bytes(layout: Layout) -> None:
    lines = [*layout.context(), el("pc", layout.at("capture")) + " caf\xe9"]
    body = "\r\n".join(lines).encode("latin-1") + b"\r\n\xff\xfe raw {{{PC:1}}}\nno newline\r"
    debug = f"--debug-file-directory={layout.debug_dir}"
    theirs = llvm(body, debug)
    ours = stackmark(body, debug, "--compat=llvm19")
    assert ours.stdout == theirs.stdout and ours.stderr == theirs.stderr
    default = stackmark(body, debug)
    assert b"caf\xe9\r\n" in default.stdout
    assert default.stdout.endswith(b"\xff\xfe raw {{{PC:1}}}\nno newline\r")


def test_empty_input(layout: Layout) -> None:
    assert stackmark(b"", "--compat=llvm19").stdout == llvm(b"").stdout == b""
    assert stackmark(b"").stdout == b""
