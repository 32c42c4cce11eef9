"""Make a GSYM file from an ELF file (DWARF + symbol table) or a Breakpad .sym.

For ELF input this is llvm-gsymutil's `--convert` pipeline: header values
and text ranges from the ELF, DWARF functions unit by unit, then
symbol-table functions, then `finalize` and `encode`; the output is the
same bytes as `llvm-gsymutil-19 --convert --num-threads=1`. The log it
prints (`log`) has llvm-gsymutil's lines.

Large inputs are converted with one process per core over the compile
units (`jobs`); the result does not depend on the number of processes.
The output file is written atomically (a temporary file, fsync, rename), so
a failed conversion leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import gc
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from stackmark.elf import ElfFile, is_elf
from stackmark.errors import StackmarkError
from stackmark.formats.breakpad import is_breakpad, read_breakpad
from stackmark.formats.gsym.creator import GsymCreator, GsymWriteError, RecordEncoder
from stackmark.formats.gsym.from_breakpad import add_breakpad, breakpad_is_little_endian
from stackmark.formats.gsym.from_dwarf import ExtrasCollector
from stackmark.formats.gsym.from_symtab import (
    add_symbol_table,
    build_id_uuid,
    image_base_address,
    text_ranges,
)
from stackmark.formats.gsym.function_info import FunctionInfo


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a conversion.

    A conversion allocates millions of small objects (DIE values, rows,
    inline nodes) and frees almost none of them until it ends, so every
    collection scans an ever larger heap and finds nothing: about a third
    of the merge step's time on a large binary. Reference counting still
    frees what is dropped; the collector is resumed (if it was running)
    afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Everything made meanwhile is still in the youngest generation: the first
        # collection after `enable` would scan millions of objects (about a second
        # on a large binary). Move them to the oldest generation without a scan.
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


class ProgressSink(Protocol):
    def update(self, label: str, done: int, total: int) -> None: ...

    def finish(self) -> None: ...


@dataclass(slots=True)
class ConversionResult:
    data: bytes
    dwarf_functions: int = 0
    symbol_functions: int = 0
    pruned: int = 0
    total: int = 0
    warnings: dict[str, int] = field(default_factory=dict)
    arch: str = ""
    functions: list[FunctionInfo] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # warning lines, printed as llvm does
    segments: list[tuple[int, bytes]] | None = None  # (first address, bytes) with segment_size


def convert_elf(
    path: str,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    extras: ExtrasCollector | None = None,
    segment_size: int | None = None,
) -> ConversionResult:
    """GSYM bytes for the ELF file at `path` (DWARF, then its symbol table).

    With `extras`, also collects what the cache's extras file needs; the
    final functions, in file order, are in `result.functions`. With
    `segment_size`, the bytes are cut into `result.segments` instead
    (stackmark.formats.gsym.segments).
    """
    with gc_paused():
        return _convert_elf(
            path,
            jobs=jobs,
            progress=progress,
            little=little,
            extras=extras,
            segment_size=segment_size,
        )


def _convert_elf(
    path: str,
    *,
    jobs: int,
    progress: ProgressSink | None,
    little: bool | None,
    extras: ExtrasCollector | None,
    segment_size: int | None = None,
) -> ConversionResult:
    from stackmark.formats.gsym.dwarf_units import convert_dwarf, default_jobs

    elf = ElfFile.open(path)
    try:
        if jobs == 0:
            jobs = default_jobs(elf)
        creator = GsymCreator()
        creator.base_address = image_base_address(elf)
        ranges = text_ranges(elf)
        if ranges:
            creator.set_text_ranges(ranges)
        result = ConversionResult(b"", arch=elf.machine_name)
        report = convert_dwarf(elf, creator, jobs=jobs, progress=progress, extras=extras)
        result.dwarf_functions = report.functions
        result.warnings.update(report.warnings)
        result.messages += report.messages
        creator.uuid = build_id_uuid(elf)
        result.symbol_functions = add_symbol_table(creator, elf)
        if little is None:
            little = elf.endian == "<"
    finally:
        elf.close()
    from stackmark.formats.gsym.parallel_records import records_in_parallel

    _finish(creator, result, little, progress, records_in_parallel(jobs), segment_size)
    return result


def convert_breakpad(
    path: str,
    *,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    segment_size: int | None = None,
) -> ConversionResult:
    """GSYM bytes for the Breakpad .sym file at `path`."""
    module = read_breakpad(path)
    creator = GsymCreator()
    result = ConversionResult(b"", arch=module.arch)
    funcs, publics = add_breakpad(creator, module, path)
    result.dwarf_functions = funcs
    result.symbol_functions = publics
    if little is None:
        little = breakpad_is_little_endian(module)
    _finish(creator, result, little, progress, segment_size=segment_size)
    return result


def _finish(
    creator: GsymCreator,
    result: ConversionResult,
    little: bool,
    progress: ProgressSink | None,
    records: RecordEncoder | None = None,
    segment_size: int | None = None,
) -> None:
    """Finalize and encode (the records with `records`, else in this process;
    in segments of about `segment_size` bytes when given)."""
    report = creator.finalize()
    result.pruned = report.pruned
    result.total = report.after
    result.functions = creator.functions
    for key, count in report.warnings.items():
        result.warnings[key] = result.warnings.get(key, 0) + count
    total = len(creator.functions)
    if segment_size is not None:
        from stackmark.formats.gsym.segments import encode_segments

        result.segments = encode_segments(creator, segment_size, little=little)
        if progress is not None:
            progress.finish()
        return

    def encode_progress(done: int) -> None:
        if progress is not None:
            progress.update("writing GSYM", done, total)

    from stackmark.formats.gsym.creator import encode_gsym

    result.data = encode_gsym(
        creator.functions,
        files=creator.files,
        strtab=creator.string_table(),
        uuid=creator.uuid,
        base_address=creator.base_address,
        little=little,
        finalized=True,
        progress=encode_progress,
        records=records,
    )
    if progress is not None:
        progress.finish()


QUIET_CATEGORIES = frozenset({"Address range starts outside executable section"})
"""What llvm-gsymutil 19's --quiet leaves out; it prints everything else
(the summary lines, the categories, the DWO warnings) all the same."""


def log_text(result: ConversionResult, *, breakpad: bool = False, quiet: bool = False) -> str:
    """llvm-gsymutil's lines after "Output file (...): NAME"."""
    first = "FUNC records" if breakpad else "DWARF"
    second = "PUBLIC records" if breakpad else "symbol table"
    lines = [
        *result.messages,
        f"Loaded {result.dwarf_functions} functions from {first}.",
        f"Loaded {result.symbol_functions} functions from {second}.",
        f"Pruned {result.pruned} functions, ended with {result.total} total",
    ]
    for category in sorted(result.warnings):
        if not (quiet and category in QUIET_CATEGORIES):
            lines.append(f"{category} occurred {result.warnings[category]} time(s)")
    return "\n".join(lines) + "\n"


