"""Make a GSYM file from an ELF or Mach-O file (DWARF + symbol table) or a Breakpad .sym.

For an object file this is llvm-gsymutil's `--convert` pipeline: header
values and text ranges from the file's headers, DWARF functions unit by
unit, then symbol-table functions, then `finalize` and `encode`; the output
is the same bytes as `llvm-gsymutil-19 --convert --num-threads=1`. The log
it prints (`log`) has llvm-gsymutil's lines. Each format gives the pipeline
an `ObjectImage` (its sections for the DWARF reader, and what its headers
and symbol table hold); the pipeline itself is the same for all.

Mach-O inputs, as llvm-gsymutil takes them: a thin file; a universal
(fat) file, one GSYM per slice (`OUT.<arch>` when more than one slice is
converted; `arch_filters` picks slices by name or CPU type); a `.dSYM`
bundle, whose Contents/Resources/DWARF/ files are converted in turn.

Large inputs are converted with one process per core over the compile
units (`jobs`); the result does not depend on the number of processes.
The output file is written atomically (a temporary file, fsync, rename), so
a failed conversion leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TextIO

from stackmark.dwarf.sections import SectionSource
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.elf import ElfFile, is_elf
from stackmark.errors import StackmarkError
from stackmark.formats.breakpad import is_breakpad, read_breakpad
from stackmark.formats.gsym.creator import GsymCreator, GsymWriteError, RecordEncoder
from stackmark.formats.gsym.from_breakpad import add_breakpad, breakpad_is_little_endian
from stackmark.formats.gsym.from_dwarf import ExtrasCollector
from stackmark.formats.gsym.from_macho import (
    add_macho_symbols,
    macho_base_address,
    macho_text_ranges,
)
from stackmark.formats.gsym.from_symtab import (
    add_symbol_table,
    build_id_uuid,
    image_base_address,
    text_ranges,
)
from stackmark.formats.gsym.function_info import FunctionInfo
from stackmark.formats.gsym.gc_pause import gc_paused
from stackmark.formats.gsym.ranges import Range
from stackmark.macho import FatArch, MachOFile, dsym_members, is_macho, read_universal
from stackmark.whole_files import write_whole


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
    symbol_messages: list[str] = field(default_factory=list)
    """What the symbol-table step reported about skipped symbols (llvm's lines,
    printed before its count)."""


class ConversionFailed(GsymWriteError):
    """The functions found cannot be written; `result` has the counts for the log."""

    def __init__(self, message: str, result: ConversionResult):
        super().__init__(message)
        self.result = result


@dataclass(slots=True)
class ObjectImage:
    """One object file as the conversion pipeline takes it.

    `sections` feeds the DWARF reader (`reopen` opens it again in a worker
    process); the rest is what llvm-gsymutil reads from the file's headers
    and symbol table. `add_symbols(creator, messages)` adds the symbol-table
    functions and returns how many.
    """

    sections: SectionSource[Any]
    reopen: Callable[[], SectionSource[Any]]
    arch: str
    little: bool
    base_address: int | None
    text_ranges: list[Range]
    uuid: bytes
    add_symbols: Callable[[GsymCreator, list[str]], int]


def elf_image(elf: ElfFile) -> ObjectImage:
    """The pipeline's view of an ELF file (see from_symtab)."""
    return ObjectImage(
        elf,
        partial(ElfFile.open, elf.name),
        elf.machine_name,
        elf.endian == "<",
        image_base_address(elf),
        text_ranges(elf),
        build_id_uuid(elf),
        lambda creator, _messages: add_symbol_table(creator, elf),
    )


def macho_image(macho: MachOFile, arch: str) -> ObjectImage:
    """The pipeline's view of a Mach-O image (see from_macho); `arch` names it in the log."""
    index = None if macho.fat_arch is None else macho.fat_arch.index
    return ObjectImage(
        macho,
        partial(MachOFile.open_slice, macho.name, index),
        arch,
        macho.endian == "<",
        macho_base_address(macho),
        macho_text_ranges(macho),
        macho.uuid,
        lambda creator, messages: add_macho_symbols(creator, macho, messages),
    )


def convert_elf(
    path: str,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    extras: ExtrasCollector | None = None,
    segment_size: int | None = None,
    load_supplementary: SupplementaryLoad | None = None,
    dwarf_done: Callable[[], None] | None = None,
) -> ConversionResult:
    """GSYM bytes for the ELF file at `path` (DWARF, then its symbol table).

    With `extras`, also collects what the cache's extras file needs; the
    final functions, in file order, are in `result.functions`; `dwarf_done`
    is called once `extras` is complete, before the symbol table is read and
    the records encoded (the GSYM cache starts its own work then). With
    `segment_size`, the bytes are cut into `result.segments` instead
    (stackmark.formats.gsym.segments). `load_supplementary` finds a dwz
    supplementary file (None: none is looked for; the GSYM cache passes the
    symbol store's, which looks where the user said, and `stackmark gsym
    convert` one over its --debug-file-directory).
    """
    with gc_paused(), ElfFile.open(path) as elf:
        return convert_image(
            elf_image(elf),
            jobs=jobs,
            progress=progress,
            little=little,
            extras=extras,
            segment_size=segment_size,
            load_supplementary=load_supplementary,
            dwarf_done=dwarf_done,
        )


