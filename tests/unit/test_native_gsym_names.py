"""The converter's compiled name search (`die_names` in stackmark/_native/_dwarf.c)
against its reference, `stackmark.formats.gsym.dwarf_walk.DieFunction.names`.

Every subprogram and inlined call the converter's walk finds must get the same
(linkage name, name) with and without the kernel: on programs compiled here
(gcc and clang, C and C++, DWARF 4 and 5, templates, classes local to
functions, two units, link-time optimization, split DWARF with indexed
strings, dwz, a big-endian relocatable object) and on copies whose references
and string offsets were rewritten (cycles, a DIE's own offset, unit headers,
null entries, the middle of a DIE, other units, past the end; strings outside
their section or cut short), where both give the same names or raise the same
FormatError at the same offset.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from stackmark._native import forced_pure
from stackmark.binary import read_uleb
from stackmark.dwarf import constants as C
from stackmark.dwarf.abbrev import skip_form
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.split_files import SplitDwarfFinder
from stackmark.dwarf.supplementary import supplementary_finder
from stackmark.dwarf.unit import Unit
from stackmark.elf import ElfFile
from stackmark.errors import FormatError
from stackmark.formats.gsym import name_kernel
from stackmark.formats.gsym.dwarf_names import DieParents, DW_LANG_C_plus_plus, NameBuilder
from stackmark.formats.gsym.dwarf_walk import DieFunction, UnitWalk
from stackmark.formats.gsym.from_dwarf import DwarfReport, unit_to_convert
from tests.support import sym_builds
from tests.support.build import SOURCES, compile_program
from tests.support.dwz import dwz_compressed
from tests.support.native import pure_python

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="compares the compiled kernel with the reference (run pure already)"
)


def _split(directory: Path, compiler: str, sources: list[str], *flags: str) -> Path:
    """`sources` compiled with -gsplit-dwarf in `directory` (the .dwo files beside)."""
    for name in [*sources, "gsym_inline.h"]:
        shutil.copyfile(SOURCES / name, directory / name)
    subprocess.run(
        [compiler, "-gsplit-dwarf", *flags, *sources, "-o", "split_prog"],
        cwd=directory,
        check=True,
    )
    assert list(directory.glob("*.dwo")), f"{compiler} wrote no .dwo file"
    return directory / "split_prog"


PROGRAMS: dict[str, Callable[[Path], Path]] = {
    "gcc C -O2 (DWARF 5)": lambda _: sym_builds.c_program(),
    "gcc C -O2 DWARF 4": lambda _: sym_builds.c_program("-g", "-O2", "-gdwarf-4"),
    "g++ templates -O2": lambda _: sym_builds.cpp_program(),
    "g++ templates -O2 DWARF 4": lambda _: sym_builds.cpp_program("-g", "-O2", "-gdwarf-4"),
    "g++ local classes -O2": lambda _: sym_builds.local_classes_program(),
    "g++ namespaces and classes -O2": lambda _: compile_program(
        "gsym_names_cpp", ["gsym_cpp.cpp"], compiler="g++", flags=("-g", "-O2")
    ),
    "clang++ local classes -O2 (indexed strings)": lambda _: compile_program(
        "gsym_names_clang_local",
        [sym_builds.LOCAL_CLASSES_SOURCE],
        compiler="clang++-19",
        flags=("-g", "-O2"),
    ),
    "clang++ templates -O2 DWARF 4": lambda _: compile_program(
        "gsym_names_clang_templates4",
        [sym_builds.CPP_SOURCE],
        compiler="clang++-19",
        flags=("-g", "-O2", "-gdwarf-4"),
    ),
    "clang++ s390x object -O2 (big-endian, relocated)": lambda _: compile_program(
        "gsym_names_s390x.o",
        ["macho_names.cpp"],
        compiler="clang++-19",
        flags=("--target=s390x-linux-gnu", "-g", "-O2", "-c"),
    ),
    "gcc C two units -O2": lambda _: compile_program(
        "gsym_names_two_units", ["gsym_inline.c", "gsym_inline_b.c"], flags=("-g", "-O2")
    ),
    "gcc C two units -O2 -flto (references across units)": lambda _: compile_program(
        "gsym_names_lto", ["gsym_inline.c", "gsym_inline_b.c"], flags=("-g", "-O2", "-flto")
    ),
    "gcc -gsplit-dwarf (DWARF 5, .dwo files)": lambda tmp: _split(
        tmp, "gcc", ["gsym_inline.c", "gsym_inline_b.c"], "-g", "-O2"
    ),
    "gcc -gsplit-dwarf DWARF 4 (GNU string indexes)": lambda tmp: _split(
        tmp, "gcc", ["gsym_inline.c", "gsym_inline_b.c"], "-g", "-O2", "-gdwarf-4"
    ),
    "clang -gsplit-dwarf": lambda tmp: _split(
        tmp, "clang-19", ["gsym_inline.c", "gsym_inline_b.c"], "-g", "-O2"
    ),
    "dwz (names and abstract instances in a supplementary file)": lambda tmp: dwz_compressed(
        tmp, str(tmp / "common.debug")
    )[0],
}


def _reader(elf: ElfFile) -> DwarfReader:
    """The DWARF of `elf`; a dwz program's supplementary file is read from where its
    link names it, a split program's .dwo files from where llvm finds them (the
    reader looks for no file it is not told how to find)."""
    return DwarfReader(
        elf, load_supplementary=supplementary_finder(()), load_split=SplitDwarfFinder()
    )


def _functions(reader: DwarfReader) -> list[DieFunction]:
    """Every subprogram and inlined call the converter walks to, in DIE order."""
    out: list[DieFunction] = []
    parents = DieParents()
    for unit in reader.units():
        walk = UnitWalk(unit_to_convert(unit, DwarfReport()), parents)
        stack = list(reversed(walk.functions))
        while stack:
            function = stack.pop()
            out.append(function)
            stack.extend(reversed(function.children))
    return out


def outcome(path: Path, data: bytes | None = None) -> list[tuple[Any, ...]]:
    """Each function's offset and names, or the FormatError its names raise."""
    elf = ElfFile.open(path) if data is None else ElfFile.from_bytes(data, str(path))
    out: list[tuple[Any, ...]] = []
    for function in _functions(_reader(elf)):
        try:
            out.append((function.offset, function.names()))
        except FormatError as exc:
            out.append((function.offset, "error", str(exc), exc.offset))
    return out


