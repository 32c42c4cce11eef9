"""SFrame lookups: every FRE of the fixtures is found again, the rows agree
with the binary's own DWARF CFI (an independent description of the same
code), PCMASK and unsorted tables, and sections read from process memory."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stackmark.elf import PT_LOAD, ElfFile
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.memory import read_sframe_from_image
from stackmark.formats.sframe.model import SFrameSection
from stackmark.formats.sframe.reader import read_sframe_file
from stackmark.formats.sframe.writer import build_fde, build_fre, encode_sframe, new_header
from stackmark.unwind_rules import CFA, Arch, RuleKind, ValueRule

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sframe"
BINARIES = sorted(p for p in FIXTURES.iterdir() if p.is_file() and "." not in p.name)


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_every_fre_is_found_at_its_start_and_end(path: Path) -> None:
    section = read_sframe_file(path)
    table = SFrameTable(section)
    assert table.binary_search
    for fde in section.fdes:
        if fde.is_pcmask:
            continue
        for k, fre in enumerate(fde.fres):
            start = fde.start + fre.start
            end = fde.start + fde.fres[k + 1].start if k + 1 < len(fde.fres) else fde.end
            for pc in (start, end - 1):
                match = table.find(pc)
                assert match is not None and match.fre is fre, hex(pc)
                assert (match.row.start, match.row.end) == (start, end)
    first = min(f.start for f in section.fdes)
    assert table.find(first - 1) is None
    last = max(section.fdes, key=lambda f: f.end)
    assert table.find(last.end) is None


def _cfi_rows(path: Path) -> dict[int, tuple[int, int, dict[int, object]]]:
    """pc -> (CFA register, CFA offset, register rules) from pyelftools' CFI decoding."""
    from elftools.elf.elffile import ELFFile

    rows: dict[int, tuple[int, int, dict[int, object]]] = {}
    with open(path, "rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        for entry in dwarf.EH_CFI_entries():
            if not hasattr(entry, "cie") or entry.cie is None:
                continue
            start = entry.header["initial_location"]
            end = start + entry.header["address_range"]
            table = entry.get_decoded().table
            for i, row in enumerate(table):
                row_end = table[i + 1]["pc"] if i + 1 < len(table) else end
                cfa = row["cfa"]
                if cfa.expr is not None:
                    continue
                for pc in range(row["pc"], row_end):
                    rows[pc] = (cfa.reg, cfa.offset, row)
    return rows


@pytest.mark.parametrize(
    "path", [p for p in BINARIES if p.name.startswith(("deep", "a64"))], ids=lambda p: p.name
)
def test_rows_agree_with_the_dwarf_cfi(path: Path) -> None:
    section = read_sframe_file(path)
    table = SFrameTable(section)
    arch = section.arch
    cfi = _cfi_rows(path)
    checked = 0
    for fde in section.fdes:
        if fde.is_pcmask or (fde.size == 8 and arch is Arch.AMD64 and fde.fres[0].words == (16,)):
            continue  # PLT stubs: CFI uses an expression; .plt.got: ld's known sp+16 quirk
        for pc in range(fde.start, fde.end):
            if pc not in cfi:
                continue
            row = table.row(pc)
            assert row is not None
            reg, offset, rules = cfi[pc]
            if row.outermost:
                assert rules[arch.ra].type == "UNDEFINED"
                continue
            assert (row.cfa_register, row.cfa_offset) == (reg, offset), hex(pc)
            fp_rule = rules.get(arch.fp)
            if fp_rule is not None and fp_rule.type == "OFFSET":
                assert row.fp == ValueRule.at_cfa(fp_rule.arg), hex(pc)
            else:
                assert row.fp.kind is RuleKind.SAME
            ra_rule = rules.get(arch.ra)
            if arch is Arch.AMD64:
                assert row.ra == ValueRule.at_cfa(-8)
            elif ra_rule is not None and ra_rule.type == "OFFSET":
                assert row.ra == ValueRule.at_cfa(ra_rule.arg), hex(pc)
            else:
                assert row.ra.kind is RuleKind.SAME
            checked += 1
    assert checked > 100


def test_pac_signed_rows_and_b_key() -> None:
    section = read_sframe_file(FIXTURES / "a64-aarch64-v3")
    with ElfFile.open(FIXTURES / "a64-aarch64-v3") as elf:
        symbols = {s.name: s.value for s in elf.symbols()}
    table = SFrameTable(section)
    b_key = table.find_fde(symbols["mid_b"])
    a_key = table.find_fde(symbols["mid_a"])
    assert b_key is not None and b_key.pauth_key == spec.PAUTH_KEY_B
    assert a_key is not None and a_key.pauth_key == spec.PAUTH_KEY_A
    # after paciasp + stp: RA signed and saved at CFA-16
    row = table.row(symbols["mid_a"] + 8)
    assert row is not None and row.ra_mangled and row.ra == ValueRule.at_cfa(-16)
    # on entry: RA still in LR, not yet signed
    row = table.row(symbols["mid_a"])
    assert row is not None and not row.ra_mangled and row.ra.kind is RuleKind.SAME


def test_flex_signal_and_outermost_rows() -> None:
    section = read_sframe_file(FIXTURES / "edge-x86_64-v3")
    with ElfFile.open(FIXTURES / "edge-x86_64-v3") as elf:
        symbols = {s.name: s.value for s in elf.symbols()}
    table = SFrameTable(section)
    sig = table.row(symbols["sigtramp_like"])
    assert sig is not None and sig.signal_frame and not sig.outermost
    out = table.row(symbols["outermost_like"] + 1)
    assert out is not None and out.outermost and out.ra.kind is RuleKind.UNDEFINED
    drap = table.find_fde(symbols["drap"])
    assert drap is not None and drap.is_flex
    rows = [table.row(drap.start + fre.start) for fre in drap.fres]
    assert rows[1] is not None and (rows[1].cfa_register, rows[1].cfa_offset) == (10, 0)
    deref = [r for r in rows if r is not None and r.cfa_deref]
    assert deref and deref[0].cfa_register == Arch.AMD64.fp
    assert deref[0].fp == ValueRule(RuleKind.AT, Arch.AMD64.fp, 0)
    assert deref[0].ra == ValueRule(RuleKind.AT, CFA, -8)


@pytest.mark.parametrize("name", ["deep-x86_64-v1", "deep-x86_64-v2", "deep-x86_64-v3"])
def test_plt_entries_repeat(name: str) -> None:
    section = read_sframe_file(FIXTURES / name)
    table = SFrameTable(section)
    plt = next(f for f in section.fdes if f.is_pcmask and f.size >= 16 and f.fres[0].words == (8,))
    for entry in range(plt.size // 16):
        base = plt.start + 16 * entry
        early, late = table.row(base + 3), table.row(base + 0xB)
        assert early is not None and early.cfa_offset == 8
        assert late is not None and late.cfa_offset == 16
        assert (late.start, late.end) == (base + 0xB, base + 16)


def test_unsorted_tables_are_scanned() -> None:
    section = read_sframe_file(FIXTURES / "deep-x86_64-v3")
    shuffled = list(section.fdes)
    random.Random(7).shuffle(shuffled)
    header = new_header(section.abi_arch, sorted_fdes=False)
    unsorted = SFrameTable(SFrameSection(header, shuffled, section.address))
    assert not unsorted.binary_search
    sorted_table = SFrameTable(section)
    for fde in section.fdes:
        for pc in range(fde.start, fde.end):
            assert unsorted.row(pc) == sorted_table.row(pc)


def test_v3_function_without_fres_is_outermost() -> None:
    header = new_header(spec.AbiArch.AARCH64_LITTLE, version=3)
    fde = build_fde(0x2000, 0x10, [])
    table = SFrameTable.from_bytes(encode_sframe(SFrameSection(header, [fde], 0x3000)), 0x3000)
    row = table.row(0x2004)
    assert row is not None and row.outermost and (row.start, row.end) == (0x2000, 0x2010)
    v2 = SFrameTable.from_bytes(
        encode_sframe(SFrameSection(new_header(header.abi_arch, version=2), [fde], 0x3000)), 0x3000
    )
    assert v2.row(0x2004) is None


def test_flex_rules_from_control_words() -> None:
    """A flex FRE written with the spec's control words reads back as those rules."""
    words = [
        spec.flex_control(Arch.AMD64.fp, True), -8,  # CFA = *(rbp-8)
        spec.flex_control(None, True), -8,  # RA at CFA-8
        spec.flex_control(Arch.AMD64.fp, False), 16,  # FP = rbp+16 (value)
    ]  # fmt: skip
    fre = build_fre(0, cfa_base_sp=False, words=words, unsigned=[True, False] * 3)
    header = new_header(spec.AbiArch.AMD64_LITTLE)
    table = SFrameTable.from_bytes(
        encode_sframe(SFrameSection(header, [build_fde(0x10, 4, [fre], flex=True)], 0)), 0
    )
    row = table.row(0x11)
    assert row is not None
    assert (row.cfa_register, row.cfa_offset, row.cfa_deref) == (6, -8, True)
    assert row.ra == ValueRule(RuleKind.AT, CFA, -8)
    assert row.fp == ValueRule(RuleKind.VALUE, 6, 16)


def test_s390x_offsets_follow_the_spec() -> None:
    fres = [
        build_fre(0, cfa_base_sp=True, words=[20, 0, -72]),
        build_fre(4, cfa_base_sp=True, words=[0, 29, 23]),
    ]
    header = new_header(spec.AbiArch.S390X_BIG, version=2)
    table = SFrameTable.from_bytes(
        encode_sframe(SFrameSection(header, [build_fde(0x100, 8, fres)], 0)), 0
    )
    first, second = table.row(0x100), table.row(0x104)
    assert first is not None and second is not None
    assert (first.cfa_register, first.cfa_offset) == (15, 20 * 8 + 160)
    assert first.ra.kind is RuleKind.SAME  # padding: RA still in r14
    assert first.fp == ValueRule.at_cfa(-72)
    assert second.cfa_offset == 160
    assert second.ra == ValueRule(RuleKind.VALUE, 14, 0)
    assert second.fp == ValueRule(RuleKind.VALUE, 11, 0)


@pytest.mark.parametrize("name", ["deep-x86_64-v1", "deep-x86_64-v3", "a64-aarch64-v2"])
def test_memory_image_with_load_bias(name: str) -> None:
    """PT_GNU_SFRAME found through the program headers of an image mapped at a bias."""
    path = FIXTURES / name
    image_base = 0x7F12_3456_0000
    memory: dict[int, bytes] = {}
    with ElfFile.open(path) as elf:
        loads = [s for s in elf.segments if s.type == PT_LOAD]
        bias = image_base - (loads[0].vaddr - loads[0].offset)
        for seg in loads:
            memory[seg.vaddr + bias] = elf.read(seg.offset, seg.filesz) + bytes(
                seg.memsz - seg.filesz
            )

    def read(address: int, size: int) -> bytes:
        for start, blob in memory.items():
            if start <= address and address + size <= start + len(blob):
                return blob[address - start : address - start + size]
        raise OSError(f"unmapped 0x{address:x}")

    loaded = read_sframe_from_image(read, image_base)
    assert loaded is not None and loaded.load_bias == bias
    file_table = SFrameTable(read_sframe_file(path))
    for fde in file_table.section.fdes:
        for pc in range(fde.start, fde.end, 3):
            assert loaded.row(pc + bias) == file_table.row(pc)
