"""SFrame generated from DWARF CFI, compared with what gas itself emitted for
the same functions (the committed fixtures carry both .eh_frame and .sframe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stackmark.formats.sframe.from_cfi import generate_from_file
from stackmark.formats.sframe.model import FuncDescEntry
from stackmark.formats.sframe.reader import parse_sframe, read_sframe_file
from stackmark.formats.sframe.writer import encode_sframe

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sframe"
BINARIES = sorted(p for p in FIXTURES.iterdir() if p.is_file() and "." not in p.name)


def _shape(fde: FuncDescEntry) -> tuple[object, ...]:
    return (fde.size, fde.info, fde.info2, [(r.start, r.info, r.words) for r in fde.fres])


def _is_ld_plt_got(fde: FuncDescEntry) -> bool:
    """ld's .plt.got FDE (8-byte PCMASK block, sp+16): the CFI says sp+8, which is right."""
    return fde.is_pcmask and fde.rep_size == 8


@pytest.mark.parametrize("path", BINARIES, ids=lambda p: p.name)
def test_generated_rows_equal_gas_rows(path: Path) -> None:
    version = int(path.name[-1])
    gas = read_sframe_file(path)
    result = generate_from_file(path, version=version, address=gas.address)
    # What we generate must survive its own version's encoding (v1 drops rep_size).
    ours_section = parse_sframe(encode_sframe(result.section), gas.address)
    ours = {fde.start: fde for fde in ours_section.fdes}
    compared = 0
    for fde in gas.fdes:
        if _is_ld_plt_got(fde):
            continue
        mine = ours.get(fde.start)
        if mine is None:
            continue  # e.g. functions gas 2.40 dropped
        if version < 3 and all(fre.ra_undefined for fre in mine.fres):
            # .cfi_undefined: gas before 2.46 ignored it; we write v2 errata 2's
            # RA-undefined row (v1 cannot say it: the function is reported instead)
            continue
        assert _shape(mine) == _shape(fde), hex(fde.start)
        compared += 1
    assert compared >= 4


def test_functions_that_cannot_be_expressed_are_reported() -> None:
    v1 = generate_from_file(FIXTURES / "edge-x86_64-v1", version=1)
    reasons = {s.name: s.reason for s in v1.skipped}
    assert "flex" in reasons["drap"] and "v3" in reasons["drap"]
    assert "undefined" in reasons["outermost_like"]
    v3 = generate_from_file(FIXTURES / "edge-x86_64-v3", version=3)
    assert v3.skipped == []
    assert any(f.is_flex for f in v3.section.fdes)


def test_aarch64_signing_state_and_keys() -> None:
    result = generate_from_file(FIXTURES / "a64-aarch64-v3", version=3)
    gas = read_sframe_file(FIXTURES / "a64-aarch64-v3")
    keys = {f.start: f.pauth_key for f in result.section.fdes}
    assert {f.start: f.pauth_key for f in gas.fdes if f.start in keys} == {
        f.start: keys[f.start] for f in gas.fdes if f.start in keys
    }
    assert 1 in keys.values()
    mangled = [r.mangled_ra for f in result.section.fdes for r in f.fres]
    assert any(mangled) and not all(mangled)
