"""`stackmark gsym convert`'s work: an input file to GSYM files, and llvm-gsymutil's log.

`convert_file` tells the input's kind from its first bytes and hands it to
its converter: an ELF file or a thin Mach-O file to the GSYM pipeline
(`convert_elf`, `convert_macho`), a Breakpad `.sym` to `convert_breakpad`
(`conversion/from_breakpad.py`).
As llvm-gsymutil does, it converts each slice of a universal Mach-O file
(`OUT.<arch>` when more than one is converted) and each file of a `.dSYM`
bundle, writes segment files instead of one GSYM with a segment size, and
prints the log llvm-gsymutil prints (`log_text`), also for a conversion that
fails with counts to report.

Every output file is written atomically (a temporary file, fsync, rename:
`write_atomically`), so a failed conversion leaves nothing behind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from typing import TextIO

from stackmark.conversion.from_breakpad import convert_breakpad
from stackmark.dwarf.split_files import SplitDwarfLoad
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.elf import is_elf
from stackmark.errors import StackmarkError
from stackmark.formats.breakpad import is_breakpad
from stackmark.formats.gsym.convert import (
    ConversionFailed,
    ConversionResult,
    ProgressSink,
    convert_elf,
    convert_macho,
)
from stackmark.formats.gsym.creator import GsymWriteError
from stackmark.macho import FatArch, MachOFile, dsym_members, is_macho, read_universal
from stackmark.whole_files import write_whole

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
    load_split: SplitDwarfLoad | None = None,
) -> ConversionResult:
    """Convert `input_path`, write `output_path`, print llvm's log; returns the
    result of the last file written.

    The input is an ELF file, a Breakpad .sym, a Mach-O file (each slice of a
    universal file, or those `arch_filters` names by arch name or CPU type,
    is written to `output_path` + "." + arch when there are several), or a
    .dSYM bundle (each file inside is converted to `output_path`). The log is
    as llvm-gsymutil --quiet prints it with `quiet`. With `segment_size`, the
    segment files `output_path-0x<first address>` are written instead, as
    llvm does. `load_supplementary` finds an ELF file's dwz supplementary file,
    `load_split` its split DWARF's .dwp and .dwo files (None: none is looked
    for).
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
            load_split=load_split,
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
    load_split: SplitDwarfLoad | None,
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
            load_split=load_split,
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


__all__ = ["QUIET_CATEGORIES", "convert_file", "log_text", "write_atomically"]
