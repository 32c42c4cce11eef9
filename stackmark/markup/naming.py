"""How function names, file paths and data names are shown (llvm's options).

`--functions=linkage` (the default) shows the demangled linkage name;
`short` the bare DWARF name; `none` hides names (llvm then prints
`<invalid>`). `--no-demangle` keeps linkage names mangled, except in
`{{{symbol}}}`, which llvm always demangles. `--basenames` keeps the last
path component. With `--relativenames` the symbol source itself names files
relative to the compilation directory (see symbols/elf_source.py), so the
path is printed as it comes.

A `pc` element shows the name of the outermost (physical) function with the
line of the innermost inlined location; `--functions=short` shows the
innermost name instead (llvm takes the physical name from the symbol
table only for linkage names).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from stackmark.markup.layout import FrameText
from stackmark.model import DataSymbol, SourceFrame
from stackmark.plain import FrozenRecord

INVALID = "<invalid>"

Demangler = Callable[[str], str]


class NameOptions(FrozenRecord):
    __slots__ = _fields = ("functions", "demangle", "paths")
    functions: str  # linkage | short | none
    demangle: bool
    paths: str  # absolute | basename | relative

    def __init__(
        self, functions: str = "linkage", demangle: bool = True, paths: str = "absolute"
    ) -> None:
        object.__setattr__(self, "functions", functions)
        object.__setattr__(self, "demangle", demangle)
        object.__setattr__(self, "paths", paths)


class Naming:
    """Turns symbolizer answers into the strings the renderers print.

    `demangle_name` demangles function and data names (llvm's symbolizer
    rules); `demangle_symbol` is used for `{{{symbol}}}` (llvm::demangle,
    which also accepts an extra leading underscore).
    """

    def __init__(
        self,
        options: NameOptions,
        demangle_name: Demangler,
        demangle_symbol: Demangler,
    ) -> None:
        self.options = options
        self._demangle_name = demangle_name
        self.symbol_element = demangle_symbol
        self._texts: dict[tuple[str, int], list[FrameText]] = {}

    def _linkage(self, name: str) -> str:
        return self._demangle_name(name) if self.options.demangle else name

    def _from_symbol_table_only(self, frame: SourceFrame) -> bool:
        """A frame known only from the symbol table, which llvm ignores unless it
        prints linkage names."""
        return self.options.functions != "linkage" and frame.name is None and frame.line == 0

    def function(self, frame: SourceFrame) -> str | None:
        """The name of one frame of an inline chain (None: not known or hidden)."""
        kind = self.options.functions
        if kind == "none":
            return None
        if kind == "short":
            return frame.name
        raw = frame.linkage_name or frame.name
        return self._linkage(raw) if raw else None

    def frame_texts(self, key: tuple[str, int], frames: Sequence[SourceFrame]) -> list[FrameText]:
        """What each frame of a `bt` chain prints (one empty frame when nothing is known).

        `key` (build ID, module-relative address) names the chain: logs
        repeat frames, and names cost a demangling each."""
        texts = self._texts.get(key)
        if texts is None:
            texts = self.frame_texts_for(frames)
            if len(self._texts) >= 1 << 16:
                self._texts.clear()
            self._texts[key] = texts
        return texts

    def frame_texts_for(self, frames: Sequence[SourceFrame]) -> list[FrameText]:
        """`frame_texts` without its cache (for callers that keep their own)."""
        return [FrameText(self.function(f), self.file(f), f.line, f.column) for f in frames] or [
            FrameText(None, None)
        ]

    def pc_function(self, frames: Sequence[SourceFrame]) -> str | None:
        """The name a `pc` element shows: physical function, or innermost for short names."""
        if not frames:
            return None
        if self.options.functions == "short":
            return frames[0].name
        return self.function(frames[-1])

    def file(self, frame: SourceFrame) -> str | None:
        path = frame.file
        if path is None or self._from_symbol_table_only(frame):
            return None
        style = self.options.paths
        if style == "basename":
            return posixpath.basename(path)
        return path

    def data(self, symbol: DataSymbol | None) -> str:
        if symbol is None:
            return INVALID
        return self._linkage(symbol.name)
