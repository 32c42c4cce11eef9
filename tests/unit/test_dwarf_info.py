"""Units, DIEs and function trees: stackmark.dwarf against llvm-dwarfdump-19 --debug-info.

Every DIE's offset, depth and tag must match (a single mis-sized form would
shift every later offset), and the attributes llvm-dwarfdump prints in a
comparable way must have the same values: strings (including strx forms),
references, addresses, high PCs, range lists, constants, flags, and file
indexes resolved to paths.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stackmark.dwarf import constants as C
from stackmark.dwarf.reader import DwarfReader
from stackmark.dwarf.split_files import SplitDwarfFinder
from stackmark.dwarf.unit import Die
from tests.conftest import require_tool
from tests.support import sym_builds

_UNIT = re.compile(
    r"^0x([0-9a-f]+): (?:Compile|Type|Skeleton|Split) Unit: length = 0x([0-9a-f]+), "
    r"format = DWARF(32|64), version = 0x([0-9a-f]+)(?:, unit_type = (\w+))?, "
    r"abbr_offset = 0x([0-9a-f]+), addr_size = 0x([0-9a-f]+)"
)
_DIE = re.compile(r"^0x([0-9a-f]+):( +)(DW_TAG_\w+|NULL)")
_ATTR = re.compile(r"^\s+(DW_AT_\w+)\t\((.*)$")
_RANGE = re.compile(r"\[0x([0-9a-f]+), 0x([0-9a-f]+)\)")

TAG_NAMES = {v: k for k, v in vars(C).items() if k.startswith("DW_TAG_")}
ATTR_CODES = {k: v for k, v in vars(C).items() if k.startswith("DW_AT_")}
STRING_ATTRS = {
    "DW_AT_name",
    "DW_AT_linkage_name",
    "DW_AT_producer",
    "DW_AT_comp_dir",
    "DW_AT_dwo_name",
    "DW_AT_GNU_dwo_name",
}
FILE_ATTRS = {"DW_AT_decl_file", "DW_AT_call_file"}
DECIMAL_ATTRS = {"DW_AT_decl_line", "DW_AT_call_line", "DW_AT_call_column", "DW_AT_decl_column"}
REF_ATTRS = {"DW_AT_abstract_origin", "DW_AT_specification", "DW_AT_type", "DW_AT_sibling"}
HEX_ATTRS = {
    "DW_AT_byte_size",
    "DW_AT_stmt_list",
    "DW_AT_str_offsets_base",
    "DW_AT_addr_base",
    "DW_AT_rnglists_base",
}


@dataclass
class DumpedDie:
    offset: int
    depth: int
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class DumpedUnit:
    offset: int
    length: int
    offset_size: int
    version: int
    unit_type: str | None
    abbrev_offset: int
    addr_size: int
    dies: list[DumpedDie] = field(default_factory=list)


def dwarfdump_info(binary: Path) -> list[DumpedUnit]:
    out = subprocess.run(
        [require_tool("llvm-dwarfdump-19"), "--debug-info", str(binary)],
        capture_output=True,
        text=True,
        check=False,  # a GNU .dwo alone makes it complain about range lists, and exit 1
    ).stdout
    units: list[DumpedUnit] = []
    last_attr: tuple[DumpedDie, str] | None = None
    for line in out.splitlines():
        if m := _UNIT.match(line):
            units.append(
                DumpedUnit(
                    int(m.group(1), 16),
                    int(m.group(2), 16),
                    int(m.group(3)) // 8,
                    int(m.group(4), 16),
                    m.group(5),
                    int(m.group(6), 16),
                    int(m.group(7), 16),
                )
            )
            last_attr = None
        elif m := _DIE.match(line):
            depth = (len(m.group(2)) - 1) // 2
            die = DumpedDie(int(m.group(1), 16), depth, m.group(3))
            units[-1].dies.append(die)
            last_attr = None
        elif (m := _ATTR.match(line)) and units and units[-1].dies:
            die = units[-1].dies[-1]
            die.attrs[m.group(1)] = m.group(2)
            last_attr = (die, m.group(1))
        elif last_attr is not None and line.strip():
            die, name = last_attr
            die.attrs[name] += "\n" + line.strip()
    return units


def _strip(value: str) -> str:
    return value[:-1] if value.endswith(")") else value


def compare_die(ours: Die, theirs: DumpedDie, *, dwo: bool) -> list[str]:
    """Differences between one of our DIEs and llvm-dwarfdump's rendering of it."""
    problems = []
    unit = ours.unit
    for name, raw in theirs.attrs.items():
        code = ATTR_CODES.get(name)
        if code is None:
            continue
        value = _strip(raw)
        if code not in ours:
            problems.append(f"{name} missing")
        elif name in STRING_ATTRS:
            expected = re.fullmatch(r'"(.*)"', value, re.S)
            if expected and ours.string(code) != expected.group(1):
                problems.append(f"{name}: {ours.string(code)!r} != {expected.group(1)!r}")
        elif name in FILE_ATTRS and not dwo:
            expected = re.fullmatch(r'"(.*)"', value)
            index = ours.unsigned(code)
            found = unit.file_name(index) if index is not None else None
            if expected and found != expected.group(1):
                problems.append(f"{name}: {found!r} != {expected.group(1)!r}")
        elif name in DECIMAL_ATTRS or name in HEX_ATTRS:
            if ours.unsigned(code) != int(value, 0):
                problems.append(f"{name}: {ours.unsigned(code)} != {value}")
        elif name in REF_ATTRS and ours.form(code) == C.DW_FORM_ref_sig8:
            signature = int(value.split()[0], 16)
            if ours.unsigned(code) != signature:
                problems.append(f"{name}: signature {ours.unsigned(code)} != {signature}")
            elif ours.reference(code) is None:
                problems.append(f"{name}: type unit for signature {signature:#x} not found")
        elif name in REF_ATTRS:
            target = int(value.split()[0], 16)
            if ours.reference(code) != target:
                problems.append(f"{name}: {ours.reference(code)} != {target}")
        elif name in ("DW_AT_external", "DW_AT_declaration"):
            if value == "true" and not ours.unsigned(code):
                problems.append(f"{name} not set")
        elif name == "DW_AT_low_pc" and not dwo:
            if ours.address(code) != int(value, 16):
                problems.append(f"{name}: {ours.address(code)} != {value}")
        elif name == "DW_AT_high_pc" and not dwo:
            if ours.high_pc() != int(value, 16):
                problems.append(f"{name}: {ours.high_pc()} != {value}")
        elif name == "DW_AT_ranges" and not dwo:
            expected_ranges = [(int(a, 16), int(b, 16)) for a, b in _RANGE.findall(value)]
            got = ours.ranges() if C.DW_AT_low_pc not in ours or C.DW_AT_high_pc not in ours else []
            if got and got != expected_ranges:
                problems.append(f"{name}: {got} != {expected_ranges}")
    return problems


