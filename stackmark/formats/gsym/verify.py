"""Check a GSYM file against the DWARF of its binary, address by address.

For each address inside the GSYM's functions, the GSYM lookup is compared
with what the DWARF itself says (stackmark.dwarf, which follows
llvm-symbolizer): the inline chain at the address (innermost first), the
innermost frame's file and line from the line table, and each caller's
file and line from the call site. As in llvm-gsymutil's `--verify`, the
frame counts must agree and a DWARF name must begin with the GSYM name;
unlike it, an address no DWARF function covers (padding, assembler that a
line-table row happens to span) is not checked.

Every address is checked when there are at most `limit` of them; beyond
that a seeded random sample of `limit` addresses is (`limit=None`: all).

The binary is an ELF file or a Mach-O one: a thin file, a .dSYM bundle,
or the slice of a universal file whose LC_UUID is the GSYM's UUID. A dwz
supplementary file is asked of `load_supplementary`, split DWARF's .dwp and
.dwo files of `load_split` (none: not read).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

from stackmark.dwarf.functions import Function
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.sections import SectionSource
from stackmark.dwarf.split_files import SplitDwarfLoad
from stackmark.dwarf.supplementary import SupplementaryLoad
from stackmark.dwarf.unit import Unit
from stackmark.elf import ElfFile, is_elf
from stackmark.errors import FormatError
from stackmark.formats.gsym.codec import RecordError
from stackmark.formats.gsym.dwarf_names import NameBuilder
from stackmark.formats.gsym.from_dwarf import DW_AT_language
from stackmark.formats.gsym.lookup import GsymLookupError, SourceLocation
from stackmark.formats.gsym.reader import GsymReader
from stackmark.macho import MachOFile, dsym_members, read_universal


class ProgressSink(Protocol):
    def update(self, label: str, done: int, total: int) -> None: ...

    def finish(self) -> None: ...


@dataclass(slots=True)
class VerifyReport:
    addresses: int = 0
    checked: int = 0
    functions: int = 0
    mismatches: int = 0
    details: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def summary(self) -> str:
        verdict = "OK" if self.ok else f"{self.mismatches} mismatching addresses"
        return (
            f"verified {self.checked} of {self.addresses} addresses in {self.functions} "
            f"functions against the DWARF: {verdict}"
        )


@dataclass(frozen=True, slots=True)
class _Frame:
    name: str
    path: str | None
    line: int


class _DwarfFrames:
    def __init__(self, reader: DwarfReader):
        self.reader = reader
        self.names = NameBuilder()

    def _name(self, function: Function, unit: Unit) -> str:
        language = unit.top.get(DW_AT_language)
        text = self.names.name(
            (function.unit, function.offset),
            language if isinstance(language, int) else 0,
            function.linkage_name,
            function.name,
        )
        return text or ""

    def frames(self, addr: int) -> list[_Frame]:
        unit = self.reader.unit_for_address(addr)
        if unit is None:
            return []
        chain = unit.inline_chain(addr)
        table = unit.line_table()
        row = table.lookup(addr) if table is not None else None
        path = unit.file_name(row.file) if row is not None else None
        line = row.line if row is not None else 0
        if not chain:
            return []  # no function here in the DWARF: nothing to hold the GSYM to
        frames = []
        for function in chain:
            frames.append(_Frame(self._name(function, unit), path, line))
            if function.is_inlined:
                path = function.call_file_name
                line = function.call_line
        return frames


def _gsym_path(loc: SourceLocation) -> str | None:
    return loc.path


def open_binary(path: str, uuid: bytes) -> SectionSource[Any]:
    """The object file whose DWARF a GSYM with `uuid` was made from: `path` as
    an ELF or thin Mach-O file, the file in a .dSYM bundle, or the slice of a
    universal file with that LC_UUID."""
    members = dsym_members(path)
    if members:
        path = members[0]
    if is_elf(path):
        return ElfFile.open(path)
    slices = read_universal(path)
    if not slices:
        return MachOFile.open(path)
    for fat_arch in slices:
        image = MachOFile.open(path, fat_arch)
        if image.uuid == uuid:
            return image
        image.close()
    raise FormatError(f"no slice has the GSYM's UUID {uuid.hex()}", source=path)


def verify_gsym(
    gsym_path: str,
    binary_path: str,
    *,
    limit: int | None = 200_000,
    seed: int = 1,
    progress: ProgressSink | None = None,
    load_supplementary: SupplementaryLoad | None = None,
    load_split: SplitDwarfLoad | None = None,
) -> VerifyReport:
    report = VerifyReport()
    reader = GsymReader.open(gsym_path)
    binary = open_binary(binary_path, reader.uuid)
    dwarf = _DwarfFrames(
        DwarfReader(binary, load_supplementary=load_supplementary, load_split=load_split)
    )
    report.functions = reader.num_addresses
    spans = []
    for i in range(reader.num_addresses):
        start = reader.address(i)
        size = reader.function_info(i).size
        if size:
            spans.append((start, size))
    total = sum(size for _, size in spans)
    report.addresses = total
    if limit is None or total <= limit:
        addresses = [start + k for start, size in spans for k in range(size)]
    else:
        rng = random.Random(seed)
        picks = sorted(rng.sample(range(total), limit))
        addresses = []
        it = iter(spans)
        base_index = 0
        start, size = next(it)
        for pick in picks:
            while pick >= base_index + size:
                base_index += size
                start, size = next(it)
            addresses.append(start + pick - base_index)
    for n, addr in enumerate(addresses):
        if progress is not None and n % 2048 == 0:
            progress.update("verifying", n, len(addresses))
        expected = dwarf.frames(addr)
        if not expected or (len(expected) == 1 and expected[0].path is None):
            continue
        report.checked += 1
        try:
            got = reader.lookup(addr).locations
        except (GsymLookupError, RecordError) as exc:
            report.mismatches += 1
            report.details.append(f"error: address 0x{addr:x}: GSYM lookup failed: {exc}")
            continue
        problems = _compare(addr, expected, got)
        if problems:
            report.mismatches += 1
            report.details.extend(problems)
    if progress is not None:
        progress.finish()
    return report


def _compare(addr: int, expected: list[_Frame], got: list[SourceLocation]) -> list[str]:
    if len(expected) != len(got):
        lines = [
            f"error: address 0x{addr:x} has {len(expected)} DWARF inline frames and GSYM has "
            f"{len(got)}"
        ]
        lines += [f"    DWARF [{i}]: {f.name} @ {f.path}:{f.line}" for i, f in enumerate(expected)]
        lines += [f"    GSYM  [{i}]: {g.name} @ {g.path}:{g.line}" for i, g in enumerate(got)]
        return lines
    problems = []
    for want, have in zip(expected, got, strict=True):
        if not want.name.startswith(have.name):
            problems.append(
                f'error: address 0x{addr:x} DWARF function "{want.name}" doesn\'t match GSYM '
                f'function "{have.name}"'
            )
        if want.path != _gsym_path(have):
            problems.append(
                f'error: address 0x{addr:x} DWARF path "{want.path}" doesn\'t match GSYM path '
                f'"{_gsym_path(have)}"'
            )
        if want.line != have.line:
            problems.append(
                f"error: address 0x{addr:x} DWARF line {want.line} != GSYM line {have.line}"
            )
    return problems
