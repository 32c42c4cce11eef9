"""`stackmark symbolize --dask-scheduler tcp://HOST:PORT [-o DIR] FILE|DIR...`:
the batch mode's work on an existing Dask distributed cluster.

    client (this process)                       Dask workers (other machines)
    plan the inputs (stackmark.batch.plan)
    read each log, submit one task  ------->    symbolize_task(settings, name, bytes)
    (a large log: one per chunk,    ------->    symbolize_chunk_task(..., first_line)
    stackmark.markup.chunks)
    (a bounded number in flight)                  one processor per worker process,
                                                  kept between tasks: each build ID
                                                  is looked up once per worker
    write each output as it comes   <-------    (status, output, diagnostics, failure)
    (a chunked log's outputs joined in order;
    whole: temporary file + rename)
    diagnostics in input order; failures listed at the end, as the local batch

The workers read symbols where the options say, on their own machines
(the same paths there, or a shared directory), with their own caches: the
GSYM cache (XDG_CACHE_HOME) and debuginfod (DEBUGINFOD_URLS and
DEBUGINFOD_CACHE_PATH in the worker's environment, unless --debuginfod-url
is given). Logs travel as bytes, so the workers need no access to them.

A worker that dies takes its running tasks with it; the scheduler runs
them again elsewhere (and `RETRIES` more times for a task that raised),
and the client writes each output once, when its first result comes
(for a chunked log: when the last of its chunks comes). A log whose task,
or one of whose chunks, fails for good is listed at the end with the reason.
Needs `pip install 'stackmark[dask]'` here and on the workers.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

from stackmark import batch
from stackmark.cli.progress import StatusLine
from stackmark.cli.symbolize_batch import EXIT_BAD_FILE, _summarise
from stackmark.markup.chunks import LogChunk, split_log, splittable
from stackmark.symbolize_options import (
    DASK_CHUNK_SIZE,
    filter_settings_from,
    name_options_from,
    settings_from,
)

RETRIES = 2
"""Times a task that raised is run again (a worker's death is not counted: the
scheduler reruns those tasks by itself, up to its allowed-failures setting)."""

IN_FLIGHT_PER_THREAD = 4
"""Tasks submitted per worker thread before waiting for results: enough to keep
every worker busy, few enough that the client holds a bounded number of logs."""


def task_settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a worker needs to build the processor the local batch would (plain JSON)."""
    names = name_options_from(args)
    filt = filter_settings_from(args)
    return {
        "symbols": settings_from(args).to_dict(),
        "names": {"functions": names.functions, "demangle": names.demangle, "paths": names.paths},
        "filter": {
            "json": filt.json,
            "color": filt.color,
            "llvm19": filt.llvm19,
            "fail_on_unresolved": filt.fail_on_unresolved,
            "unresolved_hint": filt.unresolved_hint,
        },
        "debuginfod": {
            "urls": args.debuginfod_url or None,
            "off": bool(args.no_debuginfod),
            "offline": bool(args.offline),
            "timeout": args.debuginfod_timeout,
            "cache": args.debuginfod_cache,
        },
    }


# --- on the workers ---------------------------------------------------------------


class _WorkerFilter:
    """A worker process' symbolizer and naming for one set of options, kept between
    its tasks (each build ID is looked up once per worker)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from stackmark.markup.naming import NameOptions
        from stackmark.markup.stream import FilterSettings, make_naming
        from stackmark.symbols.setup import SymbolSettings, build_symbolizer

        self.symbolizer = build_symbolizer(
            SymbolSettings.from_dict(settings["symbols"]),
            _worker_debuginfod(settings["debuginfod"]),
        )
        self.naming = make_naming(NameOptions(**settings["names"]))
        self.settings = FilterSettings(**settings["filter"])
        self.lock = threading.Lock()  # a worker with several threads: one log at a time

    def processor(self, first_line: int = 0) -> batch.FileProcessor:
        """Filters a log, or a chunk of one whose first line is `first_line` (0-based)."""
        from stackmark.markup.stream import filter_streams

        def process(name: str, source: BinaryIO, output: BinaryIO, err_write: batch.Writer) -> int:
            return filter_streams(
                [(name, source)],
                output,
                err_write,
                self.settings,
                self.symbolizer,
                self.naming,
                first_line=first_line,
            )

        return process


_filters: dict[str, _WorkerFilter] = {}
_filters_lock = threading.Lock()


def _filter_for(settings: dict[str, Any]) -> _WorkerFilter:
    """This worker process' filter for `settings` (built on its first task)."""
    import json

    key = json.dumps(settings, sort_keys=True)
    with _filters_lock:
        known = _filters.get(key)
        if known is None:
            known = _filters[key] = _WorkerFilter(settings)
        return known


