"""The sanitizers as real producers: clang-19's ASan, UBSan and TSan.

Online: a sanitizer starts `llvm-symbolizer-stackmark` as its external
symbolizer; its report must have the same frame lines as with
llvm-symbolizer-19. Offline: ASan's markup log (`enable_symbolizer_markup=1`)
is symbolized by `stackmark symbolize` with no options on the machine that
ran it, and its frames must be llvm-symbolizer-19's (given a debug-file
directory, since llvm does not look at a module's path).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support import sanitizers
from tests.support.build import compile_program
from tests.support.markup_programs import add_to_debug_dir, llvm, stackmark

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    require_tool(sanitizers.CLANG)
    require_tool(sanitizers.LLVM_SYMBOLIZER)
    assert sanitizers.OURS.is_file(), "the console script is installed with the package"


def _reports(
    program: Path, *args: str, variable: str, cache: Path, options_variable: str | None = None
) -> tuple[str, str]:
    """(with llvm-symbolizer-19, with ours): the two reports of one crash."""
    reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
    assert reference is not None

    def env(symbolizer: str) -> dict[str, str]:
        if options_variable is not None:  # e.g. TSAN_OPTIONS=external_symbolizer_path=...
            return {options_variable: f"{variable}={symbolizer}"}
        return {variable: symbolizer}

    theirs = sanitizers.report(program, *args, env=env(reference), cache_home=cache)
    ours = sanitizers.report(program, *args, env=env(str(sanitizers.OURS)), cache_home=cache)
    return theirs, ours


# --- the external symbolizer -----------------------------------------------------------


def test_an_asan_heap_overflow_report_has_llvm_symbolizers_frames(tmp_path: Path) -> None:
    program, _library = sanitizers.build_asan()
    theirs, ours = _reports(program, "heap", variable="ASAN_SYMBOLIZER_PATH", cache=tmp_path)
    expected = sanitizers.frame_lines(theirs)
    # The crash is in the library's inlined helper, called from the program.
    assert any("in read_slot " in line and "sanitizer_lib.c:" in line for line in expected)
    assert any("in run_report " in line for line in expected), theirs
    assert sanitizers.frame_lines(ours) == expected, ours


def test_an_asan_global_overflow_names_the_variable_and_its_declaration(tmp_path: Path) -> None:
    """DATA requests: the global's name, size and declaration line."""
    program, _library = sanitizers.build_asan()
    theirs, ours = _reports(program, "global", variable="ASAN_SYMBOLIZER_PATH", cache=tmp_path)
    expected = sanitizers.frame_lines(theirs)
    assert any("global variable 'shelf_names'" in line for line in expected), theirs
    assert sanitizers.frame_lines(ours) == expected, ours


def test_an_asan_stack_use_after_return_report_has_llvm_symbolizers_frames(
    tmp_path: Path,
) -> None:
    program, _library = sanitizers.build_asan()
    reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
    assert reference is not None
    reports = [
        sanitizers.report(
            program,
            "stack",
            env={
                "ASAN_SYMBOLIZER_PATH": symbolizer,
                "ASAN_OPTIONS": "detect_stack_use_after_return=1",
            },
            cache_home=tmp_path,
        )
        for symbolizer in (reference, str(sanitizers.OURS))
    ]
    expected = sanitizers.frame_lines(reports[0])
    assert any("in pack_crate " in line for line in expected), reports[0]
    assert any("'crate' (line" in line for line in expected), reports[0]
    assert sanitizers.frame_lines(reports[1]) == expected, reports[1]


def test_options_a_sanitizer_cannot_pass_come_from_llvm_symbolizer_opts(tmp_path: Path) -> None:
    program, _library = sanitizers.build_asan()
    reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
    assert reference is not None
    reports = [
        sanitizers.report(
            program,
            "heap",
            env={"ASAN_SYMBOLIZER_PATH": symbolizer, "LLVM_SYMBOLIZER_OPTS": "--basenames"},
            cache_home=tmp_path,
        )
        for symbolizer in (reference, str(sanitizers.OURS))
    ]
    expected = sanitizers.frame_lines(reports[0])
    assert any(" sanitizer_lib.c:" in line for line in expected), reports[0]
    assert sanitizers.frame_lines(reports[1]) == expected, reports[1]