def check_against_dwarfdump(path: Path, reader: DwarfReader, *, dwo: bool = False) -> int:
    dumped = dwarfdump_info(path)
    units = list(reader.all_units())
    assert [u.offset for u in units] == [u.offset for u in dumped]
    checked = 0
    for unit, expected in zip(units, dumped, strict=True):
        header = unit.header
        assert (
            header.end - header.offset - (4 if header.offset_size == 4 else 12) == expected.length
        )
        assert header.offset_size == expected.offset_size
        assert header.version == expected.version
        assert header.abbrev_offset == expected.abbrev_offset
        assert header.addr_size == expected.addr_size
        dies = [d for d in expected.dies if d.tag != "NULL"]
        ours = list(unit.dies())
        assert [d.offset for d in ours] == [d.offset for d in dies]
        assert [d.depth for d in ours] == [d.depth for d in dies]
        for die, theirs in zip(ours, dies, strict=True):
            name = TAG_NAMES.get(die.tag)
            if name is not None:
                assert name == theirs.tag, f"DIE 0x{die.offset:x}"
            problems = compare_die(die, theirs, dwo=dwo)
            assert not problems, f"DIE 0x{die.offset:x} ({theirs.tag}): {problems}"
            checked += 1
    return checked


BUILDS = {
    "c-O0": lambda: sym_builds.c_program("-g", "-O0", name="sym_inline_O0"),
    "c-O2": lambda: sym_builds.c_program(),
    "c-O2-dwarf4": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-4", name="sym_inline_d4"),
    "c-O2-dwarf64": lambda: sym_builds.c_program(
        "-g", "-O2", "-gdwarf64", name="sym_inline_dwarf64"
    ),
    "c-O2-gz": lambda: sym_builds.c_program("-g", "-O2", "-gz", name="sym_inline_gz"),
    "c-O2-dwarf2": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-2", name="sym_inline_d2"),
    "c-O2-dwarf3": lambda: sym_builds.c_program("-g", "-O2", "-gdwarf-3", name="sym_inline_d3"),
    "c-O2-aarch64": sym_builds.aarch64_program,
    "c-m32": sym_builds.freestanding_32bit,
    "c-m32-dwarf4": lambda: sym_builds.freestanding_32bit("-gdwarf-4"),
    "c-O2-types": lambda: sym_builds.c_program(
        "-g", "-O2", "-fdebug-types-section", name="sym_inline_types"
    ),
    "cpp-O2": lambda: sym_builds.cpp_program(),
    "cpp-O2-dwarf4": lambda: sym_builds.cpp_program(
        "-g", "-O2", "-gdwarf-4", name="sym_templates_d4"
    ),
    "lib": sym_builds.shared_library,
    "cpp-local-classes": sym_builds.local_classes_program,
}


