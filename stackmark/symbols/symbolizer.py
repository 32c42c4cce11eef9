"""`Symbolizer`: the `SymbolizerAPI` implementation front ends use.

    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=["/srv/debug"]))
    lookup = symbolizer.code(module, 0x1234)   # CodeLookup: frames, innermost first
    for frame in lookup.frames: ...

For each module it finds the files by build ID (`SymbolStore`), builds a
`SymbolSource` from them with the first source factory that accepts them
(a GSYM cache can put its factory first; DWARF + symbol table is the
default), and caches resolutions, open sources and recent answers.
Nothing here raises for bad or missing files: the resolution says why, and
an address the symbols cannot be read at has its `Failure` on its own answer.
"""

from __future__ import annotations

from _thread import RLock
from collections import OrderedDict
from typing import TYPE_CHECKING, TypeVar

from stackmark.errors import StackmarkError
from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.plain import Record
from stackmark.symbols.api import CodeLookup, DataLookup, Failure, ModuleResolution, Reason
from stackmark.symbols.declarations import Declaration, DeclarationFinder
from stackmark.symbols.elf_source import elf_source_factory
from stackmark.symbols.source import ModuleFiles, SourceFactory, SymbolSource
from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES, SymbolStore

if TYPE_CHECKING:  # imported (with urllib) only when a client is given
    from stackmark.symbols.debuginfod import DebuginfodClient


ANSWERS_KEPT = 1 << 16
"""Answers a Symbolizer remembers by default (for callers that keep none themselves)."""


class SymbolizerOptions(Record):
    """Where to look for files, and how much to remember.

    `debug_file_directories` hold `.build-id/xx/rest.debug` trees (default
    /usr/lib/debug); `objects` are binaries or debug files given by path;
    `symbol_paths` are directories searched for ELF files by build ID.
    `source_factories` are tried in order for each module (None: the
    default DWARF + symbol-table source only). `cache_size` bounds the
    number of remembered answers (0: none, for callers with their own).
    `debuginfod`, when set, is asked last, for build IDs that no local
    place gave debug info for. `gsym_paths` are directories of GSYM files,
    found by build ID: one answers for a module that no ELF file with debug
    info does (stackmark.symbols.gsym_files). With `module_names` (the
    default), a module's name is also taken for where its file may be: an
    absolute name (as sanitizers write) is looked at there, a relative one
    under each symbol path, after every other local place and with the
    build ID checked (llvm-symbolizer 19 does neither). `trust_build_id_paths`:
    use the file at a debug-file directory's `.build-id` path without checking
    its build ID, as llvm-symbolizer 19 does (stackmark.symbols.store).
    """

    __slots__ = _fields = (
        "debug_file_directories",
        "objects",
        "symbol_paths",
        "source_factories",
        "cache_size",
        "debuginfod",
        "gsym_paths",
        "module_names",
        "trust_build_id_paths",
    )
    debug_file_directories: list[str]
    objects: list[str]
    symbol_paths: list[str]
    source_factories: list[SourceFactory] | None
    cache_size: int
    debuginfod: DebuginfodClient | None
    gsym_paths: list[str]
    module_names: bool
    trust_build_id_paths: bool

    def __init__(
        self,
        debug_file_directories: list[str] | None = None,
        objects: list[str] | None = None,
        symbol_paths: list[str] | None = None,
        source_factories: list[SourceFactory] | None = None,
        cache_size: int = ANSWERS_KEPT,
        debuginfod: DebuginfodClient | None = None,
        gsym_paths: list[str] | None = None,
        module_names: bool = True,
        trust_build_id_paths: bool = False,
    ) -> None:
        self.debug_file_directories = (
            list(DEFAULT_DEBUG_FILE_DIRECTORIES)
            if debug_file_directories is None
            else debug_file_directories
        )
        self.objects = [] if objects is None else objects
        self.symbol_paths = [] if symbol_paths is None else symbol_paths
        self.source_factories = source_factories
        self.cache_size = cache_size
        self.debuginfod = debuginfod
        self.gsym_paths = [] if gsym_paths is None else gsym_paths
        self.module_names = module_names
        self.trust_build_id_paths = trust_build_id_paths


_AnswerKey = tuple[str, str | None, int]
_T = TypeVar("_T")