def convert_macho(
    path: str,
    fat_arch: FatArch | None = None,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    segment_size: int | None = None,
) -> ConversionResult:
    """GSYM bytes for the thin Mach-O file at `path`, or its slice `fat_arch`.

    The log's arch name is LLVM's: the generic one for a thin file
    (`aarch64`), the slice's Apple name in a universal file (`arm64`)."""
    with gc_paused(), MachOFile.open(path, fat_arch) as macho:
        arch = macho.arch_name if fat_arch is None else macho.triple_arch_name
        return convert_image(
            macho_image(macho, arch),
            jobs=jobs,
            progress=progress,
            little=little,
            segment_size=segment_size,
        )


def convert_image(
    image: ObjectImage,
    *,
    jobs: int = 1,
    progress: ProgressSink | None = None,
    little: bool | None = None,
    extras: ExtrasCollector | None = None,
    segment_size: int | None = None,
    load_supplementary: SupplementaryLoad | None = None,
    dwarf_done: Callable[[], None] | None = None,
) -> ConversionResult:
    """GSYM bytes for one object file: DWARF, then its symbol table (llvm's order);
    `load_supplementary` and `dwarf_done` as for `convert_elf`."""
    from stackmark.formats.gsym.dwarf_units import convert_dwarf, default_jobs
    from stackmark.formats.gsym.parallel_records import records_in_parallel

    if jobs == 0:
        jobs = default_jobs(image.sections)
    creator = GsymCreator()
    creator.base_address = image.base_address
    if image.text_ranges:
        creator.set_text_ranges(image.text_ranges)
    result = ConversionResult(b"", arch=image.arch)
    report = convert_dwarf(
        image.sections,
        creator,
        jobs=jobs,
        progress=progress,
        extras=extras,
        reopen=image.reopen,
        load_supplementary=load_supplementary,
    )
    if dwarf_done is not None:
        dwarf_done()
    result.dwarf_functions = report.functions
    result.warnings.update(report.warnings)
    result.messages += report.messages
    creator.uuid = image.uuid
    result.symbol_functions = image.add_symbols(creator, result.symbol_messages)
    if little is None:
        little = image.little
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

        try:
            result.segments = encode_segments(creator, segment_size, little=little)
        except GsymWriteError as exc:
            raise ConversionFailed(str(exc), result) from None
        if progress is not None:
            progress.finish()
        return

    def encode_progress(done: int) -> None:
        if progress is not None:
            progress.update("writing GSYM", done, total)

    from stackmark.formats.gsym.creator import encode_gsym

    try:
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
    except GsymWriteError as exc:
        raise ConversionFailed(str(exc), result) from None
    if progress is not None:
        progress.finish()


QUIET_CATEGORIES = frozenset({"Address range starts outside executable section"})
"""What llvm-gsymutil 19's --quiet leaves out; it prints everything else
(the summary lines, the categories, the DWO warnings) all the same."""


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
        *result.symbol_messages,
        f"Loaded {result.symbol_functions} functions from {second}.",
        f"Pruned {result.pruned} functions, ended with {result.total} total",
    ]
    for category in sorted(result.warnings):
        if not (quiet and category in QUIET_CATEGORIES):
            lines.append(f"{category} occurred {result.warnings[category]} time(s)")
    return "\n".join(lines) + "\n"


def write_atomically(path: str, data: bytes, *, owned: bool = False) -> None:
    """Write a GSYM (or segment, or cache extras) to `path` whole or not at all,
    through a `.gsym-*.tmp` file beside it (the name the cache sweeps); `/dev/null`,
    a FIFO or a terminal is written in place, unless the path is `owned` by a
    cache, which replaces whatever it finds there (`stackmark.whole_files`)."""
    write_whole(path, data, prefix=".gsym-", suffix=".tmp", owned=owned)


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
    arch_filters: Collection[str | int] = (),
    load_supplementary: SupplementaryLoad | None = None,
) -> ConversionResult:
    """Convert `input_path`, write `output_path`, print llvm's log; returns the
    result of the last file written.

    The input is an ELF file, a Breakpad .sym, a Mach-O file (each slice of a
    universal file, or those `arch_filters` names by arch name or CPU type,
    is written to `output_path` + "." + arch when there are several), or a
    .dSYM bundle (each file inside is converted to `output_path`). The log is
    as llvm-gsymutil --quiet prints it with `quiet`. With `segment_size`, the
    segment files `output_path-0x<first address>` are written instead, as
    llvm does. `load_supplementary` finds an ELF file's dwz supplementary file
    (None: none is looked for).
    """
    if log is not None:
        log.write(f"Input file: {input_path}\n")
    members = dsym_members(input_path)
    result: ConversionResult | None = None
    output = _Output(log, quiet, segment_size)
    for path in members or [input_path]:
        result = _convert_path(
            path,
            output_path,
            output,
            jobs=jobs,
            little=None if big_endian is None else not big_endian,
            progress=progress,
            arch_filters=arch_filters,
            load_supplementary=load_supplementary,
        )
    assert result is not None
    return result


