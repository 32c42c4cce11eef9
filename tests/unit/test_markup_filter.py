"""The two filters over a fake symbolizer: llvm 19's layout and stackmark's departures.

Each deliberate difference from llvm 19 (see stackmark/markup/filter.py)
has a test here named `test_difference_*`; the oracle tests in
tests/integration/test_symbolize_*.py check the same against the real tool.
"""

from __future__ import annotations

import argparse
import io
import json

from stackmark.cli import symbolize
from stackmark.markup.filter import StackmarkFilter
from stackmark.markup.llvm19 import Llvm19Filter
from stackmark.markup.naming import NameOptions, Naming
from stackmark.markup.records import Record
from stackmark.markup.report import DiagnosticPrinter
from stackmark.markup.resolve import Resolver
from stackmark.model import DataSymbol, SourceFrame
from tests.support.fake_symbolizer import FakeBinary, FakeSymbolizer

ESC = "\x1b"
CONTEXT = (
    "{{{module:0:prog:elf:aa01}}}\n"
    "{{{mmap:0x7000:0x1000:load:0:r:0}}}\n"
    "{{{mmap:0x8000:0x1000:load:0:rx:0x1000}}}\n"
    "{{{mmap:0xa000:0x1000:load:0:rw:0x3000}}}\n"
)
INLINE = [
    SourceFrame("_Z5scalei", "scale", "/src/a.c", 14, 5),
    SourceFrame(None, "run", "/src/a.c", 37, 18),
]


def fake() -> FakeSymbolizer:
    prog = FakeBinary(
        "/bin/prog",
        code=[
            (0x1000, 0x1100, INLINE),
            (0x1100, 0x1200, [SourceFrame("crash_here", None, None, 0)]),
        ],
        data=[DataSymbol("g_banner", 0x3000, 16)],
    )
    return FakeSymbolizer({"aa01": prog})


def naming(**options: str | bool) -> Naming:
    def demangle(name: str) -> str:
        return f"D({name})" if name.startswith("_Z") else name

    return Naming(NameOptions(**options), demangle, lambda s: f"S({s})")  # type: ignore[arg-type]


def run(
    log: str,
    *,
    compat: bool = False,
    colour: bool = False,
    symbolizer: FakeSymbolizer | None = None,
    records: list[Record] | None = None,
    **name_options: str | bool,
) -> tuple[str, str]:
    err: list[str] = []
    printer = DiagnosticPrinter(err.append, llvm_style=compat, source="log")
    resolver = Resolver(symbolizer or fake())
    names = naming(**name_options)
    line_filter: Llvm19Filter | StackmarkFilter
    if compat:
        line_filter = Llvm19Filter(resolver, names, printer, colour=colour)
    else:
        line_filter = StackmarkFilter(resolver, names, printer, colour=colour, records=records)
    out = []
    for raw in log.splitlines(keepends=True):
        if raw.endswith("\r\n"):
            out.append(line_filter.feed(raw[:-2], "\r\n"))
        elif raw.endswith("\n"):
            out.append(line_filter.feed(raw[:-1], "\n"))
        else:
            out.append(line_filter.feed(raw, ""))
    out.append(line_filter.finish())
    return "".join(out), "".join(err)


MODULE_LINE = (
    '[[[ELF module #0x0 "prog"; BuildID=aa01 '
    "[0x7000-0x7fff](r),[0x8000-0x8fff](rx),[0xa000-0xafff](rw)]]]\n"
)


# --- what both filters print alike ------------------------------------------------


def test_module_info_line_and_frames() -> None:
    log = CONTEXT + "at {{{pc:0x8010}}} {{{data:0xa004}}}\n  {{{bt:3:0x8011}}}\n"
    for compat in (True, False):
        out, err = run(log, compat=compat)
        assert out == (
            MODULE_LINE + "at run[/src/a.c:14] g_banner\n"
            "      #3.1  0x0000000000008010 D(_Z5scalei) /src/a.c:14:5 (prog+0x1010)\n"
            "    #3    0x0000000000008010 run /src/a.c:37:18 (prog+0x1010)\n"
        )
        assert err == ""