_T = TypeVar("_T")


class _Counting:
    """Wraps the compiled module, counting the searches it answered and handed back."""

    def __init__(self, module: Any, counted: str = "die_names"):
        self.module = module
        self.counted = counted
        self.answered = 0
        self.handed_back = 0

    def __getattr__(self, name: str) -> Any:
        kernel = getattr(self.module, name)
        if name != self.counted:
            return kernel

        def call(*args: Any) -> Any:
            result = kernel(*args)
            self.answered += result is not None
            self.handed_back += result is None
            return result

        return call


def _spied(
    monkeypatch: pytest.MonkeyPatch, counted: str, run: Callable[[], _T]
) -> tuple[_T, _Counting]:
    """`run`'s result with the compiled module's `counted` kernel counted."""
    spy = _Counting(name_kernel._native, counted)
    monkeypatch.setattr(name_kernel, "_native", spy)
    try:
        return run(), spy
    finally:
        monkeypatch.undo()


def _both(
    path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes | None = None
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], _Counting]:
    """(outcome with the kernel, outcome of the reference, the kernel's counts)."""
    compiled, spy = _spied(monkeypatch, "die_names", lambda: outcome(path, data))
    with pure_python():
        reference = outcome(path, data)
    return compiled, reference, spy


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_compiled_programs_name_every_function_the_same_with_and_without_the_kernel(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = PROGRAMS[name](tmp_path)
    compiled, reference, spy = _both(path, monkeypatch)
    assert compiled == reference
    named = [entry for entry in compiled if entry[1] != (None, None)]
    assert len(named) >= 3, "the programs have named functions"
    assert spy.answered > 0, "the kernel answered no search"
    if "dwz" not in name:
        assert spy.handed_back == 0, spy.handed_back


# -- rewritten references and strings ------------------------------------------------

_REF_ATTRS = (C.DW_AT_abstract_origin, C.DW_AT_specification)
_STRING_ATTRS = (C.DW_AT_name, C.DW_AT_linkage_name)
_WIDTHS = {
    C.DW_FORM_ref1: 1,
    C.DW_FORM_ref2: 2,
    C.DW_FORM_ref4: 4,
    C.DW_FORM_ref8: 8,
    C.DW_FORM_strx1: 1,
    C.DW_FORM_strx2: 2,
    C.DW_FORM_strx4: 4,
}


Place = tuple[int, int, int, int]
"""(the DIE's offset, the buffer position of one of its values, its width, its form)"""


def _die_places(unit: Unit, offset: int, attrs: tuple[int, ...]) -> list[Place]:
    """The places of the fixed-width values of `attrs` in the DIE at `offset`."""
    buf, enc = unit.info.buf, unit.enc
    code, pos = read_uleb(buf, unit.info.start + offset)
    abbrev = unit.abbrevs.get(code)
    out = []
    for attr, form, _ in abbrev.specs if abbrev is not None else ():
        width = _WIDTHS.get(form, enc.offset_size if form == C.DW_FORM_strp else 0)
        if attr in attrs and width:
            out.append((offset, pos, width, form))
        pos = skip_form(buf, pos, form, enc)
    return out


def _places(unit: Unit, attrs: tuple[int, ...]) -> list[Place]:
    """`_die_places` of every DIE of the unit."""
    return [place for die in unit.dies() for place in _die_places(unit, die.offset, attrs)]


def _null_entries(unit: Unit) -> list[int]:
    """Unit-relative offsets of the null entries that end the unit's lists of children."""
    found = []
    previous = None
    for die in unit.dies():
        if previous is not None and die.depth < previous.depth:
            found.append(die.offset - unit.offset - 1)
        previous = die
    buf, base = unit.info.buf, unit.info.start
    return [at for at in found if buf[base + unit.offset + at] == 0]


@pytest.mark.parametrize(
    "name",
    [
        "g++ local classes -O2",
        "g++ templates -O2 DWARF 4",
        "clang++ local classes -O2 (indexed strings)",
        "gcc C two units -O2",
    ],
)
def test_rewritten_references_and_strings_name_the_same_or_fail_the_same(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = PROGRAMS[name](tmp_path)
    data = path.read_bytes()
    reader = DwarfReader(ElfFile.from_bytes(data, str(path)))
    units = list(reader.units())
    refs = [(unit, place) for unit in units for place in _places(unit, _REF_ATTRS)]
    strings = [(unit, place) for unit in units for place in _places(unit, _STRING_ATTRS)]
    assert refs and strings
    str_size = reader.debug_str.size
    rng = random.Random(name)
    answered = errors = 0
    for trial in range(60):
        damaged = bytearray(data)
        for _ in range(rng.choice((1, 1, 3))):
            if trial % 3 != 2:  # a reference
                unit, (die, pos, width, form) = rng.choice(refs)
                length = unit.header.end - unit.offset
                value = rng.choice(
                    [
                        0,  # the unit's header
                        unit.header.die_offset - unit.offset - 1,
                        die - unit.offset,  # the DIE itself
                        rng.choice(refs)[1][0] - unit.offset,  # another referring DIE
                        rng.choice(refs)[1][1] - unit.info.start - unit.offset,  # mid-DIE
                        rng.choice(_null_entries(unit) or [1]),
                        length - rng.randrange(1, 8),  # a DIE running past the unit's end
                        length,  # the next unit, or past every unit
                        length + rng.randrange(64),
                        rng.randrange(length),
                        (1 << 8 * width) - 1,
                    ]
                )
            else:  # a string
                unit, (_, pos, width, form) = rng.choice(strings)
                if form == C.DW_FORM_strp:
                    value = rng.choice(
                        [str_size, str_size - 1, str_size + 5, rng.randrange(str_size), 0]
                    )
                else:  # an index into .debug_str_offsets
                    value = rng.choice([rng.randrange(1 << 8 * width), 0, 1, 300])
            value %= 1 << 8 * width
            damaged[pos : pos + width] = value.to_bytes(width, "little")
        if trial % 10 == 9:  # .debug_str cut short: its last string loses its NUL
            section = ElfFile.from_bytes(data).section(".debug_str")
            assert section is not None
            damaged[section.offset + section.size - 1] = ord("x")
        compiled, reference, spy = _both(path, monkeypatch, bytes(damaged))
        assert compiled == reference, f"trial {trial}"
        answered += spy.answered
        errors += any(entry[1] == "error" for entry in compiled)
    assert answered > 0, "the kernel answered on rewritten data"
    assert errors > 0, "some rewrites should make the names fail"


def test_reference_cycles_are_followed_once_with_and_without_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The references of each function's target pointed back at the function (and
    the function's own first reference at itself, every third one): both searches
    stop, with the names found on the way."""
    path = sym_builds.local_classes_program()
    data = bytearray(path.read_bytes())
    reader = DwarfReader(ElfFile.from_bytes(bytes(data), str(path)))
    looped = 0
    for unit in reader.units():
        buf = unit.info.buf
        for i, function in enumerate(_functions_of(unit)):
            back = (function.offset - unit.offset).to_bytes(8, "little")
            for _, pos, width, _ in _die_places(unit, function.offset, _REF_ATTRS):
                target = unit.offset + int.from_bytes(buf[pos : pos + width], "little")
                for _, t_pos, t_width, _ in _die_places(unit, target, _REF_ATTRS):
                    data[t_pos : t_pos + t_width] = back[:t_width]
                    looped += 1
                if i % 3 == 0:
                    data[pos : pos + width] = back[:width]
                break
    assert looped > 0
    compiled, reference, spy = _both(path, monkeypatch, bytes(data))
    assert compiled == reference
    assert spy.answered > 0 and spy.handed_back == 0


def _functions_of(unit: Unit) -> list[DieFunction]:
    """The functions and inlined calls of one unit's walk."""
    walk = UnitWalk(unit, DieParents())
    out: list[DieFunction] = []
    stack = list(walk.functions)
    while stack:
        function = stack.pop()
        out.append(function)
        stack.extend(function.children)
    return out


# -- qualified names (`die_context_refs`, `own_name` under NameBuilder) ----------------

_BLOCK_CLASSES = """
// Classes local to lexical blocks of functions and of a lambda, and to a template.
template <typename T> T in_template(T x) {
    if (x > 0) {
        T local = x;
        struct InBlock { static T twice(T v) { return 2 * v; } };
        return InBlock::twice(local);
    }
    return x;
}
namespace outer { namespace {
int in_block(int x) {
    for (int i = 0; i < x; ++i) {
        int local = x;
        struct Step { static int next(int v) { return v + 1; } };
        x = Step::next(local) - 1;
    }
    auto lambda = [](int v) {
        { struct InLambda { static int half(int w) { return w / 2; } }; return InLambda::half(v); }
    };
    return lambda(x);
}
} }
int main(int argc, char **) {
    return outer::in_block(argc) + in_template(argc) + (int)in_template(1.5);
}
"""


_NESTED_FUNCTIONS = """
/* GCC's nested functions, one in a lexical block: its DIE's parent is the block. */
int outer_fn(int x) {
    if (x > 1) {
        int y = x * 3;
        int nested(int v) { return v + y; }
        return nested(x);
    }
    int top(int v) { return v - x; }
    return top(x);
}
int main(int argc, char **argv) { (void)argv; return outer_fn(argc); }
"""


def _nested_functions(tmp: Path) -> Path:
    source = tmp / "nested_functions.c"
    source.write_text(_NESTED_FUNCTIONS)
    return compile_program("gsym_names_nested", [source], compiler="gcc", flags=("-g", "-O0"))


def _block_classes(compiler: str) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        source = tmp / "block_classes.cpp"
        source.write_text(_BLOCK_CLASSES)
        name = f"gsym_names_blocks_{compiler}"
        return compile_program(name, [source], compiler=compiler, flags=("-g", "-O0"))

    return build


QUALIFIED_PROGRAMS: dict[str, Callable[[Path], Path]] = {
    "g++ classes in lexical blocks -O0": _block_classes("g++"),
    "clang++ classes in lexical blocks -O0": _block_classes("clang++-19"),
    "gcc nested functions in lexical blocks -O0": _nested_functions,
    **{
        name: PROGRAMS[name]
        for name in (
            "g++ templates -O2",
            "g++ templates -O2 DWARF 4",
            "g++ local classes -O2",
            "g++ namespaces and classes -O2",
            "clang++ local classes -O2 (indexed strings)",
            "clang++ templates -O2 DWARF 4",
        )
    },
    "g++ -gsplit-dwarf (.dwo files)": lambda tmp: _split(tmp, "g++", ["gsym_cpp.cpp"], "-g", "-O2"),
    "g++ lambdas and anonymous namespaces -O2 -flto": lambda _: compile_program(
        "gsym_names_cpp_lto", ["gsym_cpp.cpp"], compiler="g++", flags=("-g", "-O2", "-flto")
    ),
    "g++ lambdas -O0 (their operator(), local classes in them)": lambda _: compile_program(
        "gsym_names_cpp_O0", ["gsym_cpp.cpp"], compiler="g++", flags=("-g", "-O0")
    ),
    "clang++ lambdas and anonymous namespaces -O1": lambda _: compile_program(
        "gsym_names_clang_cpp", ["gsym_cpp.cpp"], compiler="clang++-19", flags=("-g", "-O1")
    ),
}


def qualified_outcome(path: Path, compiled: bool, data: bytes | None = None) -> list[Any]:
    """Each function's qualified name as a C++ function without a linkage name
    (NameBuilder.name), or the FormatError it raises; one builder for the file, so
    the caches carry from one function to the next as in a conversion."""
    elf = ElfFile.open(path) if data is None else ElfFile.from_bytes(data, str(path))
    builder = NameBuilder(compiled=compiled)
    out: list[Any] = []
    for function in _functions(_reader(elf)):
        try:
            short = function._names()[1]
            name = builder.name((function.unit, function.offset), DW_LANG_C_plus_plus, None, short)
            out.append((function.offset, name))
        except FormatError as exc:
            out.append((function.offset, "error", str(exc), exc.offset))
    return out


def _qualified_both(
    path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes | None = None
) -> tuple[list[Any], list[Any], _Counting]:
    """(qualified names with the kernel, without it, the kernel's counts)."""
    compiled, spy = _spied(
        monkeypatch, "qualified_prefix", lambda: qualified_outcome(path, True, data)
    )
    return compiled, qualified_outcome(path, False, data), spy


@pytest.mark.parametrize("name", sorted(QUALIFIED_PROGRAMS))
def test_qualified_names_are_the_same_with_and_without_the_kernel(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = QUALIFIED_PROGRAMS[name](tmp_path)
    compiled, reference, spy = _qualified_both(path, monkeypatch)
    assert compiled == reference
    qualified = [entry for entry in compiled if isinstance(entry[1], str) and "::" in entry[1]]
    assert len(qualified) >= 2, "the programs have functions in namespaces, classes, functions"
    if "-flto" in name:  # contexts in other units: every name is the reference's
        assert spy.handed_back > 0
    else:
        assert spy.answered > 0, "the kernel answered no name"


@pytest.mark.parametrize(
    "name", ["g++ local classes -O2", "clang++ local classes -O2 (indexed strings)"]
)
def test_qualified_names_of_rewritten_references_are_the_same_or_fail_the_same(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """References pointed into cycles, at unit headers, null entries, mid-DIE, other
    units, past the end; a cut .debug_str: both give the same names or errors."""
    path = QUALIFIED_PROGRAMS[name](tmp_path)
    data = path.read_bytes()
    reader = DwarfReader(ElfFile.from_bytes(data, str(path)))
    units = list(reader.units())
    refs = [(unit, place) for unit in units for place in _places(unit, _REF_ATTRS)]
    assert refs
    rng = random.Random(name)
    answered = errors = 0
    for trial in range(30):
        damaged = bytearray(data)
        for _ in range(rng.choice((1, 2, 4))):
            unit, (die, pos, width, _) = rng.choice(refs)
            length = unit.header.end - unit.offset
            value = rng.choice(
                [
                    0,
                    die - unit.offset,  # the DIE itself
                    rng.choice(refs)[1][0] - unit.offset,  # another referring DIE: loops
                    rng.choice(refs)[1][1] - unit.info.start - unit.offset,  # mid-DIE
                    rng.choice(_null_entries(unit) or [1]),
                    length - rng.randrange(1, 8),
                    length + rng.randrange(64),
                    rng.randrange(length),
                ]
            ) % (1 << 8 * width)
            damaged[pos : pos + width] = value.to_bytes(width, "little")
        compiled, reference, spy = _qualified_both(path, monkeypatch, bytes(damaged))
        assert compiled == reference, f"trial {trial}"
        answered += spy.answered
        errors += any(entry[1] == "error" for entry in compiled)
    assert answered > 0, "the kernel answered on rewritten data"
    assert errors > 0, "some rewrites should make the names fail"
