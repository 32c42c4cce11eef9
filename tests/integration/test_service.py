"""`stackmark serve` for real on 127.0.0.1: v5 answers against llvm-symbolizer-19,
`/symbolize` against `stackmark symbolize` byte for byte, Breakpad stores
(a directory and an HTTP server), heartbeats and metrics.

Hostile requests are in tests/hostile/test_service_hostile.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.symbols.debug_id import debug_id_from_build_id
from tests.conftest import require_tool
from tests.support.build import build_id_of, compile_program
from tests.support.debuginfod_programs import cli_environment, stackmark_cli, symbol_address
from tests.support.debuginfod_servers import ScriptedServer, Serve
from tests.support.service import Service
from tests.support.symbolizer_oracle import llvm_frames


@pytest.fixture(scope="module")
def program() -> Path:
    return compile_program(
        "service_inline", ["gsym_inline.c", "gsym_inline_b.c"], flags=["-g", "-O2"]
    )


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, program: Path) -> Iterator[Service]:
    work = tmp_path_factory.mktemp("serve")
    with Service(work, ["--symbol-path", str(program.parent), "--no-debuginfod"]) as running:
        yield running


def addresses_in(binary: Path, functions: list[str], step: int = 3) -> list[int]:
    """Addresses every `step` bytes through the first 96 bytes of each function."""
    found = []
    for name in functions:
        start = symbol_address(binary, name)
        found += range(start, start + 96, step)
    return found


def v5_chain(frame: dict[str, object]) -> list[tuple[str, str, int]]:
    """A v5 frame as (function, file, line), innermost first, llvm's "" and 0 for unknowns."""
    inlines = frame.get("inlines", [])
    assert isinstance(inlines, list)
    chain = [*inlines, frame]
    return [
        (str(f.get("function", "")), str(f.get("file", "")), int(f.get("line", 0)))  # type: ignore[union-attr, call-overload]
        for f in chain
        if "function" in f or "file" in f  # type: ignore[operator]
    ]


def test_v5_answers_what_llvm_symbolizer_answers(service: Service, program: Path) -> None:
    require_tool("llvm-symbolizer-19")
    addresses = addresses_in(program, ["compute", "checked", "main"])
    debug_id = debug_id_from_build_id(build_id_of(program))
    status, answer = service.v5(
        {
            "jobs": [
                {
                    "memoryMap": [[program.name, debug_id]],
                    "stacks": [[[0, address] for address in addresses]],
                }
            ]
        }
    )
    assert status == 200, answer
    assert isinstance(answer, dict)
    result = answer["results"][0]
    assert result["found_modules"] == {f"{program.name}/{debug_id}": True}
    expected = llvm_frames(program, addresses, demangle=True)
    frames = result["stacks"][0]
    assert [f["module_offset"] for f in frames] == [hex(a) for a in addresses]
    inlined = 0
    for frame, address in zip(frames, addresses, strict=True):
        want = [(name, path, line) for name, path, line, _column in expected[address]]
        assert v5_chain(frame) == want, hex(address)
        inlined += len(want) > 1
    assert inlined, "the fixture must exercise inline chains"


def test_v5_function_offset_counts_from_the_function_symbol(
    service: Service, program: Path
) -> None:
    start = symbol_address(program, "checked")
    debug_id = debug_id_from_build_id(build_id_of(program))
    status, answer = service.v5(
        {"memoryMap": [[program.name, debug_id]], "stacks": [[[0, start + 5]]]}
    )
    assert status == 200
    frame = answer["results"][0]["stacks"][0][0]  # type: ignore[index]
    assert (frame["function"], frame["function_offset"]) == ("checked", "0x5")


def test_v5_marks_modules_found_missing_and_unasked(service: Service, program: Path) -> None:
    debug_id = debug_id_from_build_id(build_id_of(program))
    missing = "0" * 32 + "0"
    status, answer = service.v5(
        {
            "memoryMap": [[program.name, debug_id], ["libgone.so", missing], ["unused.so", ""]],
            "stacks": [[[1, 16], [-1, 32], [0, -1]]],
        }
    )
    assert status == 200
    result = answer["results"][0]  # type: ignore[index]
    assert result["found_modules"] == {
        f"{program.name}/{debug_id}": True,  # looked up, though its one offset is -1
        f"libgone.so/{missing}": False,
        "unused.so/": None,
    }
    assert result["stacks"] == [
        [
            {"frame": 0, "module": "libgone.so", "module_offset": "0x10"},
            {"frame": 1, "module": "<unknown>", "module_offset": "0x20"},
            {"frame": 2, "module": program.name, "module_offset": "-0x1"},
        ]
    ]