def test_short_and_no_function_names() -> None:
    log = CONTEXT + "{{{pc:0x8010}}}\n{{{bt:0:0x8010:pc}}}\n"
    out, _ = run(log, compat=True, functions="short")
    assert "scale[/src/a.c:14]" in out
    assert "#0.1  0x0000000000008010 scale /src/a.c:14:5" in out
    out, _ = run(log, compat=True, functions="none")
    assert "<invalid>[/src/a.c:14]" in out
    out, _ = run(log, compat=True, paths="basename", demangle=False)
    assert "run[a.c:14]" in out and " _Z5scalei a.c:14:5 " in out


def test_symbol_element_is_always_demangled() -> None:
    out, _ = run("{{{symbol:_Z3foov}}} {{{symbol:}}}\n", compat=True, demangle=False)
    assert out == "S(_Z3foov) S()\n"


def test_no_mmap_covers_address() -> None:
    log = CONTEXT + "x {{{pc:0x9000}}} {{{bt:1:0x7000}}}\n"
    out, err = run(log, compat=True)
    assert "x [[[pc:0x9000]]] [[[bt:1:0x7000]]]\n" in out
    assert err == (
        "error: no mmap covers address\n"
        "x {{{pc:0x9000}}} {{{bt:1:0x7000}}}\n"
        "        ^\n"
        "error: no mmap covers address\n"
        "x {{{pc:0x9000}}} {{{bt:1:0x7000}}}\n"
        "                        ^\n"
    )


def test_colour_sequences() -> None:
    log = CONTEXT + f"{ESC}[1m{ESC}[34mB {{{{{{data:0xa000}}}}}}{ESC}[0m.\nnext\n"
    out, _ = run(log, compat=True, colour=True)
    lines = out.split("\n")
    assert lines[0].startswith(f"{ESC}[0;34m[[[ELF module{ESC}[0;32m #0x0 {ESC}[0;34m")
    # after bold, the colour is re-emitted without bold; highlight is cyan on blue, bold
    assert lines[1] == (f"{ESC}[0m{ESC}[1m{ESC}[0;34mB {ESC}[0;1;36mg_banner{ESC}[0;1;34m{ESC}[0m.")
    assert lines[2] == "next"


# --- llvm 19's data loss, reproduced in compat mode, fixed by default ------------------


def test_difference_contextual_lines_keep_their_text() -> None:
    log = "keep{{{module:0:prog:elf:aa01}}}skip\n{{{mmap:0x7000:0x1000:load:0:r:0}}}\n"
    out, _ = run(log, compat=True)
    assert out == '[[[ELF module #0x0 "prog"; BuildID=aa01 [0x7000-0x7fff](r)]]]\n'.replace(
        "[[[", "keep[[[", 1
    )
    out, _ = run(log)
    assert out == (
        'keep[[[ELF module #0x0 "prog"; BuildID=aa01]]]skip\n'
        '[[[ELF module #0x0 "prog"; adds [0x7000-0x7fff](r)]]]\n'
    )


def test_difference_mmap_line_does_not_vanish() -> None:
    log = CONTEXT + "pc {{{pc:0x8010}}} {{{mmap:0xc000:0x1000:load:0:r:0x5000}}} tail\n"
    out, _ = run(log, compat=True)
    assert out == MODULE_LINE.replace("(rw)]]]", "(rw),[0xc000-0xcfff](r)]]]")
    out, _ = run(log)
    assert out.endswith(
        'pc run[/src/a.c:14] [[[ELF module #0x0 "prog"; adds [0xc000-0xcfff](r)]]] tail\n'
    )


def test_difference_reset_is_always_shown() -> None:
    out, _ = run("{{{reset}}}\ntext {{{reset}}} more\n", compat=True)
    assert out == ""
    out, _ = run("{{{reset}}}\ntext {{{reset}}} more\n")
    assert out == "[[[reset]]]\ntext [[[reset]]] more\n"


def test_difference_every_contextual_element_on_a_line_counts() -> None:
    log = (
        "{{{module:0:prog:elf:aa01}}} {{{mmap:0x8000:0x1000:load:0:rx:0x1000}}}\n{{{pc:0x8010}}}\n"
    )
    out, err = run(log, compat=True)
    assert "[[[pc:0x8010]]]" in out and "no mmap covers address" in err
    out, err = run(log)
    assert out == (
        '[[[ELF module #0x0 "prog"; BuildID=aa01 [0x8000-0x8fff](rx)]]]\nrun[/src/a.c:14]\n'
    )
    assert err == ""


