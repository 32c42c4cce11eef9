"""Fuzz targets: one function per parser or front end, `run(data)`.

A target feeds `data` to stackmark the way a user's input reaches it and
lets only `StackmarkError` (what front ends show as a message) pass; any
other exception, a failed assertion, a hang or runaway memory is a crash
(atheris and libFuzzer report it and save the input). Targets also check
properties that must hold whatever the input (a filter keeps every line of
text, a file the debuginfod client hands back has the build ID asked for).

Targets import stackmark lazily, inside `prepare()`, so that the fuzz driver
can instrument those imports for coverage.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackmark.errors import StackmarkError


@dataclass
class Target:
    name: str
    run: Callable[[bytes], None]
    prepare: Callable[[], None]
    max_len: int
    description: str


_state: dict[str, Any] = {}
_WORK = Path(tempfile.mkdtemp(prefix="stackmark-fuzz-"))
MAX_LINES = 400


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "surrogateescape")
    return text.split("\n")[:MAX_LINES]


# -- markup: parser, decoder, context ------------------------------------------------------


def _prepare_markup() -> None:
    from stackmark.markup import context, elements, parser, syntax  # noqa: F401


def run_markup(data: bytes) -> None:
    from stackmark.markup.context import MarkupContext, lookup_address
    from stackmark.markup.elements import (
        BtElement,
        DataElement,
        MmapElement,
        ModuleElement,
        PcElement,
        ResetElement,
        decode,
    )
    from stackmark.markup.parser import MarkupParser
    from stackmark.markup.syntax import MULTILINE_TAGS, Element

    parser = MarkupParser(MULTILINE_TAGS)
    context = MarkupContext()
    pending = None
    for number, line in enumerate(_lines(data)):
        parsed = parser.parse(line, number, pending)
        pending = parsed.pending
        rebuilt = "".join(
            line[: s.end] if isinstance(s, Element) and s.multiline else s.text
            for s in parsed.spans
        )
        assert rebuilt == line, (rebuilt, line)
        for element in parsed.elements:
            typed = decode(element)
            if not typed.ok:
                continue
            if isinstance(typed, ResetElement):
                context.reset()
            elif isinstance(typed, ModuleElement):
                context.declare_module(typed)
            elif isinstance(typed, MmapElement):
                context.map_segment(typed)
            elif isinstance(typed, PcElement | BtElement | DataElement):
                placement = context.place(lookup_address(typed))
                if placement is not None:
                    assert placement.mapping.contains(placement.address)
        snapshot = context.copy()
        assert snapshot.mappings == context.mappings


# -- the `stackmark symbolize` filter over real symbols ------------------------------------

_SGR = re.compile(rb"\x1b\[[0-9;]*m")


def _prepare_symbolize() -> None:
    import argparse

    from stackmark.cli import symbolize
    from tests.support.markup_programs import program_log

    log = program_log("pie", _WORK)
    parser = argparse.ArgumentParser()
    symbolize.add_arguments(parser)
    args = parser.parse_args([log.debug_option, "--gsym-cache=off"])
    _state["symbolize"] = (symbolize, args, symbolize._make_symbolizer(args))
    _state["naming"] = symbolize._make_naming(args)


def kept_text(line: bytes) -> list[bytes]:
    """The pieces of an input line the filter must output, in order: the line
    minus anything from `{{{` to the next `}}}` and minus SGR codes."""
    pieces: list[bytes] = []
    rest = line
    while rest:
        start = rest.find(b"{{{")
        if start < 0:
            pieces.append(rest)
            break
        pieces.append(rest[:start])
        end = rest.find(b"}}}", start + 3)
        if end < 0:
            pieces.append(rest[start:])  # never closed here: plain text (or a held hexdict)
            break
        rest = rest[end + 3 :]
    out: list[bytes] = []
    for piece in pieces:
        out.extend(p for p in _SGR.split(piece) if p)
    return out


def _blank(piece: bytes) -> bool:
    return piece.decode("utf-8", "surrogateescape").isspace()


def check_lines_kept(raw: bytes, output: bytes) -> None:
    """Every input line without markup comes out whole, and the text around
    markup elements in the others, all in input order. Blanks between
    elements are not checked: a line of contextual elements and blanks
    folds into module lines (filter.py, rule 1), its blanks with it."""
    position = 0
    for line in raw.split(b"\n"):
        plain = b"{{{" not in line and not _SGR.search(line)
        pieces = [line.removesuffix(b"\r")] if plain else kept_text(line.removesuffix(b"\r"))
        for piece in pieces if plain else [p for p in pieces if not _blank(p)]:
            found = output.find(piece, position)
            assert found >= 0, f"lost or out of order: {piece[:80]!r}"
            position = found + len(piece)


def run_symbolize(data: bytes) -> None:
    symbolize, args, symbolizer = _state["symbolize"]
    raw = b"\n".join(data.split(b"\n")[:MAX_LINES])
    out = io.BytesIO()
    symbolize.run_streams(
        [("fuzz", io.BytesIO(raw))], out, lambda _t: None, args, symbolizer, _state["naming"]
    )
    check_lines_kept(raw, out.getvalue())


# -- binary formats --------------------------------------------------------------------------


def _prepare_gsym() -> None:
    from stackmark.formats.gsym import reader  # noqa: F401


def run_gsym(data: bytes) -> None:
    from stackmark.formats.gsym.dump import dump_text
    from stackmark.formats.gsym.reader import GsymReader

    try:
        reader = GsymReader.from_bytes(data, "fuzz.gsym")
    except StackmarkError:
        return
    with reader:
        addresses = set()
        for index in range(min(reader.num_addresses, 64)):
            start = reader.address(index)
            addresses.update((start, start + 1, start + 7, max(start - 1, 0)))
        for address in sorted(addresses)[:200]:
            with contextlib.suppress(StackmarkError):
                reader.lookup(address)
            with contextlib.suppress(StackmarkError):
                reader.lookup_all(address)  # merged functions and call sites too
        try:
            for count, _info in enumerate(reader.functions()):
                if count >= 64:
                    break
        except StackmarkError:
            pass
        with contextlib.suppress(StackmarkError):
            dump_text(reader)


def _prepare_sframe() -> None:
    from stackmark.formats.sframe import dump, lookup, reader  # noqa: F401


def run_sframe(data: bytes) -> None:
    from stackmark.formats.sframe.dump import objdump_text
    from stackmark.formats.sframe.lookup import SFrameTable
    from stackmark.formats.sframe.reader import parse_sframe

    try:
        table = SFrameTable.from_bytes(data, 0x1000, source="fuzz")
    except StackmarkError:
        return
    pcs = set()
    for fde in table.section.fdes[:64]:
        pcs.update((fde.start, fde.start + 1, fde.start + fde.size // 2, fde.end - 1, fde.end))
    for pc in sorted(pcs)[:256]:
        with contextlib.suppress(StackmarkError):
            table.find(pc)
    try:
        section = parse_sframe(data, 0x1000, source="fuzz")
    except StackmarkError:
        return
    for style in (None, "2.40"):
        # (2.40 cannot display every version: that is a StackmarkError)
        with contextlib.suppress(StackmarkError):
            objdump_text(section, "fuzz", style=style)


def _prepare_cbf() -> None:
    from stackmark.formats import cbf, swift_backtrace  # noqa: F401


def run_cbf(data: bytes) -> None:
    from stackmark.formats import cbf
    from stackmark.formats.swift_backtrace import SwiftBacktrace, decode_base64

    decoded = cbf.decode(data)
    assert decoded.size <= len(data)
    assert len(decoded.kinds) == len(decoded.values)
    if decoded.word_bits is not None and 0 < len(decoded.kinds) <= 5000:
        frames = decoded.frames
        again = cbf.decode(cbf.encode(frames, word_bits=decoded.word_bits))
        assert again.frames == frames
    text = data.decode("latin-1")
    decode_base64(text)
    with contextlib.suppress(StackmarkError):
        SwiftBacktrace.from_json(text, source="fuzz")


def _prepare_imagemap() -> None:
    from stackmark.formats import imagemap  # noqa: F401


def run_imagemap(data: bytes) -> None:
    from stackmark.formats.imagemap import decode_image_map, encode_image_map

    try:
        image_map = decode_image_map(data, source="fuzz")
    except StackmarkError:
        return
    image_map.to_modules()
    try:
        encoded = encode_image_map(image_map)
    except StackmarkError:
        return  # e.g. a decoded image the encoder cannot write back
    decode_image_map(encoded, source="re-encoded")


def _prepare_breakpad() -> None:
    from stackmark.conversion import from_breakpad  # noqa: F401
    from stackmark.formats import breakpad  # noqa: F401


def run_breakpad(data: bytes) -> None:
    from stackmark.conversion.from_breakpad import add_breakpad
    from stackmark.formats.breakpad import parse_breakpad
    from stackmark.formats.gsym import GsymCreator

    try:
        module = parse_breakpad(data, source="fuzz.sym")
        module.build_id()
        creator = GsymCreator()
        add_breakpad(creator, module, "fuzz.sym")
        creator.encode()
    except StackmarkError:
        pass


# -- ELF and DWARF on mutated binaries -------------------------------------------------------


def _prepare_elf() -> None:
    from stackmark.elf import ElfFile
    from stackmark.formats.gsym import convert  # noqa: F401
    from stackmark.symbols import elf_source, symtab  # noqa: F401
    from tests.fuzz.seeds import elf_programs

    addresses: set[int] = set()
    for path in elf_programs():
        with ElfFile.open(path) as elf:
            for symbol in elf.symbols():
                if symbol.value:
                    addresses.update((symbol.value, symbol.value + 3, symbol.value + symbol.size))
    _state["addresses"] = sorted(addresses)[:120]


def _write(data: bytes, name: str) -> str:
    path = _WORK / name
    path.write_bytes(data)
    return str(path)


def run_elf(data: bytes) -> None:
    from stackmark.elf import ElfFile
    from stackmark.formats.gsym.convert import convert_elf
    from stackmark.symbols.elf_source import ElfSymbolSource
    from stackmark.symbols.source import ModuleFiles

    try:
        with ElfFile.from_bytes(data, "fuzz.elf") as elf:
            for section in elf.sections:
                with contextlib.suppress(StackmarkError):
                    elf.section_data(section)
            for call in (
                lambda: elf.segments,
                lambda: list(elf.notes()),
                lambda: elf.build_id,
                lambda: elf.debuglink,
                lambda: elf.symbols(),
                lambda: elf.read_vaddr(0x1000, 16),
            ):
                with contextlib.suppress(StackmarkError):
                    call()
    except StackmarkError:
        pass
    path = _write(data, "fuzz.elf")
    try:
        source = ElfSymbolSource(ModuleFiles("", path))
    except StackmarkError:
        return
    try:
        for address in _state["addresses"]:
            try:
                source.frames_at(address)
                source.data_at(address)
            except StackmarkError:
                pass
    finally:
        source.close()
    with contextlib.suppress(StackmarkError):
        convert_elf(path)  # what the GSYM cache does with a downloaded file


def _prepare_macho() -> None:
    from stackmark import macho  # noqa: F401
    from stackmark.formats.gsym import convert  # noqa: F401


def run_macho(data: bytes) -> None:
    """The Mach-O reader on its own, then `gsym convert` on the file (every
    slice of a universal file), as a user runs it."""
    from stackmark.conversion.files import convert_file
    from stackmark.macho import MachOFile, parse_universal

    with contextlib.suppress(StackmarkError):
        slices = parse_universal(data, "fuzz.macho") or [None]
        for fat_arch in slices:
            with contextlib.suppress(StackmarkError):
                macho = MachOFile(data, "fuzz.macho", fat_arch)
                for section in macho.sections:
                    with contextlib.suppress(StackmarkError):
                        macho.section_data(section)
                for symbol in macho.symbols():
                    with contextlib.suppress(StackmarkError):
                        macho.symbol_section(symbol)
    path = _write(data, "fuzz.macho")
    with contextlib.suppress(StackmarkError):
        convert_file(path, str(_WORK / "fuzz.macho.gsym"), jobs=1)


def run_cfi(data: bytes) -> None:
    from stackmark.formats.sframe.from_cfi import generate_from_elf_bytes
    from stackmark.formats.sframe.reader import parse_sframe
    from stackmark.formats.sframe.spec import AbiArch
    from stackmark.formats.sframe.writer import encode_sframe

    for version in (3, 1):
        try:
            result = generate_from_elf_bytes(data, AbiArch.AMD64_LITTLE, version=version)
        except StackmarkError:
            return
        try:
            encoded = encode_sframe(result.section)
        except StackmarkError:
            continue
        parse_sframe(encoded)


def _prepare_cfi() -> None:
    from stackmark.formats.sframe import from_cfi, writer  # noqa: F401


# -- debuginfod: what a server sends ---------------------------------------------------------


class _FuzzSocket:
    """A socket whose peer sends `response` (and ignores what it is sent)."""

    def __init__(self, response: bytes):
        self._response = response

    def sendall(self, _data: bytes) -> None:
        pass

    def makefile(self, mode: str, *args: object, **kwargs: object) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self._response))  # type: ignore[arg-type]

    def close(self) -> None:
        pass


def _prepare_debuginfod() -> None:
    import http.client
    import urllib.request

    from stackmark.symbols import debuginfod
    from stackmark.symbols.debuginfod import DebuginfodClient, DebuginfodSettings
    from tests.fuzz.seeds import elf_programs

    class FuzzConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = _FuzzSocket(_state["response"])

    class FuzzHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(FuzzConnection, req)  # type: ignore[arg-type]

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), FuzzHandler())
    debuginfod._opener_for = lambda _url: opener  # every request reaches the fuzz "server"
    from stackmark.elf import ElfFile

    with ElfFile.open(elf_programs()[0]) as elf:
        build_id = elf.build_id
    assert build_id is not None
    cache = _WORK / "debuginfod-cache"

    def client() -> DebuginfodClient:
        shutil.rmtree(cache, ignore_errors=True)
        settings = DebuginfodSettings(
            urls=("http://fuzz.invalid",), timeout=5, cache_path=cache, negative_ttl=0
        )
        return DebuginfodClient(settings, report=lambda _m: None)

    _state["debuginfod"] = (client, build_id, cache)


def run_debuginfod(data: bytes) -> None:
    from stackmark.elf import ElfFile

    make_client, build_id, cache = _state["debuginfod"]
    _state["response"] = data[1:]
    client = make_client()
    if data[:1] == b"\x01":
        result = client.find_source(build_id, "/src/main.c")
    else:
        result = client.find_debuginfo(build_id)
    if result.path is not None:
        assert result.path.is_file()
        if data[:1] != b"\x01":
            with ElfFile.open(result.path) as elf:
                assert elf.build_id == build_id, "a file with another build ID was accepted"
    else:
        assert result.error, "no file and no reason"
    leftovers = [
        p for p in cache.rglob("*") if p.is_file() and p != result.path and "lock" not in p.name
    ]
    assert not [p for p in leftovers if p.suffix in ("", ".debug")], leftovers


TARGETS: dict[str, Target] = {
    target.name: target
    for target in (
        Target("markup", run_markup, _prepare_markup, 4096, "markup parser, decoder, context"),
        Target("symbolize", run_symbolize, _prepare_symbolize, 4096, "symbolize filter"),
        Target("gsym", run_gsym, _prepare_gsym, 65536, "GSYM reader, lookups, dump"),
        Target("sframe", run_sframe, _prepare_sframe, 8192, "SFrame reader, lookup, dump"),
        Target("cbf", run_cbf, _prepare_cbf, 2048, "CBF decoder, Swift JSON"),
        Target("imagemap", run_imagemap, _prepare_imagemap, 2048, "image-map decoder"),
        Target("breakpad", run_breakpad, _prepare_breakpad, 8192, "Breakpad reader"),
        Target("elf", run_elf, _prepare_elf, 1 << 17, "ELF, DWARF, symbol table"),
        Target("macho", run_macho, _prepare_macho, 1 << 16, "Mach-O, universal, gsym convert"),
        Target("cfi", run_cfi, _prepare_cfi, 1 << 17, "SFrame from CFI (dwarf/cfi.py)"),
        Target("debuginfod", run_debuginfod, _prepare_debuginfod, 1 << 17, "debuginfod"),
    )
}


def cleanup() -> None:
    shutil.rmtree(_WORK, ignore_errors=True)