def markup_log(program: Path) -> str:
    build_id = build_id_of(program)
    base = 0x7F1200000000
    frames = [base + symbol_address(program, f) + 4 for f in ("compute", "checked", "main")]
    lines = [
        "service log: starting",
        "{{{reset}}}",
        f"{{{{{{module:0:{program.name}:elf:{build_id}}}}}}}",
        f"{{{{{{mmap:{base:#x}:0x100000:load:0:rx:0x0}}}}}}",
        *(f"{{{{{{bt:{i}:{a:#x}}}}}}}" for i, a in enumerate(frames)),
        "{{{pc:0x1}}} outside every module",
        "service log: done",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("style", ["llvm", "json"])
def test_symbolize_endpoint_prints_what_the_cli_prints(
    service: Service, program: Path, tmp_path: Path, style: str
) -> None:
    log = markup_log(program)
    env = cli_environment(tmp_path / "cache")
    cli = stackmark_cli(
        "symbolize",
        "--symbol-path",
        program.parent,
        "--no-debuginfod",
        "--gsym-cache",
        "build",
        f"--output-style={style}",
        "--color=never",
        env=env,
        stdin=log,
    )
    query = "?format=json" if style == "json" else ""
    status, headers, body = service.request("POST", "/symbolize" + query, log)
    assert status == 200
    assert body.decode() == cli.stdout
    assert headers["x-stackmark-status"] == str(cli.returncode)
    assert "x-stackmark-partial" not in headers


SYM_TEMPLATE = """MODULE Linux x86_64 {debug_id} {name}
INFO CODE_ID {code_id}
FILE 0 /src/store/main.c
FILE 1 /src/store/inline.h
INLINE_ORIGIN 0 helper_inlined
FUNC 1000 40 0 breakpad_main
INLINE 0 7 0 0 1010 10
1000 10 5 0
1010 10 22 1
1020 20 9 0
PUBLIC 2000 0 public_only
"""


def write_store(root: Path, name: str, debug_id: str, code_id: str) -> Path:
    path = root / name / debug_id / f"{name}.sym"
    path.parent.mkdir(parents=True)
    path.write_text(SYM_TEMPLATE.format(debug_id=debug_id, name=name, code_id=code_id))
    return path


# The store's answers, worked out from SYM_TEMPLATE by hand:
#   0x1004: line record 1000+10 -> main.c:5 in breakpad_main, offset 4
#   0x1014: INLINE level 0 at 1010+10: helper_inlined at inline.h:22 (line record
#           1010), called from main.c:7 (the INLINE's call line) in breakpad_main
#   0x2008: PUBLIC public_only, no file
STORE_EXPECTED = [
    {
        "frame": 0,
        "module": "libstore.so",
        "module_offset": "0x1004",
        "function": "breakpad_main",
        "function_offset": "0x4",
        "file": "/src/store/main.c",
        "line": 5,
    },
    {
        "frame": 1,
        "module": "libstore.so",
        "module_offset": "0x1014",
        "function": "breakpad_main",
        "function_offset": "0x14",
        "file": "/src/store/main.c",
        "line": 7,
        "inlines": [{"function": "helper_inlined", "file": "/src/store/inline.h", "line": 22}],
    },
    {
        "frame": 2,
        "module": "libstore.so",
        "module_offset": "0x2008",
        "function": "public_only",
        "function_offset": "0x8",
    },
]
STORE_BUILD_ID = "80ae0509e7ce335ae3cab61c274274de96049b64"


def store_request(debug_id: str) -> dict[str, object]:
    return {
        "jobs": [
            {
                "memoryMap": [["libstore.so", debug_id]],
                "stacks": [[[0, 0x1004], [0, 0x1014], [0, 0x2008]]],
            }
        ]
    }


def test_breakpad_directory_store_answers_v5(tmp_path: Path) -> None:
    debug_id = debug_id_from_build_id(STORE_BUILD_ID)
    store = tmp_path / "store"
    write_store(store, "libstore.so", debug_id, STORE_BUILD_ID.upper())
    with Service(tmp_path / "s", ["--breakpad-store", str(store), "--no-debuginfod"]) as service:
        status, answer = service.v5(store_request(debug_id))
    assert status == 200
    assert answer == {
        "results": [
            {
                "stacks": [STORE_EXPECTED],
                "found_modules": {f"libstore.so/{debug_id}": True},
            }
        ]
    }


def test_breakpad_http_store_is_downloaded_once_for_many_workers(tmp_path: Path) -> None:
    debug_id = debug_id_from_build_id(STORE_BUILD_ID)
    sym = write_store(tmp_path / "src", "libstore.so", debug_id, STORE_BUILD_ID.upper())
    path = f"/symbols/libstore.so/{debug_id}/libstore.so.sym"
    with ScriptedServer({path: Serve(sym.read_bytes(), delay=1.0)}) as upstream:
        args = ["--breakpad-store", upstream.url + "/symbols/", "--no-debuginfod"]
        with Service(tmp_path / "s", args, workers=2) as service:
            import concurrent.futures

            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(lambda _: service.v5(store_request(debug_id)), range(8)))
        assert upstream.count(path) == 1
    assert all(status == 200 for status, _ in answers)
    assert all(a["results"][0]["stacks"] == [STORE_EXPECTED] for _, a in answers)  # type: ignore[index]