def test_difference_malformed_elements_are_kept() -> None:
    log = "a {{{PC:1}}} b {{{pc:0X1}}} c\n{{{module:0:x:ELF:12}}}\n"
    out, err = run(log, compat=True)
    assert out == "a  b  c\n"
    assert "error: tags must be all lowercase characters" in err
    out, err = run(log)
    assert out == "a {{{PC:1}}} b {{{pc:0X1}}} c\n{{{module:0:x:ELF:12}}}\n"
    assert err.splitlines() == [
        "log:1:6: error: tags must be all lowercase characters",
        "a {{{PC:1}}} b {{{pc:0X1}}} c",
        "     ^",
        "log:1:22: error: expected address; found '0X1'",
        "a {{{PC:1}}} b {{{pc:0X1}}} c",
        "                     ^",
        "log:2:15: error: unknown module type",
        "{{{module:0:x:ELF:12}}}",
        "              ^",
    ]


def test_difference_missing_symbols_give_best_effort_frames() -> None:
    log = (
        "{{{module:4:libc.so.6:elf:beef}}}\n{{{mmap:0x1000:0x1000:load:4:rx:0}}}\n"
        "{{{pc:0x1010}}} {{{data:0x1020}}}\n{{{bt:2:0x1084:ra}}}\n"
    )
    out, err = run(log, compat=True)
    assert out.splitlines()[1:] == ["[[[pc:0x1010]]] [[[data:0x1020]]]", "[[[bt:2:0x1084:ra]]]"]
    assert err == "error: could not find build ID\n" * 3
    out, err = run(log)
    assert out.splitlines()[1:] == [
        "(libc.so.6+0x10) (libc.so.6+0x20)",
        "    #2    0x0000000000001083 (libc.so.6+0x83)",
    ]
    assert err == (
        "log:3: warning: could not find build ID for ELF module #0x4 "
        '"libc.so.6"; BuildID=beef\n'
        "note: looked for it in: /nowhere\n"
    )


def test_difference_symbol_table_frames() -> None:
    log = CONTEXT + "{{{pc:0x8110}}}\n{{{bt:1:0x8111}}}\n{{{data:0xa800}}}\n"
    out, _ = run(log, compat=True)
    assert out.splitlines()[1:] == [
        "crash_here[<invalid>:0]",
        "    #1    0x0000000000008110 crash_here <invalid>:0:0 (prog+0x1110)",
        "<invalid>",
    ]
    out, _ = run(log)
    assert out.splitlines()[1:] == [
        "crash_here (prog+0x1110)",
        "    #1    0x0000000000008110 crash_here (prog+0x1110)",
        "(prog+0x3800)",
    ]


def test_difference_hexdict_notes() -> None:
    log = CONTEXT + (
        "regs {{{hexdict:RIP: 0x8010 RBX: 0xa004 RCX: 0 RDX: 0x1}}} end\n"
        "  {{{hexdict:\n"
        "    R8: 0x8110\n"
        "  }}}\n"
    )
    out, _ = run(log, compat=True)
    assert out == MODULE_LINE + "\n".join(log.splitlines()[4:]) + "\n"
    out, _ = run(log)
    assert out.splitlines()[1:] == [
        "regs {{{hexdict:RIP: 0x8010 RBX: 0xa004 RCX: 0 RDX: 0x1}}} end",
        "    RIP: 0x0000000000008010 D(_Z5scalei) /src/a.c:14:5 (prog+0x1010)",
        "    RBX: 0x000000000000a004 g_banner+0x4 (prog+0x3004)",
        "  {{{hexdict:",
        "    R8: 0x8110",
        "  }}}",
        "      R8: 0x0000000000008110 crash_here (prog+0x1110)",
    ]


