"""Benchmark: what opening the 1,000,000-line log in the language server costs before and
around the index, step by step (the floor under `bench_lsp.py`'s open figures).

In this process, CPU time (best of `--repeat`), on the log `bench_lsp.py` makes:

* a Python client's `json.dumps` of the `didOpen` message, and the server's
  `json.loads` of it (pygls' reading loop), and cattrs turning the decoded
  message into `DidOpenTextDocumentParams`;
* the start of the message (`head.HEAD_BYTES`) parsed by `head.parse_head`,
  and its crash reports read and checked (what the early publication costs);
* the first half of the log cut and read (split.py's parent), with the
  compiled frame check and with its Python reference, and the whole log in
  one pass.

Then the transport, from node as VS Code's `vscode-jsonrpc` writes a message
(`JSON.stringify`, `Buffer.from`, the write) to a Python reader that reads the
body as pygls does and decodes it: each step's wall time (`lsp_floor_node.js`).

    python bench/bench_lsp_floor.py [--repeat N] [--node-runs N]
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(HERE))

import bench_lsp  # noqa: E402  (the log and the binary, made as bench_lsp.py makes them)
from lsprotocol import types  # noqa: E402

LOG = bench_lsp.OUT / "log-1000000.txt"

# The reader's side of the transport measure: one framed message from stdin, read as
# pygls reads it (`readline`, then `read` of the body), then decoded; wall times.
READER = """
import json, sys, time
stream = sys.stdin.buffer
header = stream.readline()
first = time.perf_counter()
while stream.readline() not in (b"\\r\\n", b""):
    pass
body = stream.read(int(header.split(b":")[1]))
read = time.perf_counter()
json.loads(body)
print(json.dumps({"transfer_s": read - first, "loads_s": time.perf_counter() - read}))
"""


def cpu(label: str, work: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
        gc.enable()
    print(f"| {label} | {best * 1000:.1f} ms |", flush=True)
    return best


def in_process(repeat: int) -> dict[str, float]:
    from pygls.lsp.server import LanguageServer
    from stackmark_lsp import head, split
    from stackmark_lsp import index as index_module
    from stackmark_lsp.document import Document, PositionCodec
    from stackmark_lsp.index import Index
    from stackmark_lsp.logs import OpenLog

    text = LOG.read_text()
    message = {
        "jsonrpc": "2.0",
        "method": "textDocument/didOpen",
        "params": {
            "textDocument": {"uri": LOG.as_uri(), "languageId": "log", "version": 1, "text": text}
        },
    }
    print("| step (in one process) | CPU, best of runs |\n| --- | ---: |")
    found: dict[str, float] = {}
    body = json.dumps(message).encode()
    found["dumps"] = cpu(
        "a Python client's `json.dumps` of the message", lambda: json.dumps(message), repeat
    )
    found["loads"] = cpu("`json.loads` of the message", lambda: json.loads(body), repeat)
    decoded = json.loads(body)
    converter = LanguageServer("floor", "1").protocol._converter
    found["structure"] = cpu(
        "cattrs: the decoded message into `DidOpenTextDocumentNotification`",
        lambda: converter.structure(decoded, types.DidOpenTextDocumentNotification),
        repeat,
    )
    start = body[: head.HEAD_BYTES]
    first = head.parse_head(start)
    assert first is not None
    found["parse_head"] = cpu(
        f"`parse_head` of the first {head.HEAD_BYTES >> 10} KiB",
        lambda: head.parse_head(start),
        repeat,
    )

    def read_head() -> None:
        log = OpenLog(first.uri, first.text, first.version, PositionCodec())
        assert log.index.opens_cleanly(len(log.document) - 1)
        list(log.index.diagnostics())

    found["head_index"] = cpu(
        f"its {first.text.count(chr(10)):,} lines read and checked", read_head, repeat
    )
    offset = split.split_offset(text)

    def half() -> None:
        Index(Document(LOG.as_uri(), text, stop=offset), read=False).rebuild()

    def whole() -> None:
        Index(Document(LOG.as_uri(), text), read=False).rebuild()

    kernel = index_module._native
    if kernel is not None:
        found["half_compiled"] = cpu("first half cut and read, compiled frame check", half, repeat)
    index_module._native = None
    try:
        found["half_pure"] = cpu("first half cut and read, Python frame check", half, repeat)
    finally:
        index_module._native = kernel
    found["whole"] = cpu("the whole log cut and read in one pass", whole, repeat)
    return found


def transport(runs: int) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or runs <= 0:
        return []
    print("\n| run | JSON.stringify | Buffer.from | to the reader | json.loads (a fresh process) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    found = []
    for run in range(runs):
        done = subprocess.run(
            [node, str(HERE / "lsp_floor_node.js"), str(LOG), sys.executable, READER],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        writer, reader = (json.loads(line) for line in done.stdout.splitlines()[-2:])
        found.append({**writer, **reader})
        print(
            f"| {run + 1} | {writer['stringify_s']:.3f} s | {writer['buffer_s']:.3f} s | "
            f"{reader['transfer_s']:.3f} s | {reader['loads_s']:.3f} s |",
            flush=True,
        )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--node-runs", type=int, default=3)
    args = parser.parse_args()
    bench_lsp.ensure_big()
    assert bench_lsp.ensure_log(1_000_000) == LOG
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"Load average at start: {load}\n")
    results = {
        "load": load,
        "in_process": in_process(args.repeat),
        "transport": transport(args.node_runs),
    }
    out = HERE / "work" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "lsp_floor.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
