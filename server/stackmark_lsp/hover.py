"""Hover text for markup elements, laid out the way clangd lays out its hovers.

A level-3 title (kind and name), a ruler, then the details: where the
code is (the whole inline chain, innermost first), then where the
address lies (module, module-relative address, build ID, which file
answered), and last, when the source file is on this machine, the source
line in a fenced block. Every string the reader sees goes through
`Messages`, so the hover follows the client's language.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from stackmark.markup.context import Placement
from stackmark.markup.elements import (
    BtElement,
    DataElement,
    DumpfileElement,
    HexdictElement,
    MmapElement,
    ModuleElement,
    OtherElement,
    PcElement,
    ResetElement,
    SymbolElement,
)
from stackmark.markup.naming import Naming
from stackmark.model import Module, SourceFrame
from stackmark.symbols.api import ModuleResolution
from stackmark_lsp.logs import OpenLog, Target
from stackmark_lsp.lookups import Lookups
from stackmark_lsp.messages import Messages
from stackmark_lsp.settings import Settings

_FENCE_LANGUAGES = {
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".rs": "rust", ".go": "go", ".swift": "swift", ".m": "objective-c",
    ".mm": "objective-cpp", ".s": "asm", ".S": "asm", ".d": "d", ".zig": "zig",
}  # fmt: skip


def code(text: str) -> str:
    """`text` as inline code (backticks inside are doubled around)."""
    if "`" in text:
        return f"`` {text} ``"
    return f"`{text}`"


@dataclass(slots=True)
class Hover:
    """Markdown paragraphs: the title, then sections separated by rulers."""

    title: str
    sections: list[list[str]]

    def markdown(self) -> str:
        parts = [f"### {self.title}"]
        for section in self.sections:
            if section:
                parts.append("---")
                parts.append("\n\n".join(section))
        return "\n\n".join(parts)

    def plaintext(self) -> str:
        """The same text for clients without markdown."""
        text = self.markdown().replace("### ", "").replace("---", "")
        for mark in ("```", "``", "`"):
            text = text.replace(mark, "")
        return "\n".join(line for line in text.splitlines() if line.strip() or line == "")


class HoverBuilder:
    """Builds the hover for one element (see the module docstring)."""

    def __init__(
        self,
        log: OpenLog,
        service: Lookups,
        naming: Naming,
        messages: Messages,
        settings: Settings,
    ) -> None:
        self.log = log
        self.service = service
        self.naming = naming
        self.t = messages
        self.settings = settings

    async def build(self, target: Target) -> Hover:
        typed = target.typed
        match typed:
            case BtElement() | PcElement() if typed.ok:
                return await self._code(target, typed)
            case DataElement() if typed.ok:
                return await self._data(target, typed)
            case SymbolElement() if typed.ok:
                demangled = self.naming.symbol_element(typed.name)
                section = (
                    [f"{self.t('hover.mangled')}: {code(typed.name)}"]
                    if demangled != typed.name
                    else []
                )
                return Hover(f"{self.t('title.symbol')} {code(demangled)}", [section])
            case ModuleElement() if typed.ok:
                return await self._module(target, typed)
            case MmapElement() if typed.ok:
                return self._mmap(target, typed)
            case HexdictElement():
                return await self._hexdict(target, typed)
            case DumpfileElement():
                return self._dumpfile(typed)
            case ResetElement():
                return Hover(self.t("title.reset"), [[self.t("hover.reset")]])
            case (
                BtElement()
                | PcElement()
                | DataElement()
                | SymbolElement()
                | ModuleElement()
                | MmapElement()
                | OtherElement()
            ):
                # Not decoded (its diagnostics say why), or a tag the spec does not define.
                problems = [self.t.diagnostic(d) for d in typed.diagnostics]
                title = f"{self.t('title.other')} {code(typed.element.tag or '?')}"
                return Hover(title, [problems or [self.t("hover.other")]])
            case _:
                assert_never(typed)

    # -- pc / bt ---------------------------------------------------------------------

    async def _code(self, target: Target, typed: BtElement | PcElement) -> Hover:
        placement = target.placement()
        match typed:
            case BtElement():
                title = self.t("title.bt", frame=typed.frame)
            case PcElement():
                title = self.t("title.pc")
            case _:
                assert_never(typed)
        if placement is None:
            return Hover(title, [[self.t("hover.no_mmap")]])
        lookup = await self.service.code_of(placement.module, placement.module_relative)
        frames = lookup.frames
        name = self.naming.function(frames[-1]) if frames else None
        if name:
            title += f" {code(name)}"
        where: list[str] = []
        if frames:
            inner = frames[0]
            location = self._location(inner)
            if location:
                where.append(code(location))
            if len(frames) > 1:
                chain = [self.t("hover.inline_chain") + ":"]
                for number, frame in enumerate(frames, 1):
                    function = self.naming.function(frame) or "??"
                    place = self._location(frame)
                    chain.append(
                        f"{number}. {code(function)}" + (f" — {code(place)}" if place else "")
                    )
                where.append("\n".join(chain))
        elif lookup.resolution.binary is not None:
            where.append(self.t("hover.no_frames"))
        sections = [
            where,
            self._placement_lines(placement, typed.address),
            self._symbols(lookup.resolution),
        ]
        snippet = self._snippet(frames[0]) if frames else None
        if snippet:
            sections.append([snippet])
        return Hover(title, sections)

    def _location(self, frame: SourceFrame) -> str | None:
        file = self.naming.file(frame)
        if file is None:
            return None
        if frame.line:
            return f"{file}:{frame.line}" + (f":{frame.column}" if frame.column else "")
        return file

    def _placement_lines(self, placement: Placement, original: int) -> list[str]:
        module = placement.module
        lines = [
            f"{self.t('hover.module')}: {code(module.name)} (#{module.id})",
            f"{self.t('hover.relative')}: {code(hex(placement.module_relative))}",
        ]
        if placement.address != original:
            lines.append(self.t("hover.lookup", address=code(hex(placement.address))))
        lines.append(f"{self.t('hover.build_id')}: {code(module.build_id or '-')}")
        return lines

    def _symbols(self, resolution: ModuleResolution) -> list[str]:
        if resolution.binary is not None:
            description = resolution.binary
            return [f"{self.t('hover.symbols_from')}: {code(description)}"]
        lines = [self.t("hover.no_symbols", reason=resolution.error or "?")]
        if resolution.searched:
            places = "\n".join(f"- {code(place)}" for place in resolution.searched[:12])
            lines.append(f"{self.t('hover.looked_in')}:\n{places}")
        return lines

    def _snippet(self, frame: SourceFrame) -> str | None:
        """The source line as a fenced block, when the file is on this machine."""
        if frame.file is None or frame.line <= 0:
            return None
        path = self.settings.map_source(frame.file)
        try:
            with open(path, encoding="utf-8", errors="replace") as source:
                for number, text in enumerate(source, 1):
                    if number == frame.line:
                        language = _FENCE_LANGUAGES.get(os.path.splitext(path)[1], "")
                        fence = "````" if "```" in text else "```"
                        return f"{fence}{language}\n{text.rstrip()}\n{fence}"
        except OSError:
            return None
        return None

    # -- data ---------------------------------------------------------------------------

    async def _data(self, target: Target, typed: DataElement) -> Hover:
        placement = target.placement()
        title = self.t("title.data")
        if placement is None:
            return Hover(title, [[self.t("hover.no_mmap")]])
        lookup = await self.service.data_of(placement.module, placement.module_relative)
        symbol = lookup.symbol
        details: list[str] = []
        if symbol is not None:
            offset = placement.module_relative - symbol.start
            title += f" {code(self.naming.data(symbol))}" + (
                f" + {code(hex(offset))}" if offset else ""
            )
            if symbol.name != self.naming.data(symbol):
                details.append(f"{self.t('hover.mangled')}: {code(symbol.name)}")
            size = f"{self.t('hover.size')} {symbol.size}"
            details.append(f"{self.t('hover.offset')}: {code(hex(offset))} / {size}")
        elif lookup.resolution.binary is not None:
            details.append(self.t("hover.no_data_symbol"))
        return Hover(
            title,
            [
                details,
                self._placement_lines(placement, typed.address),
                self._symbols(lookup.resolution),
            ],
        )

    # -- context elements ------------------------------------------------------------

    async def _module(self, target: Target, typed: ModuleElement) -> Hover:
        module = target.epoch.module(typed.module_id)
        if module is None or module.build_id != typed.build_id or module.name != typed.name:
            module = Module(typed.module_id, typed.name, typed.build_id)
        title = f"{self.t('title.module', id=typed.module_id)} {code(typed.name)}"
        resolution = await self.service.resolution_of(module)
        facts = [f"{self.t('hover.build_id')}: {code(typed.build_id)}"]
        if resolution.binary is not None:
            facts.append(f"{self.t('hover.binary')}: {code(resolution.binary)}")
        else:
            facts.extend(self._symbols(resolution))
        mappings = [m for m in target.epoch.context.mappings if m.module.id == typed.module_id]
        lines = [
            f"- {code(f'[{hex(m.start)}-{hex(m.last)}]')} {code(m.segment.mode)} "
            f"→ {code(hex(m.segment.module_relative))}"
            for m in mappings
        ]
        sections = [facts]
        if lines:
            sections.append([f"{self.t('hover.mmaps')}:\n" + "\n".join(lines)])
        return Hover(title, sections)

    def _mmap(self, target: Target, typed: MmapElement) -> Hover:
        last = (typed.start + typed.size - 1) & 0xFFFFFFFFFFFFFFFF
        title = (
            f"{self.t('title.mmap')} {code(f'[{hex(typed.start)}-{hex(last)}]')} {code(typed.mode)}"
        )
        module = target.epoch.module(typed.module_id, target.where)
        facts = []
        if module is not None:
            facts.append(f"{self.t('hover.module')}: {code(module.name)} (#{module.id})")
            facts.append(f"{self.t('hover.build_id')}: {code(module.build_id)}")
        else:
            facts.append(self.t("hover.unknown_module", id=typed.module_id))
        facts.append(f"{self.t('hover.size')}: {code(hex(typed.size))}")
        facts.append(f"{self.t('hover.relative')}: {code(hex(typed.module_relative))}")
        return Hover(title, [facts])

    async def _hexdict(self, target: Target, typed: HexdictElement) -> Hover:
        lines: list[str] = []
        for pair in typed.pairs:
            if not pair.value:
                continue
            placement = target.placement(pair.value)
            if placement is None:
                continue
            lines.append(
                f"- {code(pair.key)} {code(hex(pair.value))} → " + await self._describe(placement)
            )
        return Hover(self.t("title.hexdict"), [lines or [self.t("hover.no_values")]])

    async def _describe(self, placement: Placement) -> str:
        """What an address points at: a function (code segments) or a variable."""
        module = placement.module
        where = f"{code(module.name)} + {code(hex(placement.module_relative))}"
        if "x" in placement.segment.mode:
            lookup = await self.service.code_of(module, placement.module_relative)
            if lookup.frames:
                inner = lookup.frames[0]
                name = self.naming.function(inner) or "??"
                location = self._location(inner)
                return f"{code(name)}" + (f" {code(location)}" if location else "") + f" ({where})"
            return where
        data = await self.service.data_of(module, placement.module_relative)
        if data.symbol is not None:
            offset = placement.module_relative - data.symbol.start
            name = self.naming.data(data.symbol) + (f"+{hex(offset)}" if offset else "")
            return f"{code(name)} ({where})"
        return where

    def _dumpfile(self, typed: DumpfileElement) -> Hover:
        title = (
            f"{self.t('title.dumpfile')} {code(typed.name)}"
            if typed.name
            else self.t("title.dumpfile")
        )
        facts = [f"{self.t('hover.dump_type')}: {code(typed.dump_type)}"]
        path = dump_path(self.log, typed.name)
        if path is not None:
            facts.append(f"{self.t('hover.dump_file')}: {code(path)}")
        elif typed.name:
            facts.append(self.t("hover.dump_missing"))
        return Hover(title, [facts])


def dump_path(log: OpenLog, name: str) -> str | None:
    """The file a dumpfile element names: absolute, or next to the log."""
    if not name:
        return None
    candidates: Sequence[str]
    if os.path.isabs(name):
        candidates = [name]
    elif log.path is not None:
        candidates = [os.path.join(os.path.dirname(log.path), name)]
    else:
        candidates = []
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    return None