def test_a_ubsan_report_has_llvm_symbolizers_location_and_frames(tmp_path: Path) -> None:
    program = sanitizers.build_ubsan()
    reference = shutil.which(sanitizers.LLVM_SYMBOLIZER)
    assert reference is not None
    reports = [
        sanitizers.report(
            program,
            env={"UBSAN_SYMBOLIZER_PATH": symbolizer, "UBSAN_OPTIONS": "print_stacktrace=1"},
            cache_home=tmp_path,
        )
        for symbolizer in (reference, str(sanitizers.OURS))
    ]
    expected = sanitizers.frame_lines(reports[0])
    assert any("sanitizer_ubsan.c:6:" in line and "runtime error" in line for line in expected)
    assert any("in add_units " in line for line in expected), reports[0]
    assert sanitizers.frame_lines(reports[1]) == expected, reports[1]


def test_a_tsan_race_report_has_llvm_symbolizers_frames_and_global(tmp_path: Path) -> None:
    program = sanitizers.build_tsan()
    theirs, ours = _reports(
        program,
        variable="external_symbolizer_path",
        options_variable="TSAN_OPTIONS",
        cache=tmp_path,
    )
    expected = sanitizers.frame_lines(theirs)
    assert any("#0 bump " in line and "sanitizer_tsan.c:" in line for line in expected), theirs
    assert any("Location is global 'stock_level'" in line for line in expected), theirs
    assert sanitizers.frame_lines(ours) == expected, ours


# --- the external symbolizer on its own (llvm-symbolizer's address mode) ----------------


def _both(args: list[str], requests: str = "") -> tuple[str, str]:
    def run(tool: str) -> str:
        proc = subprocess.run(
            [tool, *args], input=requests, capture_output=True, text=True, check=True
        )
        return proc.stdout

    return run(sanitizers.LLVM_SYMBOLIZER), run(str(sanitizers.OURS))


def test_protocol_requests_are_answered_as_llvm_symbolizer_answers_them() -> None:
    """The exact bytes compiler-rt parses: CODE with inline frames, DATA, unknown files."""
    program, library = sanitizers.build_asan()
    symbols = subprocess.run(
        ["nm", "-S", "--defined-only", str(library)], capture_output=True, text=True, check=True
    ).stdout
    places = {
        fields[-1]: (int(fields[0], 16), int(fields[1], 16))
        for fields in map(str.split, symbols.splitlines())
        if len(fields) == 4
    }
    (count_stock, size), (shelf_total, _) = places["count_stock"], places["shelf_total"]
    requests = "".join(
        [
            *(f'CODE "{library}" 0x{count_stock + delta:x}\n' for delta in range(0, size, 2)),
            f'DATA "{library}" 0x{shelf_total:x}\n',
            f'DATA "{library}" 0x{shelf_total + 2:x}\n',
            f'CODE "{program}:x86_64" 0x{count_stock:x}\n',
            'CODE "/no/such/module" 0x10\n',
            'DATA "/no/such/module" 0x10\n',
        ]
    )
    theirs, ours = _both(["--demangle", "--inlines", "--default-arch=x86_64"], requests)
    assert "read_slot\n" in theirs and "shelf_total\n" in theirs
    assert ours == theirs
    theirs, ours = _both(["--no-demangle", "--no-inlines", "--default-arch=x86_64"], requests)
    assert "read_slot\n" not in theirs
    assert ours == theirs


def test_address_mode_with_obj_matches_llvm_symbolizer() -> None:
    _program, library = sanitizers.build_asan()
    for options in (
        ["-e", str(library), "0x1200", "0x1230", "0x12a0"],
        ["--obj", str(library), "--pretty-print", "--print-address", "0x1230"],
        ["--exe", str(library), "--basenames", "--functions=short", "0x1230"],
        ["-e", str(library), "not-a-number", "077"],
    ):
        theirs, ours = _both(options)
        assert ours == theirs, options


