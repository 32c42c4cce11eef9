"""GSYM files that users bring: found by build ID, answering code lookups.

`stackmark symbolize --gsym-path DIR` names directories of GSYM files (made
by llvm-gsymutil or `stackmark gsym convert`), so that a device's logs can
be symbolized where only the compact GSYM files of its binaries are kept.
A file is found by the UUID in its header, which both converters take from
the ELF build ID. A module that no ELF file with debug information answers
for is answered from its GSYM file: functions, files, lines and inline
calls, as `stackmark gsym lookup` gives them. A GSYM holds no columns
(they print as 0) and no data symbols, and names each function and inlined
call once (the linkage name where DWARF has one, which is demangled as
usual; else the qualified name).

A function's address by its linkage name (go to definition of a `symbol`
element) comes from the names of the file's functions. GCC gives a file-local
C++ function (`static`, or in an anonymous namespace) no linkage name in DWARF,
so a GSYM names it `helper`, not `_ZL6helperi` (and a function of an anonymous
namespace without that namespace: unnamed, it adds nothing to the name). A
mangled name that no function has is also looked for by that qualified name.
"""

from __future__ import annotations

import os

from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.gsym.header import (
    HEADER_SIZE,
    MAX_UUID_SIZE,
    detect_byte_order,
    raw_fields,
)
from stackmark.model import DataSymbol, SourceFrame
from stackmark.symbols.source import ModuleFiles

_ANONYMOUS = "(anonymous namespace)::"

FOUND_AS = "GSYM file"
"""`ModuleFiles.how` of a module answered by a user's GSYM file."""


def gsym_uuid(path: str) -> str | None:
    """The UUID (lower-case hex) in the version-1 header of the GSYM file at `path`,
    or None when it is not one or has no UUID."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER_SIZE)
    except OSError:
        return None
    if len(head) < HEADER_SIZE:
        return None
    try:
        little = detect_byte_order(head, path)
    except FormatError:
        return None
    fields = raw_fields(head, little)
    if fields["Version"] != 1:
        return None
    size = fields["UUIDSize"]
    if not 0 < size <= MAX_UUID_SIZE:
        return None
    uuid: bytes = fields["UUID"][:size]
    return uuid.hex()


class GsymDirectories:
    """The `*.gsym` files under some directories, by the build ID in their headers.

    The directories are read once, on the first question (only the 48-byte
    header of each file); files are taken in sorted path order, the first one
    for a build ID winning."""

    def __init__(self, directories: list[str]) -> None:
        self.directories = list(directories)
        self._by_uuid: dict[str, str] | None = None

    def _index(self) -> dict[str, str]:
        if self._by_uuid is None:
            found: dict[str, str] = {}
            for top in self.directories:
                for root, dirs, names in os.walk(top):
                    dirs.sort()
                    for name in sorted(names):
                        path = os.path.join(root, name)
                        # Regular files only: opening a FIFO named x.gsym would block.
                        if name.endswith(".gsym") and os.path.isfile(path):
                            uuid = gsym_uuid(path)
                            if uuid is not None:
                                found.setdefault(uuid, path)
            self._by_uuid = found
        return self._by_uuid

    def find(self, build_id: str) -> str | None:
        """The GSYM file for `build_id` (lower-case hex): its UUID is the build ID, or
        the build ID's first 20 bytes (the most a GSYM UUID holds)."""
        index = self._index()
        return index.get(build_id) or index.get(build_id[: 2 * MAX_UUID_SIZE])


class GsymFileSource:
    """A `SymbolSource` over a GSYM file: a user's (see the module doc), or one
    converted from a Breakpad `.sym` (`stackmark.symbols.breakpad_store.BreakpadSource`)."""

    KIND = "GSYM file"
    """What the file is, for `description`."""

    def __init__(self, path: str) -> None:
        from stackmark.formats.gsym.reader import GsymReader

        self.path = path
        self.reader = GsymReader.open(path)

    @property
    def description(self) -> str:
        return f"{self.KIND} {self.path}"

    @property
    def has_debug_info(self) -> bool:
        return True

    def frames_at(self, address: int) -> list[SourceFrame]:
        try:
            result = self.reader.lookup(address)
        except StackmarkError:  # (FormatError among them)
            return []  # not in the file, or a damaged record: no answer for this address
        return [SourceFrame(loc.name, loc.name, loc.path, loc.line, 0) for loc in result.locations]

    def data_at(self, address: int) -> DataSymbol | None:
        return None

    def address_of(self, name: str) -> int | None:
        """The function named `name` in the file; failing that, a C++ function by the
        qualified name DWARF gave it instead of a linkage name (see the module doc)."""
        found = self.reader.address_of(name)
        if found is None:
            from stackmark.demangle import qualified_name

            qualified = qualified_name(name)
            if qualified is not None:
                # An unnamed namespace adds nothing to a DWARF qualified name.
                found = self.reader.address_of(qualified.replace(_ANONYMOUS, ""))
        return found

    def close(self) -> None:
        self.reader.close()


def gsym_file_factory(files: ModuleFiles) -> GsymFileSource | None:
    """A `SourceFactory`: the source for a module found as a user's GSYM file."""
    return GsymFileSource(files.binary) if files.how == FOUND_AS else None
