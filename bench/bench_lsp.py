"""Benchmark: the language server on a 1,000,000-line log over the large generated binary.

The server (`python -m stackmark lsp`) runs as an editor would run it, over
stdio; this script is its client (pygls). Measured, in one session:

* open: from sending `didOpen` with the whole log to the first
  `publishDiagnostics` (the markup checks, the context index, every address
  placed), then to the second one (every module's binary looked for);
* memory: the server's resident set before and after the open, and its
  peak, against the size of the log;
* hover: requests over random `bt`/`pc` elements with the module's GSYM
  cache entry built ("warm cache"): each address for the first time, then
  the same elements again; and hovers while the symbolized view renders;
* edit: a one-line edit (`didChange`, incremental) to the `publishDiagnostics`
  of the new version, for edits of text, of a frame, adding a line, and
  removing a module line (the crash report's context is replayed);
* the whole log symbolized as a virtual document (`stackmark.symbolizedText`);
* the open again, sent by VS Code's own JSON-RPC library (`lsp_open_node.js`,
  node and `vscode-jsonrpc` from editors/vscode): pygls encodes the 70 MB
  message in Python, 0.6-0.7 s of its figure; V8 does it in about half that.

There is no reference tool for a language server; `stackmark symbolize` on
the same log is timed for comparison with the view. Results are printed as
Markdown and saved to bench/work/results/lsp.json.

    python bench/bench_lsp.py [--lines N] [--hovers N] [--edits N] [--no-view]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bytecode  # noqa: E402

bytecode.prepare()

from inputs import BIG, WORK, addresses, ensure_big, markup_log  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

OUT = WORK / "lsp"
RESULTS = WORK / "results"
MARKUP_GSYM = WORK / "markup" / "gsym-cache"  # bench_markup.py's cache, reused when there


def ensure_log(lines: int) -> Path:
    """A log of `lines` lines over big-O2 (the addresses are bench_markup.py's)."""
    addrs = addresses(BIG / "big-O2", WORK / "markup" / "addrs-O2.txt")
    return markup_log([(BIG / "big-O2", addrs)], lines, OUT / f"log-{lines}.txt")


def ensure_gsym(cache: Path) -> str:
    """A built GSYM cache entry for big-O2 in `cache` (copied from bench_markup.py's cache,
    or built); the time it took, for the record."""
    from stackmark.elf import ElfFile
    from stackmark.symbols.cache import LAYOUT, GsymCache

    with ElfFile.open(BIG / "big-O2") as elf:
        build_id = elf.build_id
    assert build_id is not None
    ours = GsymCache(cache)
    if ours.validate(build_id) is not None:
        return "present"
    theirs = GsymCache(MARKUP_GSYM)
    if theirs.validate(build_id) is not None:
        source = MARKUP_GSYM / LAYOUT / build_id[:2]
        target = cache / LAYOUT / build_id[:2]
        target.mkdir(parents=True, exist_ok=True)
        for suffix in (".gsym", ".gsymx"):
            name = build_id[2:] + suffix
            shutil.copyfile(source / name, target / name)
        if ours.validate(build_id) is not None:
            return "copied from bench_markup's cache"
    print("building the GSYM cache entry for big-O2 (minutes) ...", flush=True)
    start = time.perf_counter()
    debug = BIG / "debugdir" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    ours.get_or_build(build_id, str(debug))
    return f"built in {time.perf_counter() - start:.0f} s"


# -- the client ---------------------------------------------------------------------------


class Client:
    """A pygls client that timestamps what the server sends."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.client = LanguageClient("stackmark-bench", "1")
        self.published: list[tuple[float, int | None, int]] = []  # time, version, count
        self.progress: list[tuple[float, Any]] = []
        self._published = asyncio.Event()
        client = self.client

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.published.append((time.perf_counter(), params.version, len(params.diagnostics)))
            self._published.set()

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list[Any]:
            return [self.settings for _ in params.items]

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @client.feature(types.PROGRESS)
        def progress(params: types.ProgressParams) -> None:
            self.progress.append((time.perf_counter(), params.value))

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: types.RegistrationParams) -> None:
            return None

    async def start(self) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
        await self.client.start_io(
            sys.executable, "-m", "stackmark", "lsp", "--log-level", "info",
            "--log-file", str(OUT / "server.log"), cwd=REPO, env=env,
        )  # fmt: skip
        capabilities = types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(configuration=True),
            text_document=types.TextDocumentClientCapabilities(
                hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])
            ),
        )
        await self.client.initialize_async(
            types.InitializeParams(capabilities=capabilities, process_id=os.getpid())
        )
        self.client.initialized(types.InitializedParams())
        server = self.client._server  # the asyncio subprocess pygls started
        assert server is not None
        return int(server.pid)

    async def next_publication(self, version: int | None = None) -> float:
        """When the server next publishes diagnostics (for `version`, if given)."""
        while True:
            for when, published_version, _ in self.published:
                if version is None or published_version == version:
                    self.published.clear()
                    return when
            self._published.clear()
            await asyncio.wait_for(self._published.wait(), timeout=600)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def memory(pid: int) -> dict[str, float]:
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "n": len(ordered),
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * at(0.95),
        "max_ms": 1000 * ordered[-1],
    }


# -- the measurements -----------------------------------------------------------------------


async def hover_once(client: LanguageClient, uri: str, line: int, column: int) -> tuple[float, str]:
    start = time.perf_counter()
    found = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=column),
        )
    )
    elapsed = time.perf_counter() - start
    text = found.contents.value if found is not None else ""  # type: ignore[union-attr]
    return elapsed, text


HEAD_LINE = "diagnostics of the first"  # the server's log line for an early publication
HEAD_NOTE = " (the first crash reports')"
SETTLE = 3.0  # seconds without a publication after which every module was looked for


async def modules_looked_for(client: Client, whole: float) -> float:
    """When the diagnostics with every module's binary looked for came: the next
    publication, or `whole` if none comes within `SETTLE` s (the modules were looked for
    while the message arrived, and the whole log's publication had them)."""
    try:
        return await asyncio.wait_for(client.next_publication(1), timeout=SETTLE)
    except TimeoutError:
        return whole


async def session(log: Path, args: argparse.Namespace) -> dict[str, Any]:
    text = log.read_text()
    lines = text.splitlines()
    size = len(text.encode())
    settings = {
        "debugFileDirectories": [str(BIG / "debugdir")],
        "cacheDir": str(OUT / "cache"),
    }
    results: dict[str, Any] = {"log_lines": len(lines), "log_bytes": size}
    (OUT / "server.log").unlink(missing_ok=True)
    client = Client(settings)
    started = time.perf_counter()
    pid = await client.start()
    results["start_s"] = time.perf_counter() - started
    await asyncio.sleep(0.5)  # let the server settle after `initialized`
    before = memory(pid)
    cpu_before = cpu_seconds(pid)

    uri = log.resolve().as_uri()
    client.published.clear()
    sent = time.perf_counter()
    client.client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="log", version=1, text=text)
        )
    )
    written = time.perf_counter()
    results["client_encode_s"] = written - sent  # the client's JSON, not the server
    first = await client.next_publication(1)
    results["open_to_first_diagnostics_s"] = first - sent
    results["written_to_first_diagnostics_s"] = first - written
    # The first publication may be the first crash reports' (head.py), made while the
    # message was still arriving; the server's log says so before it publishes.
    results["head_first"] = HEAD_LINE in (OUT / "server.log").read_text()
    whole = await client.next_publication(1) if results["head_first"] else first
    results["open_to_whole_diagnostics_s"] = whole - sent
    after = memory(pid)
    results["open_server_cpu_s"] = cpu_seconds(pid) - cpu_before
    results["open_to_module_diagnostics_s"] = await modules_looked_for(client, whole) - sent
    results["memory_mib"] = {
        "before_open": before["VmRSS"],
        "after_open": after["VmRSS"],
        "peak": memory(pid)["VmHWM"],
        "log_mib": size / 2**20,
    }
    results["memory_mib"]["growth_over_log"] = (after["VmRSS"] - before["VmRSS"]) / (size / 2**20)
    results["memory_mib"]["rss_over_log"] = after["VmRSS"] / (size / 2**20)

    # Hovers: random frames, first the cold start (opens the module), then each address once.
    rng = random.Random(11)
    candidates = [
        (number, line.index("{{{"))
        for number, line in enumerate(lines)
        if "{{{bt:" in line or "{{{pc:" in line
    ]
    picks = rng.sample(candidates, min(args.hovers, len(candidates)))
    first_hover, shown = await hover_once(client.client, uri, picks[0][0], picks[0][1] + 3)
    assert re.search(r"### (frame|pc)", shown), shown
    results["first_hover_ms"] = 1000 * first_hover
    times = []
    cpu = cpu_seconds(pid)
    for number, column in picks[1:]:
        elapsed, shown = await hover_once(client.client, uri, number, column + 3)
        assert "`big-O2`" in shown, shown
        times.append(elapsed)
    results["hover_new_addresses"] = percentiles(times)
    results["hover_new_addresses"]["server_cpu_ms"] = 1000 * (cpu_seconds(pid) - cpu) / len(times)
    cpu = cpu_seconds(pid)
    times = [(await hover_once(client.client, uri, n, c + 3))[0] for n, c in picks]
    results["hover_repeated"] = percentiles(times)
    results["hover_repeated"]["server_cpu_ms"] = 1000 * (cpu_seconds(pid) - cpu) / len(times)

    # Edits: one line each, the next version's diagnostics timed.
    version = 1
    plain = [i for i, line in enumerate(lines) if "{{{" not in line]
    frames = [i for i, line in enumerate(lines) if "{{{bt:" in line]
    modules = [i for i, line in enumerate(lines) if line.startswith("{{{module:")]
    kinds = {
        "a character in a text line": (plain, lambda i: ((i, 1), (i, 2), "X")),
        "a character in a frame's address": (
            frames,
            lambda i: ((i, lines[i].index("0x") + 4), (i, lines[i].index("0x") + 5), "7"),
        ),
        "a new line": (plain, lambda i: ((i, 0), (i, 0), "inserted line\n")),
        "a module line removed (context replayed)": (
            modules[len(modules) // 2 :],
            lambda i: ((i, 0), (i + 1, 0), ""),
        ),
    }
    edits: dict[str, Any] = {}
    for name, (where, make) in kinds.items():
        times = []
        cpu_spent = 0.0
        for i in rng.sample(where, min(args.edits, len(where))):
            cpu = cpu_seconds(pid)
            (sl, sc), (el, ec), new = make(i)
            version += 1
            start = time.perf_counter()
            client.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(
                                start=types.Position(line=sl, character=sc),
                                end=types.Position(line=el, character=ec),
                            ),
                            text=new,
                        )
                    ],
                )
            )
            times.append(await client.next_publication(version) - start)
            cpu_spent += cpu_seconds(pid) - cpu
            # keep our copy of the lines in step with the server's
            if new.endswith("\n"):
                lines.insert(sl, new[:-1])
            elif el > sl:
                del lines[sl]
            else:
                lines[sl] = lines[sl][:sc] + new + lines[sl][ec:]
            await asyncio.sleep(0.2)  # answers to background work settle between edits
        edits[name] = percentiles(times)
        edits[name]["server_cpu_ms"] = 1000 * cpu_spent / max(len(times), 1)
    results["edit_to_diagnostics"] = edits

    if args.view:
        view_started = time.perf_counter()
        view = asyncio.ensure_future(
            client.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="stackmark.symbolizedText", arguments=[uri])
            )
        )
        times = []
        while not view.done() and len(times) < len(picks):
            number, column = picks[len(times)]
            times.append((await hover_once(client.client, uri, number, column + 3))[0])
            await asyncio.sleep(0.05)
        rendered = await view
        results["view_s"] = time.perf_counter() - view_started
        results["view_lines"] = rendered["text"].count("\n")
        results["hover_during_view"] = percentiles(times)
    results["peak_memory_mib"] = memory(pid)["VmHWM"]
    await client.stop()
    server_log = (OUT / "server.log").read_text()
    opened = re.findall(
        r"opened \S+: \d+ lines cut into chunks in ([\d.]+) s, indexed in ([\d.]+) s", server_log
    )
    if opened:
        results["server_cut_s"] = float(opened[-1][0])
        results["server_index_wall_s"] = float(opened[-1][1])
    halves = re.findall(r"read up to line \d+ in ([\d.]+) s, then waited ([\d.]+) s", server_log)
    if halves:  # read in two processes (split.py)
        results["server_first_half_s"] = float(halves[-1][0])
        results["server_waited_for_child_s"] = float(halves[-1][1])
    return results


