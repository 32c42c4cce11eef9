"""The layers, checked from the imports: the core loads no front end's extras, and no
module imports against the map (below)."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import stackmark

FRONT_ENDS = ("stackmark.cli", "stackmark.service", "stackmark.debugger")
EXTRAS = ("starlette", "uvicorn", "prometheus_client", "dask", "distributed", "anyio")


def core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(stackmark.__path__, "stackmark."):
        if not info.name.startswith(FRONT_ENDS) and info.name != "stackmark.__main__":
            names.append(info.name)
    return names


def test_no_core_package_is_a_command() -> None:
    """`python -m stackmark` is the CLI's entry; a `__main__` in a core package would be
    a front end living in the core, beside the command users run."""
    assert [name for name in core_modules() if name.endswith("__main__")] == []


def test_importing_every_core_module_loads_no_extra() -> None:
    modules = core_modules()
    assert "stackmark.symbols.setup" in modules and "stackmark.markup.stream" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {EXTRAS!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# -- every module's imports, read from the source --------------------------------------
#
# The layers: the core (`stackmark/`) is below every front end; front ends import the
# core and not each other; the formats are leaves; and the product has no import
# cycle. Imports are read with `ast`, anywhere in
# a module (inside functions and `if TYPE_CHECKING:` too: they hide an arrow, they
# don't remove it). `from package import name` counts as an arrow to `package.name`
# when that is a module, otherwise to `package`.

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "stackmark": ROOT / "stackmark",
    "stackmark_lsp": ROOT / "server" / "stackmark_lsp",
    "stackmark_gdb": ROOT / "gdb_plugin" / "stackmark_gdb",
    "stackmark_lldb": ROOT / "lldb_plugin" / "stackmark_lldb",
}
# Each front end, by the modules that make it up. The debugger front end is the
# debugger-agnostic layer and the two hosts that register it (pwndbg's shape).
FRONT_END_PARTS = {
    "cli": ("stackmark.cli", "stackmark.__main__"),
    "service": ("stackmark.service",),
    "lsp": ("stackmark_lsp",),
    "debugger": ("stackmark.debugger", "stackmark_gdb", "stackmark_lldb"),
}
HOST_LIBRARIES = ("gdb", "lldb", "pygls", "lsprotocol")
# What reads an ELF or Mach-O file's headers and symbol table: below the symbolizer.
OBJECT_FILE_READERS = (
    "stackmark.elf",
    "stackmark.elf_relocations",
    "stackmark.macho",
    "stackmark.symbols.symtab",
)
FORMAT_LEAF_IMPORTS = (
    "stackmark.elf",  # the object-file readers a format's section comes from
    "stackmark.elf_relocations",
    "stackmark.macho",
    "stackmark._native",  # a kernel's compiled twin, through the one selector (load)
    "stackmark.errors",
    "stackmark.binary",  # the one bounds-checked cursor and LEB128 family
    "stackmark.model",
    "stackmark.plain",
    "stackmark.dwarf",
    "stackmark.unwind_rules",  # shared vocabulary beside model.py (Arch, unwind rows)
    "stackmark.whole_files",  # writing an output file whole or not at all
)
# The core's own layers, lowest first: a core module imports its own layer and those
# below it, never one above (the diagram in docs/architecture.md, read bottom up).
CORE_LAYERS: tuple[tuple[str, ...], ...] = (
    (  # shared vocabulary and plumbing, below everything
        "stackmark",  # the package's __init__ alone
        "stackmark.plain",
        "stackmark.errors",
        "stackmark.binary",
        "stackmark.model",
        "stackmark.unwind_rules",
        "stackmark.whole_files",
        "stackmark.process_end",
        "stackmark._native",
        "stackmark.demangle",
    ),
    ("stackmark.elf", "stackmark.elf_relocations", "stackmark.macho"),  # object files
    ("stackmark.dwarf",),
    ("stackmark.formats",),
    ("stackmark.conversion", "stackmark.unwind"),  # over formats
    ("stackmark.symbols",),
    ("stackmark.markup", "stackmark.batch", "stackmark.cbf_input"),  # over symbols
    ("stackmark.symbolize_options",),  # `symbolize`'s options: markup's filter + symbols
)
# The `stackmark` console script starts every front end: these arrows are its
# subcommands reaching each front end's entry point, not shared code.
LAUNCHERS = {
    ("stackmark.cli.lsp", "stackmark_lsp.command"),
    ("stackmark.cli.serve", "stackmark.service.settings"),
    ("stackmark.cli.debuggers", "stackmark.debugger.bootstrap"),
}


def product_modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package), for every module of the four packages."""
    found: dict[str, tuple[Path, bool]] = {}
    for package, directory in PACKAGES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = [package, *path.relative_to(directory).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_arrows(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Module -> the modules (or outside top-level names) it imports."""
    arrows: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.add(submodule if submodule in modules else source)
        targets.discard(name)
        arrows[name] = targets
    return arrows


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def core_layer_of(name: str) -> int | None:
    """The index in CORE_LAYERS of a core module's layer (None: not a core module)."""
    best: tuple[int, int] | None = None  # (length of the matching entry, layer)
    for layer, entries in enumerate(CORE_LAYERS):
        for entry in entries:
            matches = name == entry if entry == "stackmark" else _within(name, (entry,))
            if matches and (best is None or len(entry) > best[0]):
                best = (len(entry), layer)
    return best[1] if best is not None else None


def front_end_of(name: str) -> str | None:
    for front_end, parts in FRONT_END_PARTS.items():
        if _within(name, parts):
            return front_end
    return None


def forbidden_arrows(arrows: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    """Every arrow against the map, with the rule it breaks."""
    found: dict[tuple[str, str], str] = {}
    for source, targets in arrows.items():
        side = front_end_of(source)
        for target in targets:
            other = front_end_of(target)
            if side is None and other is not None:
                found[source, target] = "the core imports a front end"
            elif side is None and _within(target, HOST_LIBRARIES):
                found[source, target] = "the core imports a debugger or pygls"
            elif side is not None and other is not None and other != side:
                if (source, target) not in LAUNCHERS:
                    found[source, target] = "a front end imports another front end"
            elif (_within(source, ("stackmark_gdb",)) and _within(target, ("stackmark_lldb",))) or (
                _within(source, ("stackmark_lldb",)) and _within(target, ("stackmark_gdb",))
            ):
                found[source, target] = "one debugger host imports the other"
            if _within(source, ("stackmark_lsp",)) and _within(target, ("stackmark.dwarf",)):
                found[source, target] = (
                    "the language server reads DWARF itself (the symbolizer answers it)"
                )
            below, above = core_layer_of(source), core_layer_of(target)
            if side is None and below is not None and above is not None and above > below:
                found[source, target] = "a core module imports a layer above its own"
            below_the_api = ("stackmark.symbols", "stackmark.formats", "stackmark.dwarf")
            if (
                _within(source, ("stackmark.markup",))
                and _within(target, below_the_api)
                and not _within(target, ("stackmark.symbols.api",))
            ):
                found[source, target] = "markup asks the symbolizer's API, nothing below it"
            if _within(source, ("stackmark_lsp",)) and _within(target, OBJECT_FILE_READERS):
                found[source, target] = (
                    "the language server reads object files itself (the symbolizer answers it)"
                )
            if _within(source, ("stackmark.formats",)) and _within(target, ("stackmark",)):
                own = ".".join(source.split(".")[:3])  # its package (or itself: formats/cbf.py)
                if target != "stackmark.formats" and not _within(
                    target, (own, *FORMAT_LEAF_IMPORTS)
                ):
                    found[source, target] = "a format imports more than a leaf may"
    return found


def import_cycles(arrows: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    graph = {name: sorted(t for t in targets if t in arrows) for name, targets in arrows.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    for root in graph:
        if root in order:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                order[node] = low[node] = len(order)
                stack.append(node)
                on_stack.add(node)
            if child < len(graph[node]):
                work.append((node, child + 1))
                nxt = graph[node][child]
                if nxt not in order:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == order[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(frozenset(component))
    return cycles


ARROWS = import_arrows(product_modules())


def test_the_import_reader_sees_imports_inside_functions_and_type_checking() -> None:
    # stackmark_lsp/command.py imports the server inside a function; epochs.py once hid
    # its arrow to index.py under TYPE_CHECKING: both kinds must count.
    assert "stackmark_lsp.server" in ARROWS["stackmark_lsp.command"]
    assert "stackmark_lsp.epochs" in ARROWS["stackmark_lsp.document"]  # TYPE_CHECKING
    assert "stackmark.unwind_rules" in ARROWS["stackmark.formats.sframe.spec"]
    assert len(ARROWS) > 150  # all four packages were read


def test_the_language_server_asks_the_symbolizer_rather_than_reading_dwarf() -> None:
    arrows = {"stackmark_lsp.navigation": {"stackmark.dwarf.declarations", "stackmark.symbols"}}
    assert list(forbidden_arrows(arrows)) == [
        ("stackmark_lsp.navigation", "stackmark.dwarf.declarations")
    ]


def test_the_language_server_asks_the_symbolizer_rather_than_reading_symbol_tables() -> None:
    arrows = {
        "stackmark_lsp.navigation_service": {
            "stackmark.elf",
            "stackmark.symbols.symtab",
            "stackmark.symbols.symbolizer",
        }
    }
    assert sorted(forbidden_arrows(arrows)) == [
        ("stackmark_lsp.navigation_service", "stackmark.elf"),
        ("stackmark_lsp.navigation_service", "stackmark.symbols.symtab"),
    ]


def test_no_format_imports_another_format_or_a_converter_above_it() -> None:
    # A conversion between two formats (Breakpad .sym -> GSYM) lives above both, in
    # `stackmark/conversion/`: a format importing another, or a converter, is an arrow
    # against the map, whichever two formats they are.
    arrows = {
        "stackmark.formats.gsym.convert": {"stackmark.formats.breakpad"},
        "stackmark.formats.sframe.reader": {"stackmark.formats.gsym.header"},
        "stackmark.formats.cbf": {"stackmark.formats.imagemap"},
        "stackmark.formats.breakpad": {"stackmark.conversion.from_breakpad"},
    }
    assert sorted(forbidden_arrows(arrows)) == [
        ("stackmark.formats.breakpad", "stackmark.conversion.from_breakpad"),
        ("stackmark.formats.cbf", "stackmark.formats.imagemap"),
        ("stackmark.formats.gsym.convert", "stackmark.formats.breakpad"),
        ("stackmark.formats.sframe.reader", "stackmark.formats.gsym.header"),
    ]
    # Within its own package a format imports freely, and the conversion imports both.
    within = {
        "stackmark.formats.gsym.convert": {"stackmark.formats.gsym.creator"},
        "stackmark.conversion.from_breakpad": {
            "stackmark.formats.breakpad",
            "stackmark.formats.gsym.creator",
        },
    }
    assert forbidden_arrows(within) == {}


def test_every_core_module_has_a_layer() -> None:
    # A new top-level module or package of the core must be given its place.
    core = [name for name in ARROWS if name.startswith("stackmark") and front_end_of(name) is None]
    assert [name for name in core if name.startswith("stackmark.") or name == "stackmark"]
    assert [name for name in core if core_layer_of(name) is None] == []


def test_a_core_module_importing_a_layer_above_its_own_is_refused() -> None:
    arrows = {
        "stackmark.symbols.api": {"stackmark.markup.naming"},  # symbols -> markup: up
        "stackmark.formats.gsym.reader": {"stackmark.symbols.cache"},  # formats -> symbols: up
        "stackmark.elf": {"stackmark.dwarf.sections"},  # object files -> DWARF: up
        "stackmark.markup.filter": {"stackmark.symbols.api"},  # down: allowed
        "stackmark.unwind.tables": {"stackmark.formats.sframe.lookup"},  # down: allowed
        "stackmark.plain": {"stackmark.errors"},  # the same layer: allowed
        "stackmark.markup.stream": {"stackmark.symbols.setup"},  # markup: the API only
    }
    assert sorted(forbidden_arrows(arrows)) == [
        ("stackmark.elf", "stackmark.dwarf.sections"),
        ("stackmark.formats.gsym.reader", "stackmark.symbols.cache"),
        ("stackmark.markup.stream", "stackmark.symbols.setup"),
        ("stackmark.symbols.api", "stackmark.markup.naming"),
    ]


def test_no_module_imports_against_the_map() -> None:
    # No allow-list: every arrow docs/architecture.md draws holds without exception.
    assert forbidden_arrows(ARROWS) == {}


def test_the_product_has_no_import_cycle() -> None:
    assert [sorted(cycle) for cycle in import_cycles(ARROWS)] == []


def test_the_cycle_finder_names_every_module_of_a_cycle() -> None:
    # a -> b -> c -> a is one cycle of three; d -> a joins none; e <-> f is another.
    arrows = {
        "a": {"b"},
        "b": {"c", "outside"},
        "c": {"a"},
        "d": {"a"},
        "e": {"f"},
        "f": {"e"},
    }
    assert sorted(sorted(cycle) for cycle in import_cycles(arrows)) == [
        ["a", "b", "c"],
        ["e", "f"],
    ]
