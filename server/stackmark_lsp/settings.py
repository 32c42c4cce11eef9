"""The server's settings: where symbols are, and how source paths moved.

They come from the client twice: `initializationOptions` when the server
starts, and the `stackmark` section of `workspace/configuration` (asked
after start-up and whenever the client says the configuration changed).
A key the configuration gives overrides the same key from the
initialization options. The keys (names as issue 7 and the editor clients
use them):

    debugFileDirectories  [path]      .build-id trees (default /usr/lib/debug)
    objects               [path]      binaries or debug files, matched by build ID
    symbolPaths           [path]      directories searched for ELF files by build ID
    gsymPaths             [path]      directories of GSYM files, by the build ID in
                                      their headers (for modules with no debug file)
    cacheDir              path        GSYM cache and debuginfod downloads
                                      (default $XDG_CACHE_HOME/stackmark)
    debuginfodUrls        [url]       servers (default: DEBUGINFOD_URLS)
    debuginfodTimeout     seconds     per request, 0 for none (default: DEBUGINFOD_TIMEOUT, 90)
    debuginfodCachePath   path        downloads (default: cacheDir/debuginfod, else
                                      DEBUGINFOD_CACHE_PATH, else debuginfod's default)
    debuginfodOffline     bool        answer from downloads already made, ask no server
    sourcePathMap         {old: new}  source path prefixes to rewrite, longest first

An empty list means "the default", as when the key is absent (editors
send empty lists for settings the user never set). Paths may use `~`
and `$VARS`; relative paths are taken from the workspace root.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

KEYS = (
    "debugFileDirectories",
    "objects",
    "symbolPaths",
    "gsymPaths",
    "cacheDir",
    "debuginfodUrls",
    "debuginfodTimeout",
    "debuginfodCachePath",
    "debuginfodOffline",
    "sourcePathMap",
)


@dataclass(frozen=True, slots=True)
class Problem:
    """A setting that could not be used: which key, and what was wrong (a message id)."""

    key: str
    reason: str  # "not-a-list", "not-a-string", "not-an-object", "not-a-number",
    # "not-a-boolean", "unknown-key"


@dataclass(frozen=True, slots=True)
class Settings:
    debug_file_directories: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    symbol_paths: tuple[str, ...] = ()
    gsym_paths: tuple[str, ...] = ()
    cache_dir: str | None = None
    debuginfod_urls: tuple[str, ...] = ()
    debuginfod_timeout: float | None = None  # None: DEBUGINFOD_TIMEOUT or the default
    debuginfod_cache_path: str | None = None
    debuginfod_offline: bool = False
    source_path_map: tuple[tuple[str, str], ...] = field(default=())

    def map_source(self, path: str) -> str:
        """`path` with the longest matching old prefix replaced by its new one."""
        for old, new in self.source_path_map:
            if path == old or path.startswith(old.rstrip("/") + "/"):
                return new.rstrip("/") + path[len(old.rstrip("/")) :]
        return path


def _path(value: str, root: str | None) -> str:
    expanded = os.path.expandvars(os.path.expanduser(value))
    if not os.path.isabs(expanded) and root:
        expanded = os.path.join(root, expanded)
    return os.path.normpath(expanded) if expanded else expanded


def parse(layers: list[object], root: str | None = None) -> tuple[Settings, list[Problem]]:
    """Settings from `layers` (later ones override earlier ones, key by key).

    Each layer is what a client sent: a mapping with the keys above, or one
    holding them under "stackmark". Values of the wrong type are skipped
    and reported.
    """
    values: dict[str, object] = {}
    problems: list[Problem] = []
    for layer in layers:
        if isinstance(layer, Mapping) and isinstance(layer.get("stackmark"), Mapping):
            layer = layer["stackmark"]
        if not isinstance(layer, Mapping):
            continue
        for key, value in layer.items():
            if key not in KEYS:
                if key not in ("stackmark", "server", "trace"):
                    problems.append(Problem(str(key), "unknown-key"))
                continue
            if value is None or value == [] or value == {} or value == "":
                continue  # the default
            values[key] = value

    def paths(key: str) -> tuple[str, ...]:
        value = values.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(Problem(key, "not-a-list"))
            return ()
        return tuple(_path(v, root) for v in value if v)

    cache_dir = values.get("cacheDir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        problems.append(Problem("cacheDir", "not-a-string"))
        cache_dir = None
    urls = values.get("debuginfodUrls")
    if isinstance(urls, str):
        urls = urls.split()
    if urls is not None and (
        not isinstance(urls, list) or not all(isinstance(u, str) for u in urls)
    ):
        problems.append(Problem("debuginfodUrls", "not-a-list"))
        urls = None
    timeout = values.get("debuginfodTimeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0
    ):
        problems.append(Problem("debuginfodTimeout", "not-a-number"))
        timeout = None
    downloads = values.get("debuginfodCachePath")
    if downloads is not None and not isinstance(downloads, str):
        problems.append(Problem("debuginfodCachePath", "not-a-string"))
        downloads = None
    offline = values.get("debuginfodOffline", False)
    if not isinstance(offline, bool):
        problems.append(Problem("debuginfodOffline", "not-a-boolean"))
        offline = False
    mapping = values.get("sourcePathMap")
    pairs: list[tuple[str, str]] = []
    if mapping is not None:
        if isinstance(mapping, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            pairs = [(str(k), str(v)) for k, v in mapping.items() if k]
            pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        else:
            problems.append(Problem("sourcePathMap", "not-an-object"))
    settings = Settings(
        debug_file_directories=paths("debugFileDirectories"),
        objects=paths("objects"),
        symbol_paths=paths("symbolPaths"),
        gsym_paths=paths("gsymPaths"),
        cache_dir=_path(cache_dir, root) if isinstance(cache_dir, str) else None,
        debuginfod_urls=tuple(urls or ()),
        debuginfod_timeout=float(timeout) if isinstance(timeout, int | float) else None,
        debuginfod_cache_path=_path(downloads, root) if isinstance(downloads, str) else None,
        debuginfod_offline=offline,
        source_path_map=tuple(pairs),
    )
    return settings, problems