def node_opens(log: Path, runs: int) -> dict[str, Any]:
    """Open the log `runs` times with VS Code's JSON-RPC library (lsp_open_node.js): what an
    editor user waits for, without the pygls client's encoding in Python."""
    venv_node = Path(sys.prefix) / "node-bin" / "node"  # tests/editors/setup.sh puts it there
    node = str(venv_node) if venv_node.exists() else shutil.which("node")
    library = REPO / "editors" / "vscode" / "node_modules" / "vscode-jsonrpc"
    if node is None or not library.is_dir() or runs <= 0:
        return {}
    settings = json.dumps(
        {"debugFileDirectories": [str(BIG / "debugdir")], "cacheDir": str(OUT / "cache")}
    )
    opens = []
    for _ in range(runs):
        done = subprocess.run(
            [node, str(HERE / "lsp_open_node.js"), str(log), settings,
             str(OUT / "server-node.log"), sys.executable, str(REPO)],
            capture_output=True, text=True, check=True, cwd=REPO,
        )  # fmt: skip
        opens.append(json.loads(done.stdout))
    firsts = sorted(o["open_to_first_s"] for o in opens)
    return {
        "runs": runs,
        "open_to_first_s": firsts,
        "open_to_first_median_s": statistics.median(firsts),
        "encode_median_s": statistics.median(o["encode_s"] for o in opens),
        "open_to_whole_s": sorted(o["open_to_whole_s"] for o in opens),
        "open_to_whole_median_s": statistics.median(o["open_to_whole_s"] for o in opens),
        "head_first": [o["head_first"] for o in opens],
        "open_server_cpu_s": [o["open_server_cpu_s"] for o in opens],
        "open_to_second_median_s": statistics.median(o["open_to_second_s"] for o in opens),
    }