@dataclass(frozen=True, slots=True)
class _Output:
    """How results are written: the log (and --quiet), segments."""

    log: TextIO | None
    quiet: bool
    segment_size: int | None


def _convert_path(
    path: str,
    output_path: str,
    out: _Output,
    *,
    jobs: int,
    little: bool | None,
    progress: ProgressSink | None,
    arch_filters: Collection[str | int],
    load_supplementary: SupplementaryLoad | None,
) -> ConversionResult:
    if not os.path.isfile(path):  # a FIFO would block the reads below
        raise StackmarkError(f"{path}: not a regular file")
    segment_size = out.segment_size
    if is_breakpad(path):
        convert = partial(
            convert_breakpad, path, progress=progress, little=little, segment_size=segment_size
        )
        return _write(path, output_path, convert, out, breakpad=True)
    if is_elf(path):
        convert = partial(
            convert_elf,
            path,
            jobs=jobs,
            progress=progress,
            little=little,
            segment_size=segment_size,
            load_supplementary=load_supplementary,
        )
        return _write(path, output_path, convert, out)
    if not is_macho(path):
        raise StackmarkError(f"{path}: neither an ELF file, a Mach-O file nor a Breakpad .sym file")
    slices = read_universal(path)
    if not slices:
        convert = partial(
            convert_macho,
            path,
            jobs=jobs,
            progress=progress,
            little=little,
            segment_size=segment_size,
        )
        return _write(path, output_path, convert, out)
    # As llvm: every slice must read before any is converted, and a slice is
    # named (and matched by --arch) by its own header, not its fat_arch entry.
    chosen: list[tuple[FatArch, str]] = []
    for fat_arch in slices:
        with MachOFile.open(path, fat_arch) as image:
            name, cputype = image.triple_arch_name, image.cputype & 0xFFFFFFFF
        if not arch_filters or name in arch_filters or cputype in arch_filters:
            chosen.append((fat_arch, name))
    if not chosen:
        raise StackmarkError(f"{path}: no matching architectures found")
    result: ConversionResult | None = None
    for fat_arch, name in chosen:
        output = f"{output_path}.{name}" if len(chosen) > 1 else output_path
        convert = partial(
            convert_macho,
            path,
            fat_arch,
            jobs=jobs,
            progress=progress,
            little=little,
            segment_size=segment_size,
        )
        result = _write(path, output, convert, out)
    assert result is not None
    return result


def _write(
    path: str,
    output_path: str,
    convert: Callable[[], ConversionResult],
    out: _Output,
    *,
    breakpad: bool = False,
) -> ConversionResult:
    """Run `convert`, write its GSYM to `output_path` and llvm's log lines for it
    (also when nothing can be written: then the counts, and the error)."""
    log = out.log
    try:
        result = convert()
    except ConversionFailed as exc:
        if log is not None:
            log.write(f"Output file ({exc.result.arch}): {output_path}\n")
            log.write(log_text(exc.result, breakpad=breakpad, quiet=out.quiet))
        hint = " (no DWARF functions and no function symbols)" if "no functions" in str(exc) else ""
        raise GsymWriteError(f"{path}: {exc}{hint}") from None
    except GsymWriteError as exc:
        raise GsymWriteError(f"{path}: {exc}") from None
    if result.segments is not None:
        from stackmark.formats.gsym.segments import segment_path

        for first_address, data in result.segments:
            write_atomically(segment_path(output_path, first_address), data)
    else:
        write_atomically(output_path, result.data)
    if log is not None:
        log.write(f"Output file ({result.arch}): {output_path}\n")
        log.write(log_text(result, breakpad=breakpad, quiet=out.quiet))
    return result


__all__ = [
    "ConversionFailed",
    "ConversionResult",
    "GsymWriteError",
    "ObjectImage",
    "convert_breakpad",
    "convert_elf",
    "convert_file",
    "convert_image",
    "convert_macho",
    "elf_image",
    "log_text",
    "macho_image",
    "write_atomically",
]