def test_heartbeats_and_metrics(service: Service, program: Path) -> None:
    assert service.request("GET", "/__lbheartbeat__")[0] == 200
    status, _h, body = service.request("GET", "/__heartbeat__")
    assert (status, json.loads(body)["status"]) == (200, "ok")
    debug_id = debug_id_from_build_id(build_id_of(program))
    for _ in range(2):
        service.v5({"memoryMap": [[program.name, debug_id]], "stacks": [[[0, 0x10]]]})
    status, headers, body = service.request("GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    text = body.decode()
    assert 'stackmark_requests_total{endpoint="symbolicate_v5",status="200"}' in text
    assert 'stackmark_module_lookups_total{result="hit"}' in text
    assert "stackmark_request_seconds_bucket" in text


def test_heartbeat_fails_when_a_source_is_gone(tmp_path: Path) -> None:
    gone = tmp_path / "symbols"
    gone.mkdir()
    with Service(tmp_path / "s", ["--symbol-path", str(gone), "--no-debuginfod"]) as service:
        gone.rmdir()
        status, _h, body = service.request("GET", "/__heartbeat__")
    assert status == 500
    assert str(gone) in json.loads(body)["problems"][0]


def test_serve_help_names_every_symbol_source_option() -> None:
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "stackmark", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in (
        "--debug-file-directory",
        "--obj",
        "--symbol-path",
        "--gsym-path",
        "--gsym-cache",
        "--debuginfod-url",
        "--breakpad-store",
        "--token-file",
        "--workers",
    ):
        assert option in out


def worker_pids(root: int) -> list[int]:
    """uvicorn's worker processes under `root` (multiprocessing's spawned children)."""
    children: list[int] = []
    for task in Path(f"/proc/{root}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    return [p for p in children if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]


def test_killing_a_worker_under_load_costs_only_its_requests(tmp_path: Path, program: Path) -> None:
    import concurrent.futures
    import http.client
    import os
    import signal
    import threading
    import time

    debug_id = debug_id_from_build_id(build_id_of(program))
    addresses = addresses_in(program, ["compute", "checked"], step=7)
    payload = {"memoryMap": [[program.name, debug_id]], "stacks": [[[0, a] for a in addresses]]}
    args = ["--symbol-path", str(program.parent), "--no-debuginfod"]
    with Service(tmp_path / "s", args, workers=2) as service:
        expected = service.v5(payload)[1]
        while len(worker_pids(service.process.pid)) < 2:
            time.sleep(0.1)
        before = worker_pids(service.process.pid)
        answered = threading.Semaphore(0)

        def one(_: int) -> str:
            try:
                status, answer = service.v5(payload)
            except (OSError, ValueError, http.client.HTTPException):
                # The connection went with the worker: refused, reset, or cut after
                # the headers (IncompleteRead).
                return "dropped"
            finally:
                answered.release()
            if status >= 500:
                return "5xx"
            return "right" if (status, answer) == (200, expected) else "wrong"

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            outcomes = pool.map(one, range(300))
            for _ in range(60):
                answered.acquire()
            os.kill(before[0], signal.SIGKILL)
            results = list(outcomes)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            after = worker_pids(service.process.pid)
            if len(after) == 2 and before[0] not in after:
                break
            time.sleep(0.2)
        assert service.v5(payload) == (200, expected)  # the service goes on
    assert "wrong" not in results
    lost = len(results) - results.count("right")
    assert lost <= 16, "only the requests in flight on the killed worker fail"
    assert len(after) == 2 and before[0] not in after, "uvicorn starts a new worker"
