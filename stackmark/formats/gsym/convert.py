"""Make GSYM bytes from an ELF or Mach-O file (DWARF + symbol table).

For an object file this is llvm-gsymutil's `--convert` pipeline: header
values and text ranges from the file's headers, DWARF functions unit by
unit, then symbol-table functions, then `finalize` and `encode`; the output
is the same bytes as `llvm-gsymutil-19 --convert --num-threads=1`, and the
counts of its log are in the `ConversionResult`. Each format gives the
pipeline an `ObjectImage` (its sections for the DWARF reader, and what its
headers and symbol table hold); the pipeline itself is the same for all.
A Mach-O image is a thin file or one slice (`FatArch`) of a universal file.

Large inputs are converted with one process per core over the compile
units (`jobs`); the result does not depend on the number of processes.
Which converter an input file needs, the output files and the log are
`stackmark.conversion.files`'s work (`convert_file`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from stackmark.dwarf.sections import SectionSource
from stackmark.dwarf.split_files import SplitDwarfLoad
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.elf import ElfFile
from stackmark.formats.gsym.creator import GsymCreator, GsymWriteError, RecordEncoder
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
from stackmark.macho import FatArch, MachOFile


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
    load_split: SplitDwarfLoad | None = None,
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
    convert` one over its --debug-file-directory), `load_split` the .dwp and
    .dwo files of split DWARF (None: none is looked for; both pass a
    `SplitDwarfFinder`, which looks where llvm looks).
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
            load_split=load_split,
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
    load_split: SplitDwarfLoad | None = None,
    dwarf_done: Callable[[], None] | None = None,
) -> ConversionResult:
    """GSYM bytes for one object file: DWARF, then its symbol table (llvm's order);
    `load_supplementary`, `load_split` and `dwarf_done` as for `convert_elf`."""
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
        load_split=load_split,
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
    finish_conversion(creator, result, little, progress, records_in_parallel(jobs), segment_size)
    return result


def finish_conversion(
    creator: GsymCreator,
    result: ConversionResult,
    little: bool,
    progress: ProgressSink | None,
    records: RecordEncoder | None = None,
    segment_size: int | None = None,
) -> None:
    """Finalize `creator` and encode its functions into `result` (its counts, then
    `data`, or `segments` of about `segment_size` bytes when given): the last step
    of every conversion into GSYM, Breakpad's too (`stackmark.conversion.from_breakpad`).
    The records are encoded with `records` when given, else in this process; a set of
    functions that cannot be written raises `ConversionFailed`, with the counts."""
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


__all__ = [
    "ConversionFailed",
    "ConversionResult",
    "GsymWriteError",
    "ObjectImage",
    "convert_elf",
    "convert_image",
    "convert_macho",
    "elf_image",
    "finish_conversion",
    "macho_image",
]
