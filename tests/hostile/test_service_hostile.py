"""Hostile requests to `stackmark serve`: limits, paths out of the stores, bad tokens,
slow and failing symbol servers, and nothing written outside the caches."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stackmark.symbols.debug_id import debug_id_from_build_id
from tests.integration.test_service import (
    STORE_BUILD_ID,
    STORE_EXPECTED,
    store_request,
    write_store,
)
from tests.support.debuginfod_servers import Hang, ScriptedServer, Serve, Status
from tests.support.service import Service

DEBUG_ID = debug_id_from_build_id(STORE_BUILD_ID)
LIMITS = ["--max-body", "2000", "--max-jobs", "2", "--max-modules", "3", "--max-frames", "5"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    write_store(root / "store", "libstore.so", DEBUG_ID, STORE_BUILD_ID.upper())
    # A file beside the store that a path escaping it would reach.
    (root / "secret.sym").write_text("MODULE Linux x86_64 " + "0" * 33 + " secret\n")
    return root / "store"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, store: Path) -> Iterator[Service]:
    work = tmp_path_factory.mktemp("serve-hostile")
    token = work / "token"
    token.write_text("s3cret-token\n")
    args = ["--breakpad-store", str(store), "--no-debuginfod", "--token-file", str(token)]
    with Service(work, args + LIMITS) as running:
        yield running


AUTH = {"Authorization": "Bearer s3cret-token"}


def error_of(service: Service, payload: object) -> tuple[int, str]:
    status, headers, body = service.request("POST", "/symbolicate/v5", payload, AUTH)
    assert headers["content-type"] == "application/json"
    return status, json.loads(body)["title"]


def test_requests_without_the_token_are_refused(service: Service) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
        status, got, body = service.request("POST", "/symbolicate/v5", "{}", headers)
        assert status == 401
        assert got["www-authenticate"] == "Bearer"
        assert json.loads(body) == {"title": "a valid bearer token is required"}
    assert service.request("GET", "/metrics")[0] == 401
    # Load balancers need no token.
    assert service.request("GET", "/__lbheartbeat__")[0] == 200
    status, answer = service.v5(store_request(DEBUG_ID), AUTH)
    assert status == 200 and answer["results"][0]["stacks"] == [STORE_EXPECTED]  # type: ignore[index]


def test_a_body_over_the_limit_is_refused_unread(service: Service) -> None:
    status, title = error_of(service, "[" + " " * 3000 + "]")
    assert (status, title) == (413, "request body larger than 2000 bytes")
    status, _h, _body = service.request("POST", "/symbolize", b"x" * 2001, AUTH)
    assert status == 413


@pytest.mark.parametrize(
    ("payload", "title"),
    [
        ("not json", "Payload is not valid JSON"),
        ([1, 2], "job 0 is invalid"),
        ({}, "job 0 is invalid: no stacks specified"),
        (
            {"jobs": [{"memoryMap": [], "stacks": [[]]}] * 3},
            "please limit number of jobs in a single request to <= 2",
        ),
        (
            {"memoryMap": [["a", ""]] * 4, "stacks": [[]]},
            "job 0 has invalid modules: please limit number of modules in a job to <= 3",
        ),
        (
            {"memoryMap": [["a", ""]], "stacks": [[[0, 1]] * 6]},
            "please limit number of frames in a single request to <= 5",
        ),
        (
            {"memoryMap": [["a", "xyz"]], "stacks": [[]]},
            "job 0 has invalid modules: module index 0 has an invalid debug_id",
        ),
        (
            {"memoryMap": [["a", ""]], "stacks": [[[1, 0]]]},
            "job 0 has invalid stacks: stack 0 frame 0 has a module_index that isn't in modules",
        ),
        (
            {"memoryMap": [["a", ""]], "stacks": [[[0, -2]]]},
            "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset",
        ),
        (
            {"memoryMap": [["a", ""]], "stacks": [[[0, 1 << 70]]]},
            "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset",
        ),
    ],
)
def test_malformed_and_oversized_requests_get_a_json_400(
    service: Service, payload: object, title: str
) -> None:
    assert error_of(service, payload) == (400, title)


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd", "/etc/passwd", "..", ".", "../secret", "a/../../secret", "sub\\..\\x"],
)
def test_debug_names_that_are_paths_are_refused(service: Service, name: str) -> None:
    status, title = error_of(service, {"memoryMap": [[name, DEBUG_ID]], "stacks": [[[0, 4]]]})
    assert (status, title) == (
        400,
        "job 0 has invalid modules: module index 0 has an invalid debug_filename",
    )


def test_a_symlink_out_of_the_store_is_not_followed(tmp_path: Path, store: Path) -> None:
    root = tmp_path / "linked"
    (root / "escape.so").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "escape.so.sym").write_text(
        (store / "libstore.so" / DEBUG_ID / "libstore.so.sym")
        .read_text()
        .replace("libstore.so", "escape.so")
    )
    os.symlink(outside, root / "escape.so" / DEBUG_ID)
    with Service(tmp_path / "s", ["--breakpad-store", str(root), "--no-debuginfod"]) as service:
        status, answer = service.v5(
            {"memoryMap": [["escape.so", DEBUG_ID]], "stacks": [[[0, 0x1004]]]}
        )
    assert status == 200
    assert answer["results"][0]["found_modules"] == {f"escape.so/{DEBUG_ID}": False}  # type: ignore[index]


def test_a_hanging_symbol_server_gives_a_partial_answer_by_the_deadline(tmp_path: Path) -> None:
    path = f"/libstore.so/{DEBUG_ID}/libstore.so.sym"
    with ScriptedServer({path: Hang()}) as upstream:
        args = ["--breakpad-store", upstream.url, "--no-debuginfod", "--deadline", "1"]
        with Service(tmp_path / "s", args) as service:
            status, answer = service.v5(store_request(DEBUG_ID))
            # The heartbeat still answers while the lookup hangs.
            assert service.request("GET", "/__lbheartbeat__", timeout=5)[0] == 200
    assert status == 200
    assert isinstance(answer, dict)
    assert answer["partial"] is True
    result = answer["results"][0]
    assert result["timed_out_modules"] == [f"libstore.so/{DEBUG_ID}"]
    assert result["found_modules"] == {f"libstore.so/{DEBUG_ID}": None}
    assert [sorted(f) for f in result["stacks"][0]] == [["frame", "module", "module_offset"]] * 3


def test_a_slow_server_finishes_in_the_background_for_the_next_request(tmp_path: Path) -> None:
    write_store(tmp_path / "src", "libstore.so", DEBUG_ID, STORE_BUILD_ID.upper())
    sym = tmp_path / "src" / "libstore.so" / DEBUG_ID / "libstore.so.sym"
    path = f"/libstore.so/{DEBUG_ID}/libstore.so.sym"
    with ScriptedServer({path: Serve(sym.read_bytes(), delay=2.0)}) as upstream:
        args = ["--breakpad-store", upstream.url, "--no-debuginfod", "--deadline", "0.5"]
        with Service(tmp_path / "s", args) as service:
            first = service.v5(store_request(DEBUG_ID))[1]
            for _ in range(60):  # the download takes 2 s: ask until it is in
                time.sleep(0.5)
                second = service.v5(store_request(DEBUG_ID))[1]
                if "partial" not in second:  # type: ignore[operator]
                    break
    assert first["partial"] is True  # type: ignore[index]
    assert "partial" not in second  # type: ignore[operator]
    assert second["results"][0]["stacks"] == [STORE_EXPECTED]  # type: ignore[index]


def test_a_failing_symbol_server_means_not_found(tmp_path: Path) -> None:
    path = f"/libstore.so/{DEBUG_ID}/libstore.so.sym"
    with ScriptedServer({path: Status(500)}) as upstream:
        args = ["--breakpad-store", upstream.url, "--no-debuginfod"]
        with Service(tmp_path / "s", args) as service:
            status, answer = service.v5(store_request(DEBUG_ID))
    assert status == 200
    assert answer["results"][0]["found_modules"] == {f"libstore.so/{DEBUG_ID}": False}  # type: ignore[index]


def test_nothing_is_written_outside_the_caches(tmp_path: Path, store: Path) -> None:
    work = tmp_path / "s"
    with Service(work, ["--breakpad-store", str(store), "--no-debuginfod"]) as service:
        service.v5(store_request(DEBUG_ID))
        service.request("POST", "/symbolize", "{{{module:0:a:elf:abcd}}}\n{{{bt:0:0x10}}}\n")
        service.request("GET", "/metrics")
    written = sorted(
        str(p.relative_to(work))
        for p in work.rglob("*")
        if p.is_file() and not p.is_relative_to(service.cache)
    )
    assert written == ["serve.log"]  # the test's own capture of the server's output
    assert not any(store.parent.rglob("*.gsym"))  # the store is only read


def test_a_hanging_debuginfod_server_gives_a_partial_symbolize_answer(tmp_path: Path) -> None:
    build_id = "ab" * 20
    log = f"{{{{{{module:0:gone.so:elf:{build_id}}}}}}}\n"
    log += "{{{mmap:0x1000:0x1000:load:0:rx:0x0}}}\n{{{bt:0:0x1010}}}\n"
    with ScriptedServer({f"/buildid/{build_id}/debuginfo": Hang()}) as upstream:
        args = ["--debuginfod-url", upstream.url, "--deadline", "1"]
        with Service(tmp_path / "s", args) as service:
            status, headers, body = service.request("POST", "/symbolize", log, timeout=30)
            assert upstream.count(f"/buildid/{build_id}/debuginfo") == 1
    assert status == 200
    assert headers["x-stackmark-partial"] == "1"
    # The frame is printed as for a module without symbols (a return address: -1).
    assert body.decode().splitlines()[-1] == "    #0    0x000000000000100f (gone.so+0xf)"