def _remember(cache: OrderedDict[_AnswerKey, _T], key: _AnswerKey, value: _T, size: int) -> None:
    if size <= 0:
        return  # the caller keeps answers itself
    cache[key] = value
    if len(cache) > size:
        cache.popitem(last=False)


class _Module:
    """What the symbolizer keeps per build ID (or per path, without one)."""

    __slots__ = ("files", "resolution", "source")

    def __init__(self, resolution: ModuleResolution, files: ModuleFiles | None):
        self.resolution = resolution
        self.files = files
        self.source: SymbolSource | None = None


class Symbolizer:
    """Files by build ID -> symbol sources -> cached answers (implements SymbolizerAPI)."""

    def __init__(self, options: SymbolizerOptions | None = None):
        self.options = options or SymbolizerOptions()
        last_resorts = []
        if self.options.debuginfod is not None:
            from stackmark.symbols.debuginfod import store_step

            last_resorts.append(store_step(self.options.debuginfod))
        self.store = SymbolStore(
            self.options.debug_file_directories,
            self.options.objects,
            self.options.symbol_paths,
            last_resorts,
            trust_build_id_paths=self.options.trust_build_id_paths,
        )
        factories = self.options.source_factories
        self.source_factories: list[SourceFactory] = (
            list(factories) if factories is not None else [elf_source_factory]
        )
        self._gsym_files = None
        if self.options.gsym_paths:
            from stackmark.symbols.gsym_files import GsymDirectories

            self._gsym_files = GsymDirectories(self.options.gsym_paths)
        self._modules: dict[tuple[str, str | None], _Module] = {}
        self._lock = RLock()
        # A failed lookup's answer is its Failure (the module's resolution stays as it was).
        self._frames: OrderedDict[_AnswerKey, list[SourceFrame] | Failure] = OrderedDict()
        self._data: OrderedDict[_AnswerKey, DataSymbol | Failure | None] = OrderedDict()
        self._declarations = DeclarationFinder(self.store.load_supplementary)

    # -- modules ------------------------------------------------------------------

    def _key(self, module: Module) -> tuple[str, str | None]:
        return (module.build_id.lower(), None if module.build_id else module.path)

    def _module(self, module: Module) -> _Module:
        key = self._key(module)
        known = self._modules.get(key)
        if known is not None:
            return known
        with self._lock:  # front ends may ask from several threads (the language server)
            known = self._modules.get(key)
            if known is not None:
                return known
            name = module.name if self.options.module_names else None
            lookup = self.store.find(module.build_id, module.path, name)
            files = lookup.files
            resolution = ModuleResolution(
                build_id=module.build_id.lower(),
                binary=files.dwarf_file if files is not None else None,
                failure=lookup.failure,
                searched=list(lookup.searched),
                has_debug_info=lookup.has_debug_info,
                mismatched=list(lookup.mismatched),
            )
            if self._gsym_files is not None and not lookup.has_debug_info:
                files = self._from_gsym_file(resolution, files)
            known = self._modules[key] = _Module(resolution, files)
            return known

    def _factories_for(self, files: ModuleFiles) -> list[SourceFactory]:
        """The factories to try: a user's GSYM file (`_from_gsym_file`) is read as
        GSYM only, other files by `source_factories` (the ELF factories would each
        add a 'not an ELF file' to a GSYM module's notes)."""
        if self._gsym_files is not None:
            from stackmark.symbols.gsym_files import FOUND_AS, gsym_file_factory

            if files.how == FOUND_AS:
                return [gsym_file_factory]
        return self.source_factories

    def _from_gsym_file(
        self, resolution: ModuleResolution, files: ModuleFiles | None
    ) -> ModuleFiles | None:
        """A user's GSYM file for the module, when one has its build ID (it has
        lines, which the ELF file found, if any, has not): `resolution` then names it."""
        assert self._gsym_files is not None
        path = self._gsym_files.find(resolution.build_id) if resolution.build_id else None
        if path is None:
            return files
        from stackmark.symbols.gsym_files import FOUND_AS

        resolution.binary = path
        resolution.failure = None
        resolution.has_debug_info = True
        return ModuleFiles(resolution.build_id, path, how=FOUND_AS)

    def add_object(self, path: str) -> None:
        """Use the file at `path` as if given with --obj, for modules not looked up yet."""
        with self._lock:
            self.store.add_object(path)

    def resolve(self, module: Module) -> ModuleResolution:
        """Find (and remember) the file that answers for `module`."""
        return self._module(module).resolution

    def source(self, module: Module) -> SymbolSource | None:
        """The source answering for `module` (built on first use), None if there is none."""
        entry = self._module(module)
        if entry.source is not None or entry.files is None:
            return entry.source
        with self._lock:
            if entry.source is not None or entry.files is None:
                return entry.source
            for factory in self._factories_for(entry.files):
                try:
                    source = factory(entry.files)
                except StackmarkError as exc:
                    entry.resolution.searched.append(f"{entry.files.binary}: {exc}")
                    continue
                except OSError as exc:
                    entry.resolution.searched.append(f"{entry.files.binary}: {exc.strerror}")
                    continue
                if source is not None:
                    entry.source = source
                    break
            if entry.source is None:
                if entry.resolution.failure is None:
                    entry.resolution.failure = Failure(Reason.UNREADABLE_SYMBOLS)
                entry.files = None
            return entry.source

    def opened_source(self, module: Module) -> SymbolSource | None:
        """The source answering for `module` if it is open already (never finds files or
        opens anything): front ends use it to tell a quick lookup from a slow one."""
        entry = self._modules.get(self._key(module))
        return entry.source if entry is not None else None

    # -- lookups -------------------------------------------------------------------

    def code(self, module: Module, address: int) -> CodeLookup:
        """Inline chain at module-relative `address` (already -1 adjusted)."""
        entry = self._module(module)
        source = entry.source if entry.source is not None else self.source(module)
        resolution = entry.resolution
        keep = self.options.cache_size > 0  # else the caller keeps answers itself
        key = (resolution.build_id, None if resolution.build_id else module.path, address)
        answer = self._frames.get(key) if keep else None
        if answer is None:
            answer = []
            if source is not None:
                try:
                    answer = source.frames_at(address)
                except StackmarkError as exc:
                    answer = Failure(Reason.LOOKUP_ERROR, str(exc))
            if keep:
                _remember(self._frames, key, answer, self.options.cache_size)
        if isinstance(answer, Failure):
            return CodeLookup(resolution, address, [], answer)
        return CodeLookup(resolution, address, list(answer))

    def data(self, module: Module, address: int) -> DataLookup:
        """Data symbol covering module-relative `address`."""
        key = (*self._key(module), address)
        source = self.source(module)
        resolution = self._module(module).resolution
        if key in self._data:
            answer = self._data[key]
        else:
            answer = None
            if source is not None:
                try:
                    answer = source.data_at(address)
                except StackmarkError as exc:
                    answer = Failure(Reason.LOOKUP_ERROR, str(exc))
            _remember(self._data, key, answer, self.options.cache_size)
        if isinstance(answer, Failure):
            return DataLookup(resolution, address, None, answer)
        return DataLookup(resolution, address, answer)

    def declaration_of(
        self, module: Module, name: str, address: int | None = None
    ) -> Declaration | None:
        """Where `name` is declared in `module`: the variable at module-relative `address`
        when given, else the function of that linkage name. None when the file answering
        for the module has no DWARF (a GSYM file) or no such declaration (declarations.py)."""
        binary = self.resolve(module).binary
        return self._declarations.find(binary, name, address) if binary is not None else None

    def address_of(self, module: Module, name: str) -> int | None:
        """The module-relative address of the function whose linkage name is `name`, from
        the source answering for `module` (`SymbolSource.address_of`: the ELF symbol table,
        or the function names of a GSYM file); None when it names none, or when the
        module has no symbols or they cannot be read. The source keeps its index by name:
        the first question builds it."""
        source = self.source(module)
        if source is None:
            return None
        try:
            return source.address_of(name)
        except StackmarkError:
            return None

    def close(self) -> None:
        """Close every open source. Under the lock that `_module` adds entries with: a
        front end may close while one of its threads is still finding a module's files
        (the language server's shutdown during a lookup)."""
        with self._lock:
            for entry in list(self._modules.values()):
                if entry.source is not None:
                    entry.source.close()
                    entry.source = None
            self._frames.clear()
            self._data.clear()