def cli_time(log: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "stackmark", "symbolize",
         f"--debug-file-directory={BIG / 'debugdir'}", f"--gsym-cache-dir={OUT / 'cache'}",
         str(log)],
        stdout=subprocess.DEVNULL,
        check=True,
        cwd=REPO,
    )  # fmt: skip
    return time.perf_counter() - start


def report(results: dict[str, Any]) -> str:
    m = results["memory_mib"]
    out = [
        f"Log: {results['log_lines']:,} lines, {results['log_bytes'] / 2**20:.1f} MiB "
        f"(gen_markup_log.py over big-O2); GSYM cache entry: {results['gsym']}; "
        f"load average at start {results['load']}; reference loop "
        f"`sum(range(1000))` {results['loop_us']:.1f} µs.",
        "",
        "| measure | result | target |",
        "| --- | ---: | ---: |",
        f"| open to first diagnostics{HEAD_NOTE if results['head_first'] else ''} | "
        f"{results['open_to_first_diagnostics_s']:.2f} s | < 0.5 s |",
        f"| open to the whole log's diagnostics | "
        f"{results['open_to_whole_diagnostics_s']:.2f} s | |",
        f"| (from the message written to the pipe: the server's part) | "
        f"{results['written_to_first_diagnostics_s']:.2f} s | |",
        f"| (server CPU for the open: JSON, index, diagnostics) | "
        f"{results['open_server_cpu_s']:.2f} s | |",
        f"| (of which the document cut into chunks, wall) | "
        f"{results.get('server_cut_s', float('nan')):.2f} s | |",
        f"| (of which the index until the first publication, wall) | "
        f"{results.get('server_index_wall_s', float('nan')):.2f} s | |",
        f"| (... the first half read by the server / then waiting for the child's half) | "
        f"{results.get('server_first_half_s', float('nan')):.2f} s / "
        f"{results.get('server_waited_for_child_s', float('nan')):.2f} s | |",
        f"| (the client's encoding of the didOpen message) | "
        f"{results['client_encode_s']:.2f} s | |",
    ]
    node = results.get("node_opens")
    if node:
        firsts = ", ".join(f"{t:.2f}" for t in node["open_to_first_s"])
        out += [
            f"| open to first diagnostics, sent by VS Code's `vscode-jsonrpc` "
            f"(median of {node['runs']}: {firsts}) | {node['open_to_first_median_s']:.2f} s "
            f"| < 0.5 s |",
            f"| ... to the whole log's diagnostics (median) | "
            f"{node['open_to_whole_median_s']:.2f} s | |",
            f"| (server CPU to the whole log's diagnostics, each open) | "
            f"{', '.join(f'{t:.2f}' for t in node['open_server_cpu_s'])} s | |",
            f"| (its JSON.stringify of the didOpen message, median) | "
            f"{node['encode_median_s']:.2f} s | |",
        ]
    out += [
        f"| open to module diagnostics (binaries looked for) | "
        f"{results['open_to_module_diagnostics_s']:.2f} s | |",
        f"| memory growth on open / log size | {m['growth_over_log']:.1f}x "
        f"({m['after_open'] - m['before_open']:.0f} MiB) | < 10x |",
        f"| server RSS after open / log size | {m['rss_over_log']:.1f}x "
        f"({m['after_open']:.0f} MiB) | |",
        f"| first hover (opens the module) | {results['first_hover_ms']:.1f} ms | |",
    ]
    for key, label in (
        ("hover_new_addresses", "hover, warm GSYM cache, each address the first time"),
        ("hover_repeated", "hover, the same elements again"),
        ("hover_during_view", "hover while the symbolized view renders"),
    ):
        if key in results:
            h = results[key]
            target = "< 20 ms" if key == "hover_new_addresses" else ""
            cpu = f"; server CPU {h['server_cpu_ms']:.1f} ms each" if "server_cpu_ms" in h else ""
            out.append(
                f"| {label} (p50 / p95 / max, n={h['n']}) | {h['p50_ms']:.1f} / "
                f"{h['p95_ms']:.1f} / {h['max_ms']:.1f} ms{cpu} | {target} |"
            )
    for name, e in results["edit_to_diagnostics"].items():
        out.append(
            f"| edit: {name} → diagnostics (p50 / p95, n={e['n']}) | "
            f"{e['p50_ms']:.1f} / {e['p95_ms']:.1f} ms; server CPU "
            f"{e['server_cpu_ms']:.1f} ms each | < 50 ms |"
        )
    if "view_s" in results:
        out.append(
            f"| symbolized view ({results['view_lines']:,} lines) | {results['view_s']:.1f} s | |"
        )
    if "cli_s" in results:
        out.append(f"| `stackmark symbolize` on the same log | {results['cli_s']:.1f} s | |")
    out.append(f"| peak server memory | {results['peak_memory_mib']:.0f} MiB | |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--hovers", type=int, default=300)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--no-view", dest="view", action="store_false")
    parser.add_argument(
        "--node-opens", type=int, default=5,
        help="opens through VS Code's JSON-RPC library (node; 0: none)",
    )  # fmt: skip
    args = parser.parse_args()
    ensure_big()
    log = ensure_log(args.lines)
    gsym = ensure_gsym(OUT / "cache")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    loop_us = min(timeit.repeat("sum(range(1000))", number=200, repeat=5)) / 200 * 1e6
    results = asyncio.run(session(log, args))
    results["gsym"] = gsym
    results["load"] = load
    results["loop_us"] = loop_us
    results["node_opens"] = node_opens(log, args.node_opens)
    if args.view:
        results["cli_s"] = cli_time(log)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lsp.json").write_text(json.dumps(results, indent=2) + "\n")
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