@pytest.mark.parametrize(
    ("compiler", "flags"),
    [
        ("clang++-19", ("-g", "-O0")),
        ("clang++-19", ("-g", "-O2")),
        ("clang++-19", ("-gdwarf-4", "-O1")),
        ("g++", ("-g", "-O0")),
        ("g++", ("-gdwarf-4", "-O2")),
    ],
)
def test_frame_requests_list_the_locals_as_llvm_symbolizer_does(
    compiler: str, flags: tuple[str, ...]
) -> None:
    """FRAME (HWASan's stack reports): every variable and parameter of the subroutine at
    each byte of the program's functions, with declaration, frame offset, size and tag,
    from expressions and location lists (DWARF 4 and 5)."""
    require_tool(compiler)
    program = compile_program(
        "sanitizer_frame_locals", ["sanitizer_frame_locals.cpp"], compiler=compiler, flags=flags
    )
    symbols = subprocess.run(
        ["nm", "-S", "--defined-only", "-C", str(program)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    requests = []
    for line in symbols.splitlines():
        fields = line.split(maxsplit=3)
        if (
            len(fields) == 4
            and fields[2] in "tTwW"
            and fields[3].startswith(("fill", "int twice", "double twice", "main"))
        ):
            start, size = int(fields[0], 16), int(fields[1], 16)
            requests += [f'FRAME "{program}" 0x{a:x}\n' for a in range(start, start + size)]
    assert len(requests) > 100
    theirs, ours = _both([], "".join(requests))
    assert "buffer\n" in theirs and "\nblock_local\n" in theirs
    assert ours == theirs


# --- the markup log, symbolized offline with no options ------------------------------------


def _markup_log(program: Path, tmp_path: Path) -> bytes:
    text = sanitizers.report(
        program, "heap", env={"ASAN_OPTIONS": "enable_symbolizer_markup=1"}, cache_home=tmp_path
    )
    assert "{{{module:" in text and "{{{bt:" in text, text
    return text.encode()


_FRAME = re.compile(r"^\s+#\d+(\.\d+)?\s+0x")


def _frames(text: str) -> list[str]:
    return [line for line in text.splitlines() if _FRAME.match(line)]


def test_an_asan_markup_log_is_symbolized_with_no_options(tmp_path: Path) -> None:
    program, library = sanitizers.build_asan()
    log = _markup_log(program, tmp_path)
    debug_dir = tmp_path / "debug"
    add_to_debug_dir(debug_dir, program)
    add_to_debug_dir(debug_dir, library)
    reference = llvm(
        log, f"--debug-file-directory={debug_dir}", "--debug-file-directory=/usr/lib/debug"
    )
    # stackmark leaves out llvm's ` <invalid>:0:0` after a name from the symbol table only.
    expected = [line.replace(" <invalid>:0:0", "") for line in _frames(reference.text)]
    assert any("read_slot" in line and "sanitizer_lib.c:" in line for line in expected)
    ours = stackmark(log)
    assert ours.status == 0, ours.stderr.decode()
    assert _frames(ours.text) == expected
    assert b"could not find build ID" not in ours.stderr


def test_a_module_rebuilt_since_the_log_is_a_warning_that_names_its_file(tmp_path: Path) -> None:
    program, library = sanitizers.build_asan()
    log = _markup_log(program, tmp_path)
    # The library at the path the log names is now another build.
    moved = tmp_path / "lib" / library.name
    moved.parent.mkdir()
    shutil.copyfile(sanitizers.build_ubsan(), moved)
    log = log.replace(str(library).encode(), str(moved).encode())
    ours = stackmark(log)
    errors = ours.stderr.decode()
    assert f"warning: {moved} is not the file that ran" in errors, errors
    assert "--obj FILE" in errors and "--symbol-path DIR" in errors
    assert ours.status == 0  # by default, unresolved frames are only warned about
    assert stackmark(log, "--fail-on-unresolved").status == 3
    # Given the right file, every frame resolves, and the status says so.
    resolved = stackmark(log, f"--obj={library}", "--fail-on-unresolved")
    assert resolved.status == 0, resolved.stderr.decode()
    assert any("read_slot" in line for line in _frames(resolved.text))


def test_a_relative_module_name_is_found_under_a_symbol_path(tmp_path: Path) -> None:
    program, library = sanitizers.build_asan()
    log = _markup_log(program, tmp_path)
    root = tmp_path / "symbols"
    (root / "lib").mkdir(parents=True)
    shutil.copyfile(sanitizers.build_ubsan(), root / "lib" / library.name)  # the wrong build
    log = log.replace(str(library).encode(), f"lib/{library.name}".encode())
    ours = stackmark(log, f"--symbol-path={root}", "--fail-on-unresolved")
    assert (
        f"warning: {root / 'lib' / library.name} is not the file that ran" in ours.stderr.decode()
    )
    assert ours.status == 3


def test_bad_requests_get_llvm_symbolizers_answers_and_the_process_goes_on(
    tmp_path: Path,
) -> None:
    """A directory, a source file, an offset past 64 bits, a missing offset or module:
    each gets the answer llvm-symbolizer gives, and the next request is answered."""
    _program, library = sanitizers.build_asan()
    source = tmp_path / "notes.txt"
    source.write_text("not an ELF file\n")
    requests = "".join(
        [
            f'CODE "{tmp_path}" 0x10\n',
            f'CODE "{source}" 0x10\n',
            f'DATA "{source}" 0x10\n',
            f'FRAME "{source}" 0x1\n',
            f'CODE "{library}" 0xffffffffffffffff\n',
            f'CODE "{library}" 0x10000000000000000\n',
            "\n",
            "CODE\n",
            f'CODE "{library}"\n',
            f'CODE "{library}" 0x1200\n',
        ]
    )
    theirs, ours = _both([], requests)
    assert theirs.count("\n\n") == 10  # one answer a line, the empty one too
    assert ours == theirs


def test_a_damaged_debug_info_section_gets_unknown_answers_not_a_crash(tmp_path: Path) -> None:
    """The sanitizer's symbolizer must outlive a bad file: each request is answered."""
    program = compile_program(
        "sanitizer_frame_locals",
        ["sanitizer_frame_locals.cpp"],
        compiler="clang++-19",
        flags=("-g", "-O0"),
    )
    headers = subprocess.run(
        ["readelf", "-SW", str(program)], capture_output=True, text=True, check=True
    ).stdout
    line = next(row for row in headers.splitlines() if ".debug_info" in row)
    offset, size = (int(field, 16) for field in line.split("]", 1)[1].split()[3:5])
    damaged = tmp_path / "damaged"
    data = bytearray(program.read_bytes())
    data[offset + 12 : offset + size] = b"\xff" * (size - 12)  # every DIE after the header
    damaged.write_bytes(bytes(data))
    fill = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    address = next(int(row.split()[0], 16) for row in fill.splitlines() if "fill" in row)
    # Another build (another build ID) of the same program still answers afterwards.
    other = compile_program(
        "sanitizer_frame_locals", ["sanitizer_frame_locals.cpp"], compiler="g++", flags=("-g",)
    )
    symbols = subprocess.run(["nm", str(other)], capture_output=True, text=True, check=True)
    other_fill = next(
        int(row.split()[0], 16) for row in symbols.stdout.splitlines() if "fill" in row
    )
    requests = (
        "".join(f'{command} "{damaged}" 0x{address:x}\n' for command in ("CODE", "DATA", "FRAME"))
        + f'FRAME "{other}" 0x{other_fill + 8:x}\n'
    )
    proc = subprocess.run(
        [str(sanitizers.OURS)], input=requests, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    answers = proc.stdout.split("\n\n")
    assert len(answers) == 5 and answers[-1] == ""
    assert answers[2] == "??"  # FRAME on the damaged file
    assert "\nbuffer\n" in answers[3]  # the good file still answers


# --- debuginfod, build ID checked ---------------------------------------------------------


def test_a_stripped_file_is_answered_from_debuginfod_with_the_build_id_checked(
    tmp_path: Path,
) -> None:
    from tests.support.debuginfod_programs import build_programs, cli_environment, symbol_address
    from tests.support.debuginfod_servers import ScriptedServer, Serve

    builds = build_programs()
    split, other = builds["split"], builds["beta_stripped"]
    assert split.debuginfo is not None
    binary = tmp_path / "app"  # alone: its .gnu_debuglink file is not beside it
    shutil.copyfile(split.executable, binary)
    address = symbol_address(split.debuginfo, "main")
    request = f'CODE "{binary}" 0x{address:x}\n'
    route = f"/buildid/{split.build_id}/debuginfo"

    def ask(tool: str, server: ScriptedServer, cache: str) -> subprocess.CompletedProcess[str]:
        env = cli_environment(tmp_path / cache, urls=server.url)
        return subprocess.run(
            [tool], input=request, capture_output=True, text=True, env=env, timeout=120
        )

    with ScriptedServer() as server:
        server.set_routes({route: Serve(split.debuginfo.read_bytes())})
        theirs = ask(sanitizers.LLVM_SYMBOLIZER, server, "llvm")
        ours = ask(str(sanitizers.OURS), server, "ours")
        assert "debuginfod_alpha.c:" in theirs.stdout
        assert ours.stdout == theirs.stdout
        # A server that hands out another program's file under that build ID: refused.
        server.set_routes({route: Serve(other.executable.read_bytes())})
        refused = ask(str(sanitizers.OURS), server, "refused")
    assert "debuginfod_alpha.c:" not in refused.stdout and refused.stdout.endswith("\n\n")
    assert f"build ID {split.build_id}" in refused.stderr, refused.stderr
