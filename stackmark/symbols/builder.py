"""A `Symbolizer` for the settings every command-line front end shares.

`stackmark symbolize` and `llvm-symbolizer-stackmark` look for symbols in
the same places (debug-file directories, --obj files, symbol paths, GSYM
files, debuginfod) and read them the same ways (the GSYM cache first, then
DWARF and the symbol table). They turn their options into a
`SymbolizerSettings` and call `build_symbolizer`:

    symbolizer = build_symbolizer(SymbolizerSettings(objects=["./app"]))

The GSYM cache's code is imported only when a module is looked up, so a
front end that starts often (a sanitizer starts its symbolizer once per
crash) pays nothing for it before then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from stackmark.errors import StackmarkError
from stackmark.plain import Record
from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES

if TYPE_CHECKING:
    from stackmark.symbols.debuginfod import DebuginfodClient
    from stackmark.symbols.source import ModuleFiles, SourceFactory, SymbolSource
    from stackmark.symbols.symbolizer import Symbolizer

GSYM_CACHE_MODES = ("use", "build", "off")
"""use: entries already built; build: also build missing ones on first use; off."""


class SymbolizerSettings(Record):
    """Where to look and what to read, as a front end's options say.

    Empty `debug_file_directories` means the default (/usr/lib/debug).
    `gsym_cache` is one of `GSYM_CACHE_MODES`; `relative_names` asks for file
    names relative to the compilation directory (read from DWARF: GSYM keeps
    absolute paths only, so the cache is not used then). `module_names` lets
    a module's own name (a path) be looked at (see SymbolizerOptions).
    `cache_size` is the number of answers the Symbolizer keeps (0: none).
    Messages about long work go to `report`, progress bars to `progress`.
    """

    __slots__ = _fields = (
        "debug_file_directories",
        "objects",
        "symbol_paths",
        "gsym_paths",
        "gsym_cache",
        "gsym_cache_dir",
        "debuginfod",
        "relative_names",
        "module_names",
        "cache_size",
        "report",
        "progress",
    )
    debug_file_directories: list[str]
    objects: list[str]
    symbol_paths: list[str]
    gsym_paths: list[str]
    gsym_cache: str
    gsym_cache_dir: str | None
    debuginfod: DebuginfodClient | None
    relative_names: bool
    module_names: bool
    cache_size: int
    report: Callable[[str], None] | None
    progress: TextIO | None

    def __init__(
        self,
        debug_file_directories: list[str] | None = None,
        objects: list[str] | None = None,
        symbol_paths: list[str] | None = None,
        gsym_paths: list[str] | None = None,
        gsym_cache: str = "use",
        gsym_cache_dir: str | None = None,
        debuginfod: DebuginfodClient | None = None,
        relative_names: bool = False,
        module_names: bool = True,
        cache_size: int = 1 << 16,
        report: Callable[[str], None] | None = None,
        progress: TextIO | None = None,
    ) -> None:
        self.debug_file_directories = debug_file_directories or list(DEFAULT_DEBUG_FILE_DIRECTORIES)
        self.objects = [] if objects is None else objects
        self.symbol_paths = [] if symbol_paths is None else symbol_paths
        self.gsym_paths = [] if gsym_paths is None else gsym_paths
        if gsym_cache not in GSYM_CACHE_MODES:
            raise StackmarkError(f"unknown GSYM cache mode {gsym_cache!r}")
        self.gsym_cache = gsym_cache
        self.gsym_cache_dir = gsym_cache_dir
        self.debuginfod = debuginfod
        self.relative_names = relative_names
        self.module_names = module_names
        self.cache_size = cache_size
        self.report = report
        self.progress = progress


def build_symbolizer(settings: SymbolizerSettings) -> Symbolizer:
    """The Symbolizer the settings describe."""
    from stackmark.symbols.elf_source import elf_source_factory
    from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions

    options = SymbolizerOptions(
        debug_file_directories=list(settings.debug_file_directories),
        objects=list(settings.objects),
        symbol_paths=list(settings.symbol_paths),
        gsym_paths=list(settings.gsym_paths),
        debuginfod=settings.debuginfod,
        cache_size=settings.cache_size,
        module_names=settings.module_names,
    )
    if settings.relative_names:
        from stackmark.symbols.elf_source import relative_elf_source_factory

        options.source_factories = [relative_elf_source_factory]
    elif settings.gsym_cache != "off":
        options.source_factories = [
            gsym_cache_factory(
                settings.gsym_cache_dir,
                build=settings.gsym_cache == "build",
                report=settings.report,
                progress=settings.progress,
            ),
            elf_source_factory,
        ]
    return Symbolizer(options)


def gsym_cache_factory(
    cache_dir: str | None,
    *,
    build: bool,
    report: Callable[[str], None] | None = None,
    progress: TextIO | None = None,
) -> SourceFactory:
    """Answers from the GSYM cache: entries already built, or (`build`) built on first use.

    Imports the GSYM code only when a module is looked up."""

    def factory(files: ModuleFiles) -> SymbolSource | None:
        from stackmark.symbols.cache import GsymCache
        from stackmark.symbols.gsym_source import GsymSource, gsym_source_factory

        cache = GsymCache(cache_dir)
        if build:
            try:
                missing = files.build_id and not all(
                    p.is_file() for p in cache.entry_paths(files.build_id)[:2]
                )
            except StackmarkError:
                missing = False  # not a build ID the cache takes: the factory declines
            if missing and report is not None:
                # Long work: say so (the cache entry is made once per build ID).
                report(
                    f"building the GSYM cache entry for {files.dwarf_file} "
                    f"in {cache.root} (once per build ID)..."
                )
            from stackmark.formats.gsym.progress import Progress

            bar = Progress(progress) if progress is not None else None
            return gsym_source_factory(cache, bar)(files)
        if not files.build_id:
            return None
        try:
            # Validation checks the entry (the extras belong to the GSYM, whose UUID,
            # when it has one, is the build ID; CRC-32s unless this very pair passed
            # them before); the source then opens it without checking again.
            entry = cache.validate(files.build_id)
            if entry is None:
                return None
            return GsymSource(str(entry.gsym), str(entry.extras), files, entry.identity)
        except (StackmarkError, OSError):
            return None

    return factory