def test_difference_lookup_warning_once_per_module_and_process() -> None:
    log = (
        "{{{module:1:gone:elf:dead}}}\n{{{mmap:0x1000:0x1000:load:1:rx:0}}}\n"
        "{{{pc:0x1010}}}\n{{{pc:0x1020}}}\n{{{reset}}}\n"
        "{{{module:1:gone:elf:dead}}}\n{{{mmap:0x1000:0x1000:load:1:rx:0}}}\n{{{pc:0x1010}}}\n"
    )
    _, err = run(log)
    assert err.count("warning: could not find build ID") == 2


# --- line endings and bytes ------------------------------------------------------------


def test_line_endings() -> None:
    log = CONTEXT.replace("\n", "\r\n") + "{{{bt:0:0x8011}}}\r\nlast"
    out, _ = run(log, compat=True)
    assert out.endswith(
        "\r\n    #0    0x0000000000008010 run /src/a.c:37:18 (prog+0x1010)\r\nlast\n"
    )
    out, _ = run(log)
    assert out.endswith("\r\n    #0    0x0000000000008010 run /src/a.c:37:18 (prog+0x1010)\r\nlast")


def cli_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_bytes_pass_through_unchanged() -> None:
    raw = (
        b"caf\xc3\xa9 \xff\xfe {{{symbol:x\xff}}}\r\n\x00nul\n"
        + CONTEXT.encode()
        + b"{{{pc:0x8010}}}"
    )
    for argv in ((), ("--compat=llvm19",)):
        out = io.BytesIO()
        status = symbolize.run_streams(
            [("log", io.BytesIO(raw))], out, lambda _t: None, cli_args(*argv), fake(), naming()
        )
        assert status == 0
        lines = out.getvalue().split(b"\n")
        assert lines[0] == b"caf\xc3\xa9 \xff\xfe S(x\xff)\r"
        assert lines[1] == b"\x00nul"


def test_exit_status() -> None:
    def status(log: bytes, *argv: str) -> int:
        return symbolize.run_streams(
            [("log", io.BytesIO(log))],
            io.BytesIO(),
            lambda _t: None,
            cli_args(*argv),
            fake(),
            naming(),
        )

    assert status(CONTEXT.encode() + b"{{{pc:0x8010}}}\n") == 0
    assert (
        status(b"{{{module:1:gone:elf:dead}}}\n{{{mmap:0x1:0x1:load:1:r:0}}}\n{{{pc:0x1}}}\n") == 0
    )
    assert status(b"{{{pc:0x8010}}}\n") == 1
    assert status(b"{{{pc:0x8010}}}\n", "--compat=llvm19") == 0


def test_json_records() -> None:
    records: list[Record] = []
    log = CONTEXT + "at {{{bt:1:0x8011}}} {{{data:0xa004}}} {{{pc:0x9999}}}\n"
    _out, _ = run(log, records=records)
    by_tag = [r["tag"] for r in records]
    assert by_tag == ["module", "mmap", "mmap", "mmap", "bt", "data", "pc"]
    bt = records[4]
    assert (bt["line"], bt["column"], bt["frame"], bt["type"]) == (5, 4, 1, None)
    assert bt["address"] == "0x8011" and bt["lookup_address"] == "0x8010"
    assert bt["module"] == {"id": 0, "name": "prog", "type": "elf", "build_id": "aa01"}
    assert bt["module_relative_address"] == "0x1010"
    assert [f["function"] for f in bt["frames"]] == ["D(_Z5scalei)", "run"]
    assert [f["inlined"] for f in bt["frames"]] == [True, False]
    assert records[5]["symbol"]["name"] == "g_banner" and records[5]["symbol"]["offset"] == 4
    assert records[6]["module"] is None
    assert records[6]["diagnostics"][0]["message"] == "no mmap covers address"
    json.dumps(records)


def test_json_output_from_the_command() -> None:
    out = io.BytesIO()
    log = (CONTEXT + "{{{pc:0x8010}}}\n").encode()
    symbolize.run_streams(
        [("log", io.BytesIO(log))],
        out,
        lambda _t: None,
        cli_args("--output-style=JSON"),
        fake(),
        naming(),
    )
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["tag"] for r in rows] == ["module", "mmap", "mmap", "mmap", "pc"]
    assert rows[-1]["frames"][0]["file"] == "/src/a.c"
