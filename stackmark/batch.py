"""Many logs at once: which files, which outputs, and a pool of processes.

A batch turns a list of inputs (files and directories) into items, each
with the path its output goes to, then runs a file processor over them in
worker processes (symbolizing is CPU-bound Python: threads would share one
core). Results come back in input order, whatever order the workers finish
in, so output and diagnostics are the same from run to run.

A bad file (unreadable, binary, an output that cannot be written, a crash
while processing it) fails alone: the batch carries on and the caller
lists the failures at the end. Outputs are written under a temporary name
and renamed into place, so an output file is either complete or absent.

What is processed is up to the caller: a `ProcessorFactory` (picklable: a
module-level function or a `functools.partial` of one) is called once in
each worker to build the processor, so per-process state such as a
symbolizer with its open files is shared by all the files a worker gets.
"""

from __future__ import annotations

import contextlib
import glob
import multiprocessing
import os
import re
import signal
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from stackmark.symbols.buildid import is_valid_build_id
from stackmark.whole_files import replacing, write_whole

BINARY_SNIFF_BYTES = 8192
"""A file with a NUL byte in its first 8 KiB is not a text log (gzip, core...)."""


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One input file: `name` is how messages call it (as the user named it)."""

    index: int
    source: Path
    name: str
    output: Path | None  # None: the caller collects the output from a temporary file


@dataclass(frozen=True, slots=True)
class ItemResult:
    """What became of one input.

    `status` is the processor's own status (0 fine, 1 the input had
    errors...); `failure` says why the file could not be processed at all.
    `output` is where the output is: the item's output, or a temporary
    file the caller owns when the item had none. `diagnostics` is what
    processing wrote to stderr.
    """

    item: BatchItem
    status: int
    diagnostics: str = ""
    failure: str | None = None
    output: Path | None = None


Writer = Callable[[str], None]


class FileProcessor(Protocol):
    """Processes one input stream into one output stream; returns a status."""

    def __call__(self, name: str, source: BinaryIO, output: BinaryIO, err_write: Writer) -> int: ...


ProcessorFactory = Callable[[], FileProcessor]


# ---------------------------------------------------------------------------
# Planning: inputs -> items
# ---------------------------------------------------------------------------


def plan(
    inputs: Sequence[str], output_dir: Path | None
) -> tuple[list[BatchItem], list[ItemResult]]:
    """Items for `inputs` (directories walked in sorted order, hidden entries
    skipped), and failures for inputs that cannot be used.

    With `output_dir`, a file given by name is written to
    `output_dir/<its name>`; a file found in a directory to
    `output_dir/<its path inside that directory>`. Two inputs that would
    write the same output, or an output that would overwrite an input, fail.
    """
    found: list[tuple[Path, str, Path | None]] = []  # (source, shown name, relative output)
    failures: list[tuple[Path, str, str]] = []
    skip = output_dir.resolve() if output_dir is not None else None
    for raw in inputs:
        path = Path(raw)
        if path.is_dir():
            for source in _walk(path, skip):
                found.append((source, str(source), source.relative_to(path)))
        elif path.is_file():
            found.append((path, raw, Path(path.name)))
        elif path.exists():
            failures.append((path, raw, "not a regular file"))
        else:
            failures.append((path, raw, "no such file or directory"))

    items: list[BatchItem] = []
    results: list[ItemResult] = []
    claimed: dict[Path, str] = {}
    inputs_seen = {source.resolve() for source, _name, _rel in found}
    for source, name, relative in found:
        output = None
        if output_dir is not None and relative is not None:
            output = output_dir / relative
            key = output.resolve()
            if key in inputs_seen:
                failures.append((source, name, f"its output {output} is one of the inputs"))
                continue
            if key in claimed:
                failures.append(
                    (source, name, f"its output {output} is already the output of {claimed[key]}")
                )
                continue
            claimed[key] = name
        items.append(BatchItem(len(items), source, name, output))
    for source, name, reason in failures:
        # Failed inputs are numbered after the good ones; callers sort by name if they like.
        item = BatchItem(len(items) + len(results), source, name, None)
        results.append(ItemResult(item, 2, failure=reason))
    return items, results


def _walk(root: Path, skip: Path | None) -> Iterable[Path]:
    for directory, subdirs, files in os.walk(root):
        here = Path(directory)
        subdirs[:] = sorted(
            d for d in subdirs if not d.startswith(".") and (here / d).resolve() != skip
        )
        for name in sorted(files):
            if not name.startswith("."):
                path = here / name
                if path.is_file():
                    yield path


# ---------------------------------------------------------------------------
# Pre-scan: the build IDs a batch will need
# ---------------------------------------------------------------------------

_MODULE_ELEMENT = re.compile(rb"\{\{\{module:([^}]*)\}\}\}")


def scan_build_ids(path: Path) -> set[str]:
    """Build IDs named by `{{{module:ID:NAME:elf:BUILDID}}}` elements in `path`.

    A quick look (no full parse), so that a batch can find every module's
    files once before the workers start; anything it misses is still found
    by the worker that needs it. Unreadable files give an empty set.
    """
    found: set[str] = set()
    try:
        with open(path, "rb") as f:
            for line in f:
                if b"{{{module:" not in line:
                    continue
                for match in _MODULE_ELEMENT.finditer(line):
                    fields = match.group(1).split(b":")
                    if len(fields) >= 4 and fields[-2] == b"elf":
                        text = fields[-1].decode("ascii", "replace").lower()
                        if is_valid_build_id(text):
                            found.add(text)
    except OSError:
        pass
    return found


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

_processor: FileProcessor | None = None


def _start_worker(factory: ProcessorFactory) -> None:
    global _processor
    # Ctrl-C reaches the whole process group: the parent alone decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _processor = factory()


def is_binary(start: bytes) -> bool:
    """Whether a file starting with `start` is binary data rather than a text log."""
    return b"\0" in start[:BINARY_SNIFF_BYTES]


def process_item(item: BatchItem, processor: FileProcessor, temp_dir: Path) -> ItemResult:
    """Process one item in this process; any failure is in the result, never raised."""
    messages: list[str] = []
    target = item.output
    try:
        with open(item.source, "rb") as source:
            if is_binary(source.read(BINARY_SNIFF_BYTES)):
                return ItemResult(item, 2, failure="binary data (NUL bytes), not a text log")
            source.seek(0)
            if target is None:
                fd, name = tempfile.mkstemp(prefix=f"{item.index:06d}-", dir=temp_dir)
                os.close(fd)
                target = Path(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            with replacing(target) as output:
                status = processor(item.name, source, output, messages.append)
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else item.name
        reason = exc.strerror or str(exc)
        return ItemResult(item, 2, "".join(messages), failure=f"{where}: {reason}")
    except Exception as exc:  # a bug must not take the whole batch down
        return ItemResult(
            item, 2, "".join(messages), failure=f"internal error: {type(exc).__name__}: {exc}"
        )
    return ItemResult(item, status, "".join(messages), output=target)


def process_bytes(
    name: str, data: bytes, processor: FileProcessor, *, check_binary: bool = True
) -> tuple[int, bytes, str, str | None]:
    """Process one input held in memory (for workers on other machines, which get
    the log's bytes and return the output's): (status, output, diagnostics, failure),
    with the failures `process_item` gives; never raises for a bad input.
    `check_binary=False` for a later chunk of a log whose start was checked."""
    import io

    messages: list[str] = []
    if check_binary and is_binary(data):
        return 2, b"", "", "binary data (NUL bytes), not a text log"
    output = io.BytesIO()
    try:
        status = processor(name, io.BytesIO(data), output, messages.append)
    except Exception as exc:  # a bug must not take the whole batch down
        return 2, b"", "".join(messages), f"internal error: {type(exc).__name__}: {exc}"
    return status, output.getvalue(), "".join(messages), None


def write_output(target: Path, data: bytes) -> None:
    """Write `data` to `target` whole or not at all (`stackmark.whole_files`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    write_whole(target, data)


def _process_in_worker(item: BatchItem, temp_dir: Path) -> ItemResult:
    assert _processor is not None, "worker started without a processor"
    return process_item(item, _processor, temp_dir)


def run(
    items: Sequence[BatchItem],
    factory: ProcessorFactory,
    *,
    jobs: int,
    temp_dir: Path,
    on_result: Callable[[ItemResult], None],
    progress: Callable[[int, int, int], None] | None = None,
) -> list[ItemResult]:
    """Process `items` with `jobs` worker processes (1: in this process).

    `on_result` sees every result in input order as soon as it and all
    before it are done; `progress(done, total, failed)` after each file.
    Outputs of items without one are temporary files under `temp_dir`.
    """
    results: dict[int, ItemResult] = {}
    delivered = 0
    failed = 0

    def finished(result: ItemResult) -> None:
        nonlocal delivered, failed
        results[result.item.index] = result
        if result.failure is not None:
            failed += 1
        while delivered < len(items) and items[delivered].index in results:
            on_result(results[items[delivered].index])
            delivered += 1
        if progress is not None:
            progress(len(results), len(items), failed)

    if jobs <= 1 or len(items) <= 1:
        processor = factory()
        for item in items:
            finished(process_item(item, processor, temp_dir))
    else:
        _run_pool(items, factory, min(jobs, len(items)), temp_dir, finished)
    return [results[item.index] for item in items]


def _run_pool(
    items: Sequence[BatchItem],
    factory: ProcessorFactory,
    jobs: int,
    temp_dir: Path,
    finished: Callable[[ItemResult], None],
) -> None:
    """Run items in a pool of `jobs` processes.

    A worker that dies (a crash, the OOM killer) breaks the pool and every
    file in flight with it; those files are then retried one at a time,
    each in a fresh process, so only the file that kills its worker fails.
    """
    suspects = _run_round(items, factory, jobs, temp_dir, finished)
    for item in suspects:
        _discard_partial_output(item)
        if _run_round([item], factory, 1, temp_dir, finished):
            _discard_partial_output(item)
            finished(ItemResult(item, 2, failure="the worker process died on this file"))


def _discard_partial_output(item: BatchItem) -> None:
    """Remove what a worker killed mid-file left of the item's output (its .part file)."""
    if item.output is None:
        return  # a temporary output: goes with the batch's temporary directory
    with contextlib.suppress(OSError):
        for part in item.output.parent.glob(f".{glob.escape(item.output.name[:100])}.*.part"):
            part.unlink()


def _run_round(
    items: Sequence[BatchItem],
    factory: ProcessorFactory,
    jobs: int,
    temp_dir: Path,
    finished: Callable[[ItemResult], None],
) -> list[BatchItem]:
    """One pool over `items`; returns the items lost to a broken pool."""
    lost: list[BatchItem] = []
    # fork: workers start at once and inherit what the parent imported.
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=(factory,)
    )
    try:
        futures = {pool.submit(_process_in_worker, item, temp_dir): item for item in items}
        waiting: set[Future[ItemResult]] = set(futures)
        while waiting:
            done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: futures[f].index):
                try:
                    result = future.result()
                except BrokenProcessPool:
                    lost.append(futures[future])
                    continue
                finished(result)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C: stop handing out files
        raise
    pool.shutdown()
    return sorted(lost, key=lambda i: i.index)