def _worker_debuginfod(options: dict[str, Any]) -> Any:
    """The worker's debuginfod client: the client's --debuginfod-url, else the
    worker's own environment; None when neither names a server."""
    if options["off"]:
        return None
    from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings

    settings = DebuginfodSettings.from_environment(
        urls=options["urls"],
        timeout=options["timeout"],
        cache_path=options["cache"],
        offline=options["offline"],
    )
    if not settings.urls and not options["offline"]:
        return None
    return DebuginfodClient(settings, report_failures=False)


def symbolize_task(
    settings: dict[str, Any], name: str, data: bytes
) -> tuple[int, bytes, str, str | None]:
    """One log, on a worker: (status, output, diagnostics, failure)."""
    worker = _filter_for(settings)
    with worker.lock:
        return batch.process_bytes(name, data, worker.processor())


def symbolize_chunk_task(
    settings: dict[str, Any], name: str, data: bytes, first_line: int
) -> tuple[int, bytes, str, str | None]:
    """One chunk of a log (`stackmark.markup.chunks`), whose first line is line
    `first_line` (0-based) of the log: (status, output, diagnostics, failure). The
    client checked that the log is text (a later chunk may hold NUL bytes the
    whole-log run passes through)."""
    worker = _filter_for(settings)
    with worker.lock:
        return batch.process_bytes(name, data, worker.processor(first_line), check_binary=False)


# --- on the client ----------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    try:
        from distributed import Client, as_completed
    except ImportError:
        print(
            "stackmark symbolize: error: --dask-scheduler needs the extra: "
            "pip install 'stackmark[dask]'",
            file=sys.stderr,
        )
        return EXIT_BAD_FILE
    if "-" in args.files or not args.files:
        print("stackmark symbolize: error: --dask-scheduler needs input files", file=sys.stderr)
        return EXIT_BAD_FILE
    output_dir = Path(args.output_dir) if args.output_dir is not None else None
    if output_dir is not None and output_dir.exists() and not output_dir.is_dir():
        print(f"stackmark symbolize: error: {output_dir} is not a directory", file=sys.stderr)
        return EXIT_BAD_FILE
    status = StatusLine(sys.stderr)
    items, unusable = batch.plan(args.files, output_dir)
    settings = task_settings(args)
    try:
        client = Client(args.dask_scheduler, timeout="30s")  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as exc:
        print(
            f"stackmark symbolize: error: cannot reach the Dask scheduler "
            f"{args.dask_scheduler}: {exc}",
            file=sys.stderr,
        )
        return EXIT_BAD_FILE
    try:
        chunk_size = args.dask_chunk_size
        if chunk_size is None:
            chunk_size = DASK_CHUNK_SIZE
        results = _run_on_cluster(client, as_completed, items, settings, status, chunk_size)
    finally:
        client.close()  # type: ignore[no-untyped-call]
    status.clear()
    return _summarise(results + unusable, status)


Answer = tuple[int, bytes, str, "str | None"]
"""What a task gives back: (status, output, diagnostics, failure)."""


class _LogTasks:
    """The tasks of one log in flight: one, or one per chunk, answered in any order."""

    def __init__(self, item: batch.BatchItem, chunks: list[LogChunk]) -> None:
        self.item = item
        self.chunks = chunks
        self.answers: list[Answer | None] = [None] * len(chunks)
        self.missing = len(chunks)

    def answer(self, index: int, answer: Answer) -> bool:
        """Keep chunk `index`'s answer; True when every chunk has answered."""
        if self.answers[index] is None:
            self.answers[index] = answer
            self.missing -= 1
        return self.missing == 0

    def joined(self) -> Answer:
        """The log's answer: the chunks' outputs and diagnostics in order, the worst
        status; the first failing chunk fails the log (diagnostics up to it)."""
        from stackmark.markup.chunks import join_diagnostics
        from stackmark.markup.stream import worst_status

        answers = [a for a in self.answers if a is not None]
        if len(answers) == 1:
            return answers[0]
        diagnostics: list[str] = []
        for number, (_status, _output, said, failure) in enumerate(answers):
            diagnostics.append(said)
            if failure is not None:
                chunk = self.chunks[number]
                lines = f"lines {chunk.first_line + 1}-" + (
                    f"{self.chunks[number + 1].first_line}"
                    if number + 1 < len(self.chunks)
                    else "end"
                )
                return 2, b"", join_diagnostics(diagnostics), f"{lines}: {failure}"
        status = worst_status(a[0] for a in answers)
        return status, b"".join(a[1] for a in answers), join_diagnostics(diagnostics), None