def write_atomically(path: str, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gsym-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def convert_file(
    input_path: str,
    output_path: str,
    *,
    log: TextIO | None = None,
    quiet: bool = False,
    jobs: int = 0,
    big_endian: bool | None = None,
    progress: ProgressSink | None = None,
    segment_size: int | None = None,
) -> ConversionResult:
    """Convert `input_path` (ELF or Breakpad), write `output_path`, print llvm's log
    (with `quiet`, as llvm-gsymutil --quiet prints it). With `segment_size`, write
    the segment files `output_path-0x<first address>` instead, as llvm does."""
    little = None if big_endian is None else not big_endian
    breakpad = is_breakpad(input_path)
    try:
        if breakpad:
            result = convert_breakpad(
                input_path, progress=progress, little=little, segment_size=segment_size
            )
        elif is_elf(input_path):
            result = convert_elf(
                input_path,
                jobs=jobs,
                progress=progress,
                little=little,
                segment_size=segment_size,
            )
        else:
            raise StackmarkError(f"{input_path}: neither an ELF file nor a Breakpad .sym file")
    except GsymWriteError as exc:
        hint = " (no DWARF functions and no function symbols)" if "no functions" in str(exc) else ""
        raise GsymWriteError(f"{input_path}: {exc}{hint}") from None
    if result.segments is not None:
        from stackmark.formats.gsym.segments import segment_path

        for first_address, data in result.segments:
            write_atomically(segment_path(output_path, first_address), data)
    else:
        write_atomically(output_path, result.data)
    if log is not None:
        log.write(f"Input file: {input_path}\n")
        log.write(f"Output file ({result.arch}): {output_path}\n")
        log.write(log_text(result, breakpad=breakpad, quiet=quiet))
    return result


__all__ = [
    "ConversionResult",
    "GsymWriteError",
    "convert_breakpad",
    "convert_elf",
    "convert_file",
    "gc_paused",
    "log_text",
    "write_atomically",
]