@pytest.mark.parametrize("variant", sorted(BUILDS))
def test_every_die_matches_llvm_dwarfdump(variant: str) -> None:
    binary = BUILDS[variant]()
    assert check_against_dwarfdump(binary, DwarfReader.open(binary)) > 15


@pytest.mark.parametrize("source", [sym_builds.C_SOURCE, sym_builds.CPP_SOURCE])
@pytest.mark.parametrize("version", ["-gdwarf-5", "-gdwarf-4"])
def test_split_dwarf_units_match_llvm_dwarfdump(source: str, version: str) -> None:
    binary = sym_builds.split_dwarf(source, "-g", "-O2", version)
    reader = DwarfReader.open(binary, load_split=SplitDwarfFinder())
    check_against_dwarfdump(binary, reader)
    skeleton = next(reader.units())
    split = skeleton.split_unit
    assert split is not None, "the .dwo file was not found"
    dwo = Path(str(split.reader.name))
    assert check_against_dwarfdump(dwo, split.reader, dwo=True) > 20


def _dumped_functions(binary: Path) -> dict[int, tuple[str, list[tuple[int, int]]]]:
    """DIE offset -> (tag, ranges) for subprograms and inlined calls with addresses."""
    found = {}
    for unit in dwarfdump_info(binary):
        for die in unit.dies:
            if die.tag not in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine"):
                continue
            if "DW_AT_low_pc" in die.attrs and "DW_AT_high_pc" in die.attrs:
                low = int(_strip(die.attrs["DW_AT_low_pc"]), 16)
                high = int(_strip(die.attrs["DW_AT_high_pc"]), 16)
                ranges = [(low, high)]
            elif "DW_AT_ranges" in die.attrs:
                ranges = [
                    (int(a, 16), int(b, 16)) for a, b in _RANGE.findall(die.attrs["DW_AT_ranges"])
                ]
            else:
                continue
            if ranges:
                found[die.offset] = (die.tag, ranges)
    return found


@pytest.mark.parametrize("variant", ["c-O2", "cpp-O2", "cpp-O2-dwarf4", "cpp-local-classes"])
def test_function_trees_hold_every_subroutine_with_code(variant: str) -> None:
    binary = BUILDS[variant]()
    expected = _dumped_functions(binary)
    reader = DwarfReader.open(binary)
    found: dict[int, tuple[str, list[tuple[int, int]]]] = {}
    for unit in reader.units():
        for function in unit.functions():
            for node in function.walk():
                tag = "DW_TAG_inlined_subroutine" if node.is_inlined else "DW_TAG_subprogram"
                found[node.offset] = (tag, node.ranges)
                for child in node.children:
                    assert child.parent is node
    assert found == expected


def test_inlined_calls_know_their_call_site_and_names() -> None:
    binary = sym_builds.c_program()
    reader = DwarfReader.open(binary)
    by_name = {}
    for unit in reader.units():
        for function in unit.functions():
            for node in function.walk():
                by_name.setdefault(node.name, node)
    source = (sym_builds.SOURCES / "sym_inline.c").read_text().splitlines()
    declared = 1 + next(i for i, t in enumerate(source) if t.startswith("static inline int scale"))
    calls = {1 + i for i, t in enumerate(source) if "scale(" in t and "int scale" not in t}
    scale = by_name["scale"]
    assert scale.is_inlined
    assert scale.call_file_name == str(sym_builds.SOURCES / "sym_inline.c")
    assert scale.call_line in calls  # the two calls in normalize()
    assert scale.decl_line == declared and scale.decl_file == scale.call_file_name
    run = by_name["run_pipeline"]
    assert not run.is_inlined and run.parent is None and run.low_pc is not None
    assert {c.name for c in run.walk()} >= {"run_pipeline", "pipeline", "normalize", "scale"}