def _chunks_of(data: bytes, chunk_size: int, llvm19: bool) -> list[LogChunk]:
    """How a log is cut into tasks: a binary file, a log filtered in llvm19 mode
    (`chunks.splittable`) or a small one is one task."""
    if batch.is_binary(data) or not splittable(llvm19):
        return [LogChunk(0, len(data), 0)]
    return split_log(data, chunk_size)


def _run_on_cluster(
    client: Any,
    as_completed: Any,
    items: list[batch.BatchItem],
    settings: dict[str, Any],
    status: StatusLine,
    chunk_size: int,
) -> list[batch.ItemResult]:
    threads = sum(client.nthreads().values()) or 1
    window = threads * IN_FLIGHT_PER_THREAD
    pending = iter(items)
    results: dict[int, batch.ItemResult] = {}
    held: dict[int, tuple[batch.ItemResult, bytes]] = {}  # outputs for stdout, in order
    delivered = 0
    futures = as_completed()
    by_key: dict[str, tuple[_LogTasks, int]] = {}
    llvm19 = bool(settings["filter"]["llvm19"])

    def submit_next() -> bool:
        """Submit the next log's tasks; False when there is none left."""
        for item in pending:
            try:
                data = item.source.read_bytes()
            except OSError as exc:
                finished(item, (2, b"", "", f"{item.name}: {exc.strerror or exc}"))
                continue
            chunks = _chunks_of(data, chunk_size, llvm19)
            log = _LogTasks(item, chunks)
            for number, chunk in enumerate(chunks):
                if len(chunks) == 1:
                    future = client.submit(
                        symbolize_task, settings, item.name, data, retries=RETRIES, pure=False
                    )
                else:
                    future = client.submit(
                        symbolize_chunk_task,
                        settings,
                        item.name,
                        data[chunk.start : chunk.end],
                        chunk.first_line,
                        retries=RETRIES,
                        pure=False,
                    )
                by_key[future.key] = (log, number)
                futures.add(future)
            return True
        return False

    def finished(item: batch.BatchItem, answer: Answer) -> None:
        nonlocal delivered
        if item.index in results:
            return  # a rerun's second answer: the output is written once
        code, output, diagnostics, failure = answer
        written: Path | None = None
        if failure is None and item.output is not None:
            try:
                batch.write_output(item.output, output)
                written = item.output
            except OSError as exc:
                failure = f"{item.output}: {exc.strerror or exc}"
                code = 2
        result = batch.ItemResult(item, code, diagnostics, failure=failure, output=written)
        results[item.index] = result
        held[item.index] = (result, output)
        while delivered < len(items) and items[delivered].index in held:
            deliver(*held.pop(items[delivered].index))
            delivered += 1
        failed = sum(1 for r in results.values() if r.failure is not None)
        text = f"symbolizing on the cluster: {len(results)} of {len(items)} files"
        status.show(text + (f", {failed} failed" if failed else ""), force=True)

    def deliver(result: batch.ItemResult, output: bytes) -> None:
        if result.diagnostics:
            status.print(result.diagnostics.rstrip("\n"))
        if result.item.output is None and result.failure is None:
            sys.stdout.buffer.write(output)
            sys.stdout.buffer.flush()

    def fill() -> None:
        while len(by_key) < window and submit_next():
            pass

    fill()
    for future in futures:
        log, number = by_key.pop(future.key)
        try:
            answer: Answer = future.result()
        except Exception as exc:  # the task failed for good (raised, or killed its workers)
            answer = (2, b"", "", f"the cluster could not process it: {_reason(exc)}")
        future.release()
        if log.answer(number, answer):
            finished(log.item, log.joined())
        fill()
    return [results[item.index] for item in items]


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text
