"""Building a `Symbolizer` from where-to-look settings (every front end's way in).

    settings = SymbolSettings(debug_file_directories=["/srv/debug"], gsym_cache="build")
    symbolizer = build_symbolizer(settings, debuginfod=client)

`SymbolSettings` holds what `stackmark symbolize` takes on its command line
about symbol files (and nothing about output); `build_symbolizer` turns it
into `SymbolizerOptions` with the right source factories: the GSYM cache
first (entries already built, or built on first use, or built in the
background while DWARF answers), then DWARF + symbol table. The CLI, the
symbolication service, the Dask workers, the debugger session and the
language server all build their symbolizer here, so that the same options
give the same answers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from stackmark.errors import StackmarkError
from stackmark.plain import Record
from stackmark.symbols.store import DEFAULT_DEBUG_FILE_DIRECTORIES

if TYPE_CHECKING:
    from stackmark.symbols.debuginfod import DebuginfodClient
    from stackmark.symbols.gsym_background import BackgroundGsymBuilds
    from stackmark.symbols.source import ModuleFiles, SourceFactory, SymbolSource
    from stackmark.symbols.symbolizer import Symbolizer

GSYM_CACHE_MODES = ("use", "build", "background", "off")

SYMBOLIZER_ANSWERS = 0
"""Answers the Symbolizer keeps for the markup filter: none, since the Resolver
and the bt fast path above it keep theirs (a cache there would only hold the
same frames again)."""


class SymbolSettings(Record):
    """Where symbols are looked for, as `stackmark symbolize` takes it.

    `gsym_cache` is "use" (entries already built), "build" (also build missing
    ones on first use), "background" (answer from DWARF at once and build the
    missing entry in a background thread: `stackmark.symbols.gsym_background`)
    or "off"; `gsym_cache_dir` None is the default cache.
    `relative_names`: files named relative to their compilation directory (only
    DWARF keeps that, so the GSYM cache is not used). `llvm19`: look where
    llvm-symbolizer 19 looks (no --obj, no GSYM, no module's own path).
    `module_names`: a module's name in a log is a path worth looking at, after
    the other local places (the CLI on the machine that crashed; never a
    service, whose requests must not name files). `cache_size`: answers the
    Symbolizer remembers (0: its caller keeps them).
    """

    __slots__ = _fields = (
        "debug_file_directories",
        "objects",
        "symbol_paths",
        "gsym_paths",
        "gsym_cache",
        "gsym_cache_dir",
        "relative_names",
        "llvm19",
        "module_names",
        "cache_size",
    )
    debug_file_directories: list[str]
    objects: list[str]
    symbol_paths: list[str]
    gsym_paths: list[str]
    gsym_cache: str
    gsym_cache_dir: str | None
    relative_names: bool
    llvm19: bool
    module_names: bool
    cache_size: int

    def __init__(
        self,
        debug_file_directories: list[str] | None = None,
        objects: list[str] | None = None,
        symbol_paths: list[str] | None = None,
        gsym_paths: list[str] | None = None,
        gsym_cache: str = "use",
        gsym_cache_dir: str | None = None,
        relative_names: bool = False,
        llvm19: bool = False,
        module_names: bool = False,
        cache_size: int = SYMBOLIZER_ANSWERS,
    ) -> None:
        if gsym_cache not in GSYM_CACHE_MODES:
            raise StackmarkError(f"GSYM cache mode {gsym_cache!r} is not one of {GSYM_CACHE_MODES}")
        self.debug_file_directories = (
            list(DEFAULT_DEBUG_FILE_DIRECTORIES)
            if not debug_file_directories
            else list(debug_file_directories)
        )
        self.objects = list(objects or [])
        self.symbol_paths = list(symbol_paths or [])
        self.gsym_paths = list(gsym_paths or [])
        self.gsym_cache = gsym_cache
        self.gsym_cache_dir = gsym_cache_dir
        self.relative_names = relative_names
        self.llvm19 = llvm19
        self.module_names = module_names
        self.cache_size = cache_size

    def to_dict(self) -> dict[str, object]:
        """The settings as plain JSON values (for worker processes)."""
        return {name: getattr(self, name) for name in self._fields}

    @classmethod
    def from_dict(cls, values: dict[str, object]) -> SymbolSettings:
        return cls(**values)  # type: ignore[arg-type]


def build_symbolizer(
    settings: SymbolSettings,
    debuginfod: DebuginfodClient | None = None,
    *,
    progress_stream: TextIO | None = None,
    report: Callable[[str], None] | None = None,
    builds: BackgroundGsymBuilds | None = None,
) -> Symbolizer:
    """The symbolizer `settings` describe (llvm 19 ignores --obj, reads no GSYM file,
    never looks at a module's own path and uses the file at a `.build-id` path
    whatever its build ID, so `settings.llvm19` does the same). GSYM cache builds
    are announced through `report` (default: a line on `progress_stream`, itself
    stderr by default), their progress on `progress_stream`. In the "background"
    mode, `builds` runs them (default: one reporting no progress); whoever made
    it closes it."""
    from stackmark.symbols.elf_source import elf_source_factory
    from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions

    options = SymbolizerOptions(
        debug_file_directories=list(settings.debug_file_directories),
        objects=[] if settings.llvm19 else list(settings.objects),
        symbol_paths=list(settings.symbol_paths),
        gsym_paths=[] if settings.llvm19 else list(settings.gsym_paths),
        trust_build_id_paths=settings.llvm19,
        debuginfod=debuginfod,
        cache_size=settings.cache_size,
        module_names=settings.module_names and not settings.llvm19,
    )
    if settings.relative_names:
        # GSYM keeps absolute paths only: relative names come from the DWARF.
        from stackmark.symbols.elf_source import relative_elf_source_factory

        options.source_factories = [relative_elf_source_factory]
    elif settings.gsym_cache == "background":
        if builds is None:
            from stackmark.symbols.gsym_background import BackgroundGsymBuilds

            builds = BackgroundGsymBuilds()
        options.source_factories = [builds.factory(settings.gsym_cache_dir)]
    elif settings.gsym_cache != "off":
        options.source_factories = [
            gsym_cache_factory(
                settings.gsym_cache_dir,
                build=settings.gsym_cache == "build",
                progress_stream=progress_stream,
                report=report,
            ),
            elf_source_factory,
        ]
    return Symbolizer(options)


def gsym_cache_factory(
    cache_dir: str | None,
    *,
    build: bool,
    progress_stream: TextIO | None = None,
    report: Callable[[str], None] | None = None,
) -> SourceFactory:
    """Answers from the GSYM cache: entries already built, or (`build`) built on first
    use, once per build ID across processes (the cache's lock).

    Imports the GSYM code only when a module is looked up."""

    def factory(files: ModuleFiles) -> SymbolSource | None:
        from stackmark.symbols.cache import GsymCache
        from stackmark.symbols.gsym_source import GsymSource, gsym_source_factory

        cache = GsymCache(cache_dir)
        stream = progress_stream if progress_stream is not None else sys.stderr
        if build:
            try:
                missing = files.build_id and not all(
                    p.is_file() for p in cache.entry_paths(files.build_id)[:2]
                )
            except StackmarkError:
                missing = False  # not a build ID the cache takes: the factory declines
            if missing:
                # Long work: say so (the cache entry is made once per build ID).
                message = (
                    f"building the GSYM cache entry for {files.dwarf_file} "
                    f"in {cache.root} (once per build ID)..."
                )
                if report is not None:
                    report(message)
                else:
                    print(f"stackmark symbolize: {message}", file=stream, flush=True)
            from stackmark.formats.gsym.progress import Progress

            # On a terminal, how the conversion goes (tens of seconds for a large binary).
            return gsym_source_factory(cache, Progress(stream))(files)
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
