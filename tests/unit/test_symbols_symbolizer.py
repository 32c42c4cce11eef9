"""The Symbolizer facade: resolutions, data lookups (against llvm-symbolizer-19 DATA),
source factories tried in order, caching, and failures that explain themselves."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.symbols.api import Failure, Reason
from stackmark.symbols.elf_source import ElfSymbolSource
from stackmark.symbols.source import ModuleFiles, SymbolSource
from stackmark.symbols.symbolizer import Symbolizer, SymbolizerOptions
from stackmark.symbols.symtab import SymbolTable
from tests.conftest import require_tool
from tests.support import sym_builds
from tests.support.build import build_id_of


def module_for(binary: Path) -> Module:
    return Module(0, binary.name, build_id_of(binary))


def symbolizer_with(*objects: Path) -> Symbolizer:
    return Symbolizer(
        SymbolizerOptions(debug_file_directories=[], objects=[str(o) for o in objects])
    )


def llvm_data(binary: Path, addresses: list[int]) -> dict[int, tuple[str, int, int] | None]:
    require_tool("llvm-symbolizer-19")
    text = "".join(f"DATA 0x{a:x}\n" for a in addresses)
    out = subprocess.run(
        ["llvm-symbolizer-19", f"--obj={binary}", "--output-style=JSON", "--no-demangle"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[int, tuple[str, int, int] | None] = {}
    for line, address in zip(out.splitlines(), addresses, strict=True):
        data = json.loads(line)["Data"]
        result[address] = (
            (data["Name"], int(data["Start"], 16), int(data["Size"], 16)) if data["Name"] else None
        )
    return result


def data_addresses(binary: Path) -> list[int]:
    elf = ElfFile.open(binary)
    found = {0, 1}
    for sym in elf.symbols():
        if sym.value:
            found.update((sym.value, sym.value + max(sym.size, 1) - 1, sym.value + sym.size))
    return sorted(found)


def test_data_symbols_match_llvm_for_objects_vtables_and_functions() -> None:
    for binary in (sym_builds.c_program(), sym_builds.cpp_program(), sym_builds.shared_library()):
        addresses = data_addresses(binary)
        expected = llvm_data(binary, addresses)
        symbolizer = symbolizer_with(binary)
        module = module_for(binary)
        tls = {t[0] for t in _tls_symbols(binary)}
        for address in addresses:
            symbol = symbolizer.data(module, address).symbol
            got = (symbol.name, symbol.start, symbol.size) if symbol else None
            if got is not None and got[0] in tls:
                continue  # stackmark names initialized TLS images; llvm cannot
            assert got == expected[address], f"{binary.name} 0x{address:x}"
    names = {s.name for s in SymbolTable(ElfFile.open(sym_builds.cpp_program())).entries}
    assert any(n.startswith("_ZTVN3geo6SquareE") for n in names)


def _tls_symbols(binary: Path) -> list[tuple[str, int, int]]:
    elf = ElfFile.open(binary)
    return [(s.name, s.value, s.size) for s in elf.symbols() if s.type == 6]


def test_initialized_tls_images_are_named() -> None:
    binary = sym_builds.c_program()
    elf = ElfFile.open(binary)
    tls_segment = next(s for s in elf.segments if s.type == 7)
    name, offset, size = next(t for t in _tls_symbols(binary) if t[0] == "t_seed")
    symbolizer = symbolizer_with(binary)
    address = tls_segment.vaddr + offset
    assert symbolizer.data(module_for(binary), address).symbol == DataSymbol(name, address, size)
    assert symbolizer.data(module_for(binary), address + size - 1).symbol is not None


def test_code_lookup_reports_where_symbols_came_from() -> None:
    binary = sym_builds.c_program()
    symbolizer = symbolizer_with(binary)
    module = module_for(binary)
    resolution = symbolizer.resolve(module)
    assert resolution.binary == str(binary) and resolution.has_debug_info
    assert resolution.build_id == build_id_of(binary)
    address = next(s.value for s in ElfFile.open(binary).symbols() if s.name == "run_pipeline")
    lookup = symbolizer.code(module, address)
    assert lookup.address == address and lookup.resolution is resolution
    assert lookup.frames[-1].function == "run_pipeline"
    assert lookup.frames[-1].file == str(sym_builds.SOURCES / "sym_inline.c")


def test_unknown_build_id_gives_no_frames_and_a_reason() -> None:
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[]))
    module = Module(3, "libgone.so", "ef" * 20)
    lookup = symbolizer.code(module, 0x1234)
    assert lookup.frames == []
    assert lookup.resolution.error == "could not find build ID"
    assert lookup.resolution.binary is None
    assert symbolizer.data(module, 0x1234).symbol is None


def test_a_corrupt_file_is_an_error_not_an_exception(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    broken = tmp_path / "broken"
    data = bytearray(binary.read_bytes())
    info = ElfFile.open(binary).section(".debug_info")
    assert info is not None
    data[info.offset : info.offset + info.size] = b"\xff" * info.size  # garbage DWARF
    broken.write_bytes(bytes(data))
    symbolizer = symbolizer_with(broken)
    module = module_for(binary)
    address = next(s.value for s in ElfFile.open(binary).symbols() if s.name == "main")
    lookup = symbolizer.code(module, address)
    assert lookup.frames == []
    assert lookup.failure is not None and lookup.failure.reason is Reason.LOOKUP_ERROR
    assert "debug_info" in lookup.failure.message
    assert lookup.resolution.failure is None  # the file itself was found and opened


def test_a_module_failure_is_a_reason_with_the_text_users_read() -> None:
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[]))
    gone = symbolizer.resolve(Module(3, "libgone.so", "ef" * 20))
    assert gone.reason is Reason.NOT_FOUND and gone.error == "could not find build ID"
    odd = symbolizer.resolve(Module(4, "libodd.so", "zz"))
    assert odd.reason is Reason.INVALID_BUILD_ID
    assert odd.error == "invalid build ID 'zz': not hexadecimal bytes"
    nameless = symbolizer.resolve(Module(5, "anon", ""))
    assert nameless.reason is Reason.NO_BUILD_ID and nameless.error == "module has no build ID"


class _Recording:
    """A test source answering one fixed frame, counting how often it is built."""

    built = 0

    def __init__(self, files: ModuleFiles):
        type(self).built += 1
        self.files = files

    description = "recording"
    has_debug_info = True

    def frames_at(self, address: int) -> list[SourceFrame]:
        return [SourceFrame(None, "recorded", "r.c", address, 0)]

    def data_at(self, address: int) -> DataSymbol | None:
        return None

    def address_of(self, name: str) -> int | None:
        return None

    def close(self) -> None:
        pass


def test_source_factories_are_tried_in_order_and_sources_are_kept() -> None:
    binary = sym_builds.c_program()
    declined: list[ModuleFiles] = []

    def decline(files: ModuleFiles) -> SymbolSource | None:
        declined.append(files)
        return None

    options = SymbolizerOptions(
        debug_file_directories=[], objects=[str(binary)], source_factories=[decline, _Recording]
    )
    symbolizer = Symbolizer(options)
    module = module_for(binary)
    _Recording.built = 0
    assert symbolizer.code(module, 7).frames == [SourceFrame(None, "recorded", "r.c", 7, 0)]
    assert symbolizer.code(module, 8).frames[0].line == 8
    assert symbolizer.code(module, 7).frames[0].line == 7
    assert _Recording.built == 1 and len(declined) == 1
    assert declined[0].binary == str(binary) and declined[0].build_id == build_id_of(binary)


def test_default_source_is_dwarf_and_symbol_table() -> None:
    binary, debug = sym_builds.stripped_with_debuglink()
    source = ElfSymbolSource(ModuleFiles("x", str(binary), str(debug)))
    assert source.has_debug_info and str(debug) in source.description
    nodebug = sym_builds.c_program("-O2", name="sym_inline_nodebug")
    plain = ElfSymbolSource(ModuleFiles("x", str(nodebug)))
    assert not plain.has_debug_info and "symbol table" in plain.description


def test_modules_without_build_id_are_read_from_their_path(tmp_path: Path) -> None:
    binary = sym_builds.c_program()
    copy = tmp_path / "prog"
    shutil.copyfile(binary, copy)
    symbolizer = Symbolizer(SymbolizerOptions(debug_file_directories=[]))
    module = Module(0, "prog", "", path=str(copy))
    address = next(s.value for s in ElfFile.open(binary).symbols() if s.name == "main")
    assert symbolizer.code(module, address).frames[-1].function == "main"


def test_threads_sharing_one_symbolizer_get_the_same_answers() -> None:
    """The language server asks from a thread pool: lazy parsing must never hand out
    half-built tables or trees."""
    import sys
    import threading

    binary = sym_builds.cpp_program()
    elf = ElfFile.open(binary)
    addresses = sorted(
        {s.value + i for s in elf.symbols() if s.type == 2 and s.size for i in (0, s.size // 2)}
    )
    module = module_for(binary)
    expected = {a: symbolizer_with(binary).code(module, a).frames for a in addresses}
    for _ in range(2):
        shared = symbolizer_with(binary)
        results: dict[int, list[SourceFrame]] = {}
        failures: list[BaseException] = []

        def work(
            chunk: list[int],
            shared: Symbolizer = shared,
            results: dict[int, list[SourceFrame]] = results,
            failures: list[BaseException] = failures,
        ) -> None:
            try:
                for address in chunk:
                    results[address] = shared.code(module, address).frames
            except BaseException as exc:  # reported below
                failures.append(exc)

        old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=work, args=(addresses[i::4],)) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            sys.setswitchinterval(old)
        assert not failures, failures
        assert results == expected


class _Malformed:
    """A test source whose symbols are unreadable at every address."""

    description = "malformed"
    has_debug_info = True

    def __init__(self, files: ModuleFiles):
        self.files = files

    def frames_at(self, address: int) -> list[SourceFrame]:
        raise FormatError("bad frames", offset=address, source="test")

    def data_at(self, address: int) -> DataSymbol | None:
        raise FormatError("bad data", offset=address, source="test")

    def address_of(self, name: str) -> int | None:
        raise FormatError("bad names", offset=0, source="test")

    def close(self) -> None:
        pass


def test_failed_lookups_are_kept_on_their_answers_not_on_the_module() -> None:
    # A language server lives for days: the module's record must not grow with
    # every address its symbols cannot answer for.
    binary = sym_builds.c_program()
    for cache_size in (0, 1 << 16):
        options = SymbolizerOptions(
            debug_file_directories=[],
            objects=[str(binary)],
            source_factories=[_Malformed],
            cache_size=cache_size,
        )
        symbolizer = Symbolizer(options)
        module = module_for(binary)
        resolution = symbolizer.resolve(module)
        before = (resolution.failure, list(resolution.searched))
        for address in range(0x1000, 0x1000 + 5000):
            code = symbolizer.code(module, address)
            assert code.frames == [] and code.failure is not None, hex(address)
            assert code.failure.reason is Reason.LOOKUP_ERROR
            assert code.failure.message == f"test: offset 0x{address:x}: bad frames"
            data = symbolizer.data(module, address)
            assert data.symbol is None and data.failure is not None
            assert "bad data" in data.failure.message
        assert symbolizer.address_of(module, "main") is None  # unreadable names: none
        assert (resolution.failure, resolution.searched) == before
        again = symbolizer.code(module, 0x1000)  # an answer remembered keeps its failure
        assert again.failure == Failure(Reason.LOOKUP_ERROR, "test: offset 0x1000: bad frames")


def test_closing_while_another_thread_finds_a_module(tmp_path: Path) -> None:
    """The language server's shutdown closes the symbolizer while a worker thread may be
    finding a module's files: the close must not see the module table change under it
    (it raised "dictionary changed size during iteration" to the client)."""
    import threading

    closing, release = threading.Event(), threading.Event()

    class _SlowToClose(_Malformed):
        def close(self) -> None:
            closing.set()
            release.wait(10)

    binary = sym_builds.c_program()
    copy = tmp_path / "prog"
    shutil.copyfile(binary, copy)
    options = SymbolizerOptions(
        debug_file_directories=[], objects=[str(binary)], source_factories=[_SlowToClose]
    )
    symbolizer = Symbolizer(options)
    symbolizer.code(module_for(binary), 7)  # opens the module's source
    failures: list[BaseException] = []

    def close() -> None:
        try:
            symbolizer.close()
        except BaseException as exc:  # reported below
            failures.append(exc)

    closer = threading.Thread(target=close)
    closer.start()
    assert closing.wait(10)
    finder = threading.Thread(
        target=symbolizer.resolve, args=(Module(0, "prog", "", path=str(copy)),)
    )
    finder.start()
    finder.join(0.5)  # without the lock it adds its module while the close iterates
    release.set()
    closer.join(10)
    finder.join(10)
    assert not failures, failures
    assert symbolizer.opened_source(module_for(binary)) is None
