"""Finding the files for a build ID, and checking that they are the right ones.

Where a build ID is looked for, in this order:

1. `--obj FILE` files, indexed by their own build ID;
2. each debug-file directory (`--debug-file-directory DIR`, default
   /usr/lib/debug): `DIR/.build-id/xx/rest.debug`;
3. each symbol path (`--symbol-path DIR`): `DIR/.build-id/xx/rest[.debug]`,
   then every ELF file under DIR, indexed by its own build ID;
4. the path the module was loaded from, when the caller knows it;
5. the module's own name, when the caller gives it (a log's
   `{{{module}}}` names the file the process loaded): an absolute name
   is looked at where it points, a relative one under each symbol path;
6. the last resorts (debuginfod), only when nothing above gave debug
   info: each yields candidate files, checked like all others.

Every candidate's build ID is read and compared (llvm trusts the path;
a stale file there gives wrong answers silently). `trust_build_id_paths`
makes the store trust a debug-file directory's `.build-id` path as llvm 19
does (--compat=llvm19): the file there is used whatever its build ID. The first matching file
answers when it has DWARF. When it has none but another match does (a
stripped binary given with --obj, its debug file in a debug-file
directory), the pair answers as llvm pairs them: symbols from the first,
DWARF from the other. Failing that, when a matching file names a debug
file in `.gnu_debuglink`, that file is looked for the way GDB and llvm
do: next to the binary, in its `.debug/` subdirectory, and under each
debug-file directory followed by the binary's own directory. It must
carry the same build ID, or, when it has none, the CRC32 the link
records. Without any DWARF, the first file with a symbol table answers.
The files found carry the store's way to find a dwz supplementary file
(`.gnu_debugaltlink`): beside the file that names it, else by its build ID
in the same debug-file directories (`stackmark.dwarf.supplementary`).

Every rejected or missing candidate is recorded in `searched` with the
reason, so a front end can say why nothing was found. A file at the
module's own path (or name) that has another build ID is also listed in
`mismatched`: it is most likely the program rebuilt since the log was
written, which deserves a warning of its own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from stackmark.dwarf.split_files import SplitDwarfFinder
from stackmark.dwarf.supplementary import supplementary_finder
from stackmark.elf import SHT_NOBITS, ElfFile, is_elf
from stackmark.errors import FormatError
from stackmark.symbols.api import Failure, Reason
from stackmark.symbols.source import ModuleFiles

DEFAULT_DEBUG_FILE_DIRECTORIES = ("/usr/lib/debug",)

MODULE_PATH = "module path"
"""How a file was found: at the path a debugger saw the module loaded from."""
MODULE_NAME = "module name"
"""How a file was found: at the path a log names the module by."""

LastResort = Callable[[str, bool, list[str]], Iterable[tuple[str, str]]]
"""A place looked in after every local one (e.g. debuginfod): called with the
build ID, whether a file with the code is wanted too (nothing matched
locally) and the `searched` list to note failures in; yields (path, how)."""
_MAX_INDEXED_FILES = 20000  # per symbol path: a guard against pointing at "/"
_HEX_DIGITS = frozenset("0123456789abcdef")
_SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".build-id"})


class _Candidate:
    """What is known about one file: its build ID and what it carries."""

    __slots__ = ("build_id", "debuglink", "has_dwarf", "has_symbols", "path")

    def __init__(
        self,
        path: str,
        build_id: str | None,
        has_dwarf: bool,
        has_symbols: bool,
        debuglink: tuple[str, int] | None,
    ):
        self.path = path
        self.build_id = build_id
        self.has_dwarf = has_dwarf
        self.has_symbols = has_symbols
        self.debuglink = debuglink


class Lookup:
    """The outcome of a store lookup: the files found, or why there are none.
    (Plain classes here: dataclass creation costs start-up time.)"""

    __slots__ = ("build_id", "failure", "files", "has_debug_info", "mismatched", "searched")

    def __init__(
        self,
        build_id: str,
        files: ModuleFiles | None,
        has_debug_info: bool = False,
        searched: list[str] | None = None,
        failure: Failure | None = None,
    ):
        self.build_id = build_id
        self.files = files
        self.has_debug_info = has_debug_info
        self.searched: list[str] = searched if searched is not None else []
        self.failure = failure
        # (path, build ID found there or None) for the module's own file(s)
        self.mismatched: list[tuple[str, str | None]] = []

    def __repr__(self) -> str:
        return (
            f"Lookup(build_id={self.build_id!r}, files={self.files!r}, "
            f"has_debug_info={self.has_debug_info}, failure={self.failure!r})"
        )


class SymbolStore:
    """Build ID -> files, over debug-file directories, --obj files and symbol paths."""

    def __init__(
        self,
        debug_file_directories: Sequence[str] = DEFAULT_DEBUG_FILE_DIRECTORIES,
        objects: Sequence[str] = (),
        symbol_paths: Sequence[str] = (),
        last_resorts: Sequence[LastResort] = (),
        trust_build_id_paths: bool = False,
    ):
        self.debug_file_directories = list(debug_file_directories)
        # dwz supplementary files are looked for in the same directories.
        self.load_supplementary = supplementary_finder(self.debug_file_directories)
        self.trust_build_id_paths = trust_build_id_paths
        self.objects = list(objects)
        self.symbol_paths = list(symbol_paths)
        self.last_resorts = list(last_resorts)
        self._candidates: dict[str, _Candidate | str] = {}  # path -> facts or error text
        self._object_index: dict[str, list[str]] | None = None
        self._path_indexes: dict[str, dict[str, list[str]]] = {}
        self._cache: dict[tuple[str, str | None, str | None], Lookup] = {}

    def add_object(self, path: str) -> None:
        """Take `path` as one more --obj file (a request named it: llvm-symbolizer's
        address mode reads the symbols of the file it is given, and the DWARF of
        its debug file when it has none)."""
        if path not in self.objects:
            self.objects.append(path)
            self._object_index = None
            self._cache.clear()

    # -- facts about files ------------------------------------------------------

    def _inspect(self, path: str) -> _Candidate | str:
        """The facts about `path`, or a reason it cannot be used (cached)."""
        known = self._candidates.get(path)
        if known is not None:
            return known
        result: _Candidate | str
        if not os.path.isfile(path):
            result = "not found"
        elif not is_elf(path):
            result = "not an ELF file"
        else:
            try:
                with ElfFile.open(path) as elf:
                    symtab = elf.section(".symtab") or elf.section(".dynsym")
                    result = _Candidate(
                        path,
                        elf.build_id,
                        elf.has_dwarf,
                        symtab is not None and symtab.size > 0 and symtab.type != SHT_NOBITS,
                        elf.debuglink,
                    )
            except FormatError as exc:
                result = f"unreadable ({exc.reason})"
        self._candidates[path] = result
        return result

    # -- the places ------------------------------------------------------------

    def _objects_by_build_id(self) -> dict[str, list[str]]:
        if self._object_index is None:
            index: dict[str, list[str]] = {}
            for path in self.objects:
                facts = self._inspect(path)
                if isinstance(facts, _Candidate) and facts.build_id:
                    index.setdefault(facts.build_id, []).append(path)
            self._object_index = index
        return self._object_index

    def _symbol_path_index(self, root: str) -> dict[str, list[str]]:
        index = self._path_indexes.get(root)
        if index is None:
            index = {}
            for path in _elf_files_under(root):
                facts = self._inspect(path)
                if isinstance(facts, _Candidate) and facts.build_id:
                    index.setdefault(facts.build_id, []).append(path)
            self._path_indexes[root] = index
        return index

    def _candidate_paths(
        self, build_id: str, module_path: str | None, module_name: str | None
    ) -> Iterator[tuple[str, str]]:
        """(path, how it was found) for every place the build ID may be, in order."""
        head, rest = build_id[:2], build_id[2:]
        for path in self._objects_by_build_id().get(build_id, []):
            yield path, "--obj"
        for directory in self.debug_file_directories:
            yield (
                os.path.join(directory, ".build-id", head, rest + ".debug"),
                "debug-file-directory",
            )
        for root in self.symbol_paths:
            for suffix in (".debug", ""):
                yield os.path.join(root, ".build-id", head, rest + suffix), "symbol-path"
            for path in self._symbol_path_index(root).get(build_id, []):
                yield path, "symbol-path"
        if module_path:
            yield module_path, MODULE_PATH
        if module_name:
            for path in self._paths_for_name(module_name):
                yield path, MODULE_NAME

    def _paths_for_name(self, name: str) -> list[str]:
        """Where a module named `name` may be: there when absolute, else under each
        symbol path (never above it: a name from a log holds no `..` that counts)."""
        if not name or "\0" in name:
            return []  # no file has that name (and os functions refuse a NUL)
        if os.path.isabs(name):
            return [name]
        if ".." in name.split("/"):
            return []
        return [os.path.join(root, name) for root in self.symbol_paths]

    # -- lookups ----------------------------------------------------------------

    def build_ids_starting_with(self, prefix: str) -> list[str]:
        """The build IDs (sorted) that start with `prefix` (lower-case hex) among the
        local places: --obj files, `.build-id` trees and the ELF files of symbol paths.

        For callers that know a build ID by its start only (a Breakpad debug ID keeps
        16 bytes); each one found is then looked up by `find` as usual."""
        prefix = prefix.lower()
        if len(prefix) < 2 or not _HEX_DIGITS.issuperset(prefix):
            return []  # it becomes part of a path below
        found = {b for b in self._objects_by_build_id() if b.startswith(prefix)}
        head, rest = prefix[:2], prefix[2:]
        trees: list[tuple[str, tuple[str, ...]]] = [
            (d, (".debug",)) for d in self.debug_file_directories
        ]
        trees += [(root, (".debug", "")) for root in self.symbol_paths]
        for top, suffixes in trees:
            with contextlib.suppress(OSError):
                for entry in os.scandir(os.path.join(top, ".build-id", head)):
                    for suffix in suffixes:
                        stem = entry.name[: len(entry.name) - len(suffix)]
                        if (
                            entry.name.endswith(suffix)
                            and stem.startswith(rest)
                            and _HEX_DIGITS.issuperset(stem)
                        ):
                            found.add(head + stem)
                            break
        for root in self.symbol_paths:
            found.update(b for b in self._symbol_path_index(root) if b.startswith(prefix))
        return sorted(found)

    def find(
        self, build_id: str, module_path: str | None = None, module_name: str | None = None
    ) -> Lookup:
        """The files for `build_id` (lower-case hex).

        `module_path` (where a debugger saw the file) and `module_name` (what a
        log calls the module: a path) are looked at after every other local
        place; the file there must have the build ID too. Without a build ID,
        only `module_path` is trusted."""
        build_id = build_id.lower()
        key = (build_id, module_path, module_name)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._find(build_id, module_path, module_name)
        return cached

    def _find(self, build_id: str, module_path: str | None, module_name: str | None) -> Lookup:
        lookup = Lookup(build_id, None)
        if not build_id:
            if module_path:
                return self._without_build_id(module_path, lookup)
            lookup.failure = Failure(Reason.NO_BUILD_ID)
            return lookup
        if len(build_id) % 2 or not _HEX_DIGITS.issuperset(build_id):
            # It becomes part of paths below: no `../` or `/` from a log. (Any
            # length: ld writes what --build-id=0x... says, llvm finds it.)
            lookup.failure = Failure(Reason.INVALID_BUILD_ID, repr(build_id[:80]))
            return lookup
        matches: list[tuple[_Candidate, str]] = []
        seen: set[str] = set()
        for path, how in self._candidate_paths(build_id, module_path, module_name):
            try:
                real = os.path.realpath(path)
            except ValueError:  # a NUL in a path given to us
                lookup.searched.append(f"{path!r}: not a file name")
                continue
            if real in seen:
                continue
            seen.add(real)
            facts = self._inspect(path)
            if isinstance(facts, str):
                # Only the places a user named are worth listing as missing.
                quiet = how == "symbol-path" or (how == MODULE_NAME and path != module_name)
                if facts != "not found" or not quiet:
                    lookup.searched.append(f"{path}: {facts}")
                continue
            trusted = self.trust_build_id_paths and how == "debug-file-directory"
            if facts.build_id != build_id and not trusted:
                found = facts.build_id or "none"
                lookup.searched.append(f"{path}: build ID {found} does not match")
                if how in (MODULE_PATH, MODULE_NAME):
                    lookup.mismatched.append((path, facts.build_id))
                continue
            matches.append((facts, how))
        if self.last_resorts and not self._gives_debug_info(matches):
            matches += self._last_resort_matches(build_id, not matches, lookup)
        if not matches:
            lookup.failure = Failure(Reason.NOT_FOUND)
            return lookup
        return self._choose(matches, lookup)

    def _gives_debug_info(self, matches: list[tuple[_Candidate, str]]) -> bool:
        """Whether `_choose` finds DWARF among `matches`, directly or by debuglink."""
        if any(facts.has_dwarf for facts, _how in matches):
            return True
        scratch = Lookup("", None)
        return any(
            facts.debuglink is not None and self._follow_debuglink(facts, scratch) is not None
            for facts, _how in matches
        )

    def _last_resort_matches(
        self, build_id: str, want_code: bool, lookup: Lookup
    ) -> list[tuple[_Candidate, str]]:
        found: list[tuple[_Candidate, str]] = []
        for step in self.last_resorts:
            for path, how in step(build_id, want_code, lookup.searched):
                facts = self._inspect(path)
                if isinstance(facts, str):
                    lookup.searched.append(f"{path}: {facts}")
                elif facts.build_id != build_id:
                    lookup.searched.append(f"{path}: build ID {facts.build_id} does not match")
                else:
                    found.append((facts, how))
        return found

    def _choose(self, matches: list[tuple[_Candidate, str]], lookup: Lookup) -> Lookup:
        first, first_how = matches[0]
        with_dwarf = next(((f, h) for f, h in matches if f.has_dwarf), None)
        if with_dwarf is not None:
            facts, how = with_dwarf
            if facts is first or not first.has_symbols:
                lookup.files = self._files(lookup.build_id, facts.path, None, how)
            else:
                # The first file found (e.g. the --obj binary) lacks DWARF: like llvm,
                # take its symbols and the DWARF of the other file with its build ID.
                lookup.files = self._files(lookup.build_id, first.path, facts.path, first_how)
            lookup.has_debug_info = True
            return lookup
        for facts, how in matches:
            if facts.debuglink is not None:
                debug = self._follow_debuglink(facts, lookup)
                if debug is not None:
                    lookup.files = self._files(lookup.build_id, facts.path, debug, how)
                    lookup.has_debug_info = True
                    return lookup
        facts, how = next(((f, h) for f, h in matches if f.has_symbols), matches[0])
        lookup.files = self._files(lookup.build_id, facts.path, None, how)
        return lookup

    def _files(self, build_id: str, binary: str, debug: str | None, how: str) -> ModuleFiles:
        return ModuleFiles(
            build_id, binary, debug, how, self.load_supplementary, self.split_dwarf_finder()
        )

    def split_dwarf_finder(self) -> SplitDwarfFinder:
        """Where split DWARF's .dwp and .dwo files are looked for: llvm's places. A new
        finder each time: it keeps the files it opens, so one serves one module."""
        return SplitDwarfFinder()

    def _without_build_id(self, module_path: str, lookup: Lookup) -> Lookup:
        facts = self._inspect(module_path)
        if isinstance(facts, str):
            lookup.searched.append(f"{module_path}: {facts}")
            lookup.failure = Failure(Reason.UNREADABLE_MODULE)
            return lookup
        return self._choose([(facts, MODULE_PATH)], lookup)

    def _follow_debuglink(self, binary: _Candidate, lookup: Lookup) -> str | None:
        assert binary.debuglink is not None
        name, crc = binary.debuglink
        here = os.path.dirname(os.path.abspath(binary.path))
        places = [os.path.join(here, name), os.path.join(here, ".debug", name)]
        for directory in self.debug_file_directories:
            places.append(os.path.join(directory, here.lstrip("/"), name))
        for place in places:
            if os.path.realpath(place) == os.path.realpath(binary.path):
                continue
            facts = self._inspect(place)
            if isinstance(facts, str):
                if facts != "not found":
                    lookup.searched.append(f"{place} (.gnu_debuglink): {facts}")
                continue
            if not facts.has_dwarf:
                lookup.searched.append(f"{place} (.gnu_debuglink): has no DWARF")
                continue
            if facts.build_id is not None and binary.build_id is not None:
                if facts.build_id != binary.build_id:
                    lookup.searched.append(
                        f"{place} (.gnu_debuglink): build ID {facts.build_id} does not match"
                    )
                    continue
            elif _crc32_of(place) != crc:
                lookup.searched.append(f"{place} (.gnu_debuglink): CRC32 does not match")
                continue
            return place
        lookup.searched.append(f"{binary.path}: debug file {name!r} (.gnu_debuglink) not found")
        return None


def _crc32_of(path: str) -> int | None:
    import zlib

    crc = 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc & 0xFFFFFFFF


def _elf_files_under(root: str) -> Iterator[str]:
    """ELF files below `root` (symlinks to files included), at most _MAX_INDEXED_FILES."""
    count = 0
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            path = os.path.join(directory, name)
            if is_elf(path):
                yield path
                count += 1
                if count >= _MAX_INDEXED_FILES:
                    return
