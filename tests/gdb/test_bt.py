"""`stackmark bt`: markup, CBF and JSON backtraces from GDB.

Oracles: GDB's own `bt` (function names), llvm-symbolizer-19 reading the
markup, the kernel's memory map (`info proc mappings`), readelf's build
IDs, and the CBF and image-map decoders reading back what was printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stackmark.formats import cbf
from stackmark.formats.imagemap import decode_image_map
from stackmark.formats.swift_backtrace import decode_base64
from stackmark.model import FrameKind
from tests.conftest import require_tool
from tests.gdb.conftest import Program, marked, parse_bt, run_gdb, section, stop_at
from tests.support.build import REPO, build_id_of, compile_program, run
from tests.support.sessions import run_in_session

_LLVM_FRAME = re.compile(r"^\s*#(\d+)(?:\.(\d+))?\s+0x[0-9a-f]+ (\S+)")
_LLVM_LOCATION = re.compile(r"^\s*#(\d+)(?:\.\d+)?\s+0x[0-9a-f]+ (\S+) (/\S+):(\d+):(\d+) ")
_BT_ELEMENT = re.compile(r"\{\{\{bt:(\d+):0x([0-9a-f]+):(pc|ra)\}\}\}")


def debug_directory(tmp_path: Path, *files: Path) -> Path:
    """A --debug-file-directory with .build-id/xx/rest.debug links to `files`."""
    root = tmp_path / "debug"
    for file in files:
        build_id = build_id_of(file)
        link = root / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(file)
    return root


def llvm_functions(markup: str, debug_dir: Path) -> list[str]:
    """Function names llvm-symbolizer-19 --filter-markup gives the frames, in order."""
    symbolizer = require_tool("llvm-symbolizer-19")
    result = run_in_session(
        [
            symbolizer,
            "--filter-markup",
            f"--debug-file-directory={debug_dir}",
            "--debug-file-directory=/usr/lib/debug",
        ],
        timeout=60,
        stdin_text=markup,
    )
    return [m[3] for line in result.stdout.splitlines() if (m := _LLVM_FRAME.match(line))]


def llvm_chains(markup: str, debug_dir: Path) -> list[list[tuple[str, str, int, int]]]:
    """Per physical frame, llvm-symbolizer-19's inline chain (innermost first) as
    (function, file, line, column), for the frames it locates in a source file."""
    symbolizer = require_tool("llvm-symbolizer-19")
    result = run_in_session(
        [symbolizer, "--filter-markup", f"--debug-file-directory={debug_dir}"],
        timeout=60,
        stdin_text=markup,
    )
    chains: dict[int, list[tuple[str, str, int, int]]] = {}
    for line in result.stdout.splitlines():
        if m := _LLVM_LOCATION.match(line):
            chains.setdefault(int(m[1]), []).append((m[2], m[3], int(m[4]), int(m[5])))
    return [chains[n] for n in sorted(chains)]


def bt_elements(markup: str) -> list[tuple[int, int, str]]:
    return [(int(n), int(a, 16), k) for n, a, k in _BT_ELEMENT.findall(markup)]


@pytest.mark.parametrize("args", ["chain", "signal"])
@pytest.mark.parametrize("stripped", [False, True], ids=["eh_frame", "stripped"])
def test_markup_symbolizes_to_the_functions_gdb_shows(
    gdb_path: str,
    program: Program,
    stripped_program: Program,
    tmp_path: Path,
    args: str,
    stripped: bool,
) -> None:
    built = stripped_program if stripped else program
    result = run_gdb(
        [*stop_at(), *section("bt", "bt"), *section("markup", "stackmark bt --markup")],
        built.exe,
        args=[args],
    )
    gdb_names = [f.function for f in parse_bt(marked(result, "bt"))]
    markup = marked(result, "markup")
    llvm_names = llvm_functions(markup, debug_directory(tmp_path, built.exe, built.lib))
    # GDB shows the trampoline as "<signal handler called>"; llvm names it.
    expected = ["__restore_rt" if n == "<signal handler called>" else n for n in gdb_names]
    assert llvm_names == expected
    assert "mid" in llvm_names or args == "signal"  # the inlined frame is expanded by llvm
    kinds = [kind for _n, _a, kind in bt_elements(markup)]
    if args == "chain":
        assert kinds == ["pc"] + ["ra"] * (len(kinds) - 1)
    else:  # stop_here, on_sigill, __restore_rt (pc), faulting (pc, interrupted), callers
        assert kinds[:5] == ["pc", "ra", "pc", "pc", "ra"]


def test_inline_frames_are_folded(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("bt", "bt"), *section("markup", "stackmark bt")], program.exe
    )
    frames = parse_bt(marked(result, "bt"))
    elements = bt_elements(marked(result, "markup"))
    assert [f.function for f in frames] == [
        "stop_here",
        "leaf",
        "lib_call",
        "mid",
        "outer",
        "dyn",
        "main",
    ]
    # mid is inlined into outer: one physical frame, at the address GDB shows for mid.
    assert len(elements) == len(frames) - 1
    assert [n for n, _a, _k in elements] == list(range(len(elements)))
    mid = next(f for f in frames if f.function == "mid")
    assert elements[3][1] == mid.address


def test_cbf_decodes_back_to_the_same_frames(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [
            *stop_at(),
            *section("markup", "stackmark bt --markup"),
            *section("cbf", "stackmark bt --cbf"),
        ],
        program.exe,
        args=["signal"],
    )
    markup = marked(result, "markup")
    lines = marked(result, "cbf").splitlines()
    assert lines[0].startswith("cbf: ") and lines[1].startswith("images: ")
    encoded = lines[0].removeprefix("cbf: ")
    assert "=" not in encoded  # Swift's base64 has no padding
    decoded = cbf.decode(decode_base64(encoded).data)
    assert decoded.ending is cbf.Ending.END and decoded.word_bits == 64
    kinds = {"pc": FrameKind.PC, "ra": FrameKind.RA}
    expected = [(address, kinds[kind]) for _n, address, kind in bt_elements(markup)]
    assert [(f.address, f.kind) for f in decoded.frames] == expected
    images = decode_image_map(decode_base64(lines[1].removeprefix("images: ")).data)
    by_name = {image.name: image for image in images.images}
    for path in (program.exe, program.lib):
        image = by_name[path.name]
        assert image.build_id is not None and image.build_id.hex() == build_id_of(path)
        assert image.path == str(path)
    modules = re.findall(r"\{\{\{module:\d+:([^:]+):elf:([0-9a-f]+)\}\}\}", markup)
    assert [(i.name, i.build_id.hex() if i.build_id else "") for i in images.images] == modules


def test_json(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("bt", "bt"), *section("json", "stackmark bt --json")],
        program.exe,
    )
    document = json.loads(marked(result, "json"))
    (thread,) = document["threads"]
    names = [name["name"] for frame in thread["frames"] for name in frame["functions"]]
    assert names == [f.function for f in parse_bt(marked(result, "bt"))]
    modules = {m["name"]: m for m in document["modules"]}
    assert modules["dbg_main"]["build_id"] == build_id_of(program.exe)
    assert modules["libdbg_lib.so"]["build_id"] == build_id_of(program.lib)
    assert document["modules"][0]["name"] == "dbg_main"  # the program is module 0
    frame = thread["frames"][2]  # lib_call, in the library
    assert frame["module"] == modules["libdbg_lib.so"]["id"] and frame["kind"] == "ra"


def test_json_has_the_frames_and_full_paths_of_the_markup(gdb_path: str, tmp_path: Path) -> None:
    """A crash at the first instruction of an inlined call
    (tests/fixtures/src/dbg_inline_crash.c): GDB's own `bt` hides the inlined
    weigh; `--json` lists it, with the full paths and lines llvm-symbolizer-19
    gives the `--markup` of the same stop, and the names of the `--cbf` listing."""
    exe = compile_program(
        "dbg_inline_crash", ["dbg_inline_crash.c"], flags=("-g", "-O2", "-fomit-frame-pointer")
    )
    result = run_gdb(
        [
            "run",
            *section("bt", "bt"),
            *section("json", "stackmark bt --json"),
            *section("markup", "stackmark bt --markup"),
            *section("cbf", "stackmark bt --cbf"),
        ],
        exe,
        args=["crash"],
    )
    assert "SIGSEGV" in result.stdout
    assert [f.function for f in parse_bt(marked(result, "bt"))] == ["stock", "main"]
    frames = json.loads(marked(result, "json"))["threads"][0]["frames"]
    chains = [
        [(f["name"], f["file"], f["line"], f["column"]) for f in frame["functions"]]
        for frame in frames
        if frame["functions"][0].get("column")
    ]
    expected = llvm_chains(marked(result, "markup"), debug_directory(tmp_path, exe))
    assert chains[0][0][:2] == ("weigh", str(REPO / "tests" / "fixtures" / "src" / exe.name) + ".c")
    assert chains == expected
    cbf_names = [
        m[3] for line in marked(result, "cbf").splitlines() if (m := _LLVM_FRAME.match(line))
    ]
    assert [f["name"] for frame in frames for f in frame["functions"]] == cbf_names


def test_segments_match_the_kernels_mappings(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [
            *stop_at(),
            *section("json", "stackmark bt --json"),
            *section("maps", "info proc mappings"),
        ],
        program.exe,
    )
    modules = json.loads(marked(result, "json"))["modules"]
    mappings = [
        (int(row[0], 16), int(row[1], 16), Path(row[5]).resolve() if len(row) == 6 else None)
        for row in (line.split() for line in marked(result, "maps").splitlines())
        if len(row) >= 5 and row[0].startswith("0x")
    ]
    for module in modules:
        if not module["path"].startswith("/"):
            continue  # the vDSO
        segments = [
            (int(s["start"], 16), int(s["start"], 16) + int(s["size"], 16))
            for s in module["segments"]
        ]
        path = Path(module["path"]).resolve()
        of_file = [(lo, hi) for lo, hi, file in mappings if file == path]
        anonymous = [(lo, hi) for lo, hi, file in mappings if file is None]
        assert of_file, module["name"]
        # Each mapping of the file lies in a segment; each segment is mapped (the
        # zero-filled end of a data segment is an anonymous mapping).
        assert all(within(m, spans(segments)) for m in of_file), module["name"]
        assert all(within(s, spans(of_file + anonymous)) for s in segments), module["name"]


def within(inner: tuple[int, int], ranges: list[tuple[int, int]]) -> bool:
    return any(low <= inner[0] and inner[1] <= high for low, high in ranges)


def spans(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Adjacent ranges merged."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and merged[-1][1] == low:
            merged[-1] = (merged[-1][0], high)
        else:
            merged.append((low, high))
    return merged


def test_all_threads(gdb_path: str, stripped_program: Program) -> None:
    result = run_gdb(
        [*stop_at(), *section("markup", "stackmark bt --all-threads"), "info threads"],
        stripped_program.exe,
        args=["threads"],
    )
    markup = marked(result, "markup")
    titles = [line for line in markup.splitlines() if line.startswith("Thread ")]
    assert len(titles) == 3
    assert markup.count("{{{reset}}}") == 1
    assert len(bt_elements(markup)) > 6


def test_full_adds_the_frames_past_main(gdb_path: str, program: Program) -> None:
    result = run_gdb(
        [
            *stop_at(),
            *section("plain", "stackmark bt --json"),
            *section("full", "stackmark bt --json --full"),
            *section("bt", "bt"),
        ],
        program.exe,
    )

    def names(marker: str) -> list[str]:
        frames = json.loads(marked(result, marker))["threads"][0]["frames"]
        return [f["functions"][-1]["name"] for f in frames]

    assert names("plain")[-1] == "main"
    assert names("full")[: len(names("plain"))] == names("plain")
    assert "__libc_start_call_main" in names("full")
    assert "selected frame" not in result.stderr
    assert parse_bt(marked(result, "bt"))[-1].function == "main"  # past-main is restored


def test_core_file_matches_the_live_process(
    gdb_path: str, stripped_program: Program, tmp_path: Path
) -> None:
    core = tmp_path / "core"
    live = run_gdb(
        [*stop_at(), *section("markup", "stackmark bt"), f"gcore {core}"], stripped_program.exe
    )
    from_core = run_gdb([*section("markup", "stackmark bt")], stripped_program.exe, core=core)
    assert marked(from_core, "markup") == marked(live, "markup")
    # `stackmark unwind CORE`, with no debugger at all, describes the same modules.
    unwound = run([Path(__file__).parents[2] / ".venv" / "bin" / "stackmark", "unwind", core])
    context = [line for line in marked(live, "markup").splitlines() if "{{{bt:" not in line]
    assert [line for line in unwound.splitlines() if "{{{bt:" not in line] == context


def test_no_process_is_a_clear_error(gdb_path: str, program: Program) -> None:
    result = run_gdb(["stackmark bt"], program.exe)
    assert "the program is not being run" in result.stderr
    assert "Traceback" not in result.output


def test_selected_thread_and_frame_are_kept(gdb_path: str, stripped_program: Program) -> None:
    result = run_gdb(
        [
            *stop_at(),
            "thread 2",
            "frame 1",
            "stackmark bt --all-threads --full",
            *section("after", "frame"),
            *section("thread", "thread"),
        ],
        stripped_program.exe,
        args=["threads"],
    )
    assert marked(result, "after").startswith("#1 ")
    assert "Current thread is 2 " in marked(result, "thread")


BIASES = "python exec({!r})".format(
    "from stackmark_gdb.backend import GdbBackend\n"
    "from stackmark.debugger.modules import loaded_modules\n"
    "backend = GdbBackend()\n"
    "from_sections = backend._biases_from_sections()\n"
    "import os\n"
    "for module in loaded_modules(backend):\n"
    "    if module.path and module.path.startswith('/'):\n"
    "        print('BIAS', module.name, hex(module.load_bias),\n"
    "              hex(from_sections[os.path.realpath(module.path)]))\n"
)


def test_section_addresses_give_the_same_biases(gdb_path: str, program: Program) -> None:
    """The fallback for targets without a memory map (`info files`) agrees with the
    ELF headers found through `info proc mappings`."""
    result = run_gdb([*stop_at(), BIASES], program.exe)
    rows = [line.split()[1:] for line in result.stdout.splitlines() if line.startswith("BIAS")]
    assert {name for name, _a, _b in rows} >= {"dbg_main", "libdbg_lib.so", "libc.so.6"}
    assert all(a == b for _name, a, b in rows), rows
