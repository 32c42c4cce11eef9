"""SFrame against the real binutils, on programs compiled during the test.

- v1: gcc -Wa,--gsframe with this machine's binutils 2.40; its objdump is
  the oracle for our dump, and for sections we generate from CFI.
- v2/v3: sections we generate are read back by objdump 2.44 and 2.47
  (Debian trixie/sid packages, unpacked by shared/tools/get-binutils.sh
  into build/toolchains on first use).
- AArch64: the committed fixtures, their .sframe removed and generated again
  from .eh_frame, read back by the cross objdumps of 2.40, 2.44 and 2.47.
- Big-endian AArch64 (a freestanding program built -mbig-endian at test
  time by each release's gas), dumped and generated, against the same objdumps.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stackmark.cli.main import main
from stackmark.formats.sframe.dump import objdump_text
from stackmark.formats.sframe.reader import read_sframe_file
from stackmark.formats.sframe.spec import AbiArch
from tests.conftest import require_tool
from tests.support.build import REPO, compile_program

GSFRAME = ("-O2", "-fomit-frame-pointer", "-Wa,--gsframe")
PLAIN = ("-O2", "-fomit-frame-pointer")
TOOLCHAINS = REPO / "build" / "toolchains"


def _objdump(objdump: str, binary: Path) -> str:
    proc = subprocess.run(
        [objdump, "--sframe", binary.name],
        cwd=binary.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge"])
def test_v1_from_gas_matches_system_objdump(program: str) -> None:
    objdump = require_tool("objdump")
    binary = compile_program(f"{program}_v1", [f"{program}.c"], flags=GSFRAME)
    section = read_sframe_file(binary)
    assert section.version == 1
    assert objdump_text(section, binary.name) == _objdump(objdump, binary)


def _generate(binary: Path, out: Path, version: int) -> None:
    assert (
        main(["sframe", "generate", str(binary), "-o", str(out), "--sframe-version", str(version)])
        == 0
    )


@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge"])
def test_generated_v1_read_back_by_system_objdump(program: str, tmp_path: Path) -> None:
    objdump = require_tool("objdump")
    binary = compile_program(f"{program}_plain", [f"{program}.c"], flags=PLAIN)
    out = tmp_path / f"{program}-generated"
    _generate(binary, out, 1)
    section = read_sframe_file(out)
    assert len(section.fdes) >= 6
    assert objdump_text(section, out.name) == _objdump(objdump, out)
    # the copy still runs
    assert subprocess.run([str(out)], check=False).returncode == 0


@pytest.fixture(scope="session")
def newer_binutils() -> Path:
    """binutils 2.44 (bin-trixie) and 2.47 (bin-sid), fetched once per checkout."""
    if (
        not (TOOLCHAINS / "bin-sid" / "objdump").exists()
        or not (TOOLCHAINS / "bin-trixie" / "objdump").exists()
    ):
        script = REPO.parent / "shared" / "tools" / "get-binutils.sh"
        if not script.exists():
            pytest.fail(f"{script} is missing: it fetches binutils 2.44/2.47 for these tests")
        proc = subprocess.run(
            ["bash", str(script), str(TOOLCHAINS)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            pytest.fail(f"get-binutils.sh failed:\n{proc.stdout}{proc.stderr}")
    return TOOLCHAINS


@pytest.mark.slow
@pytest.mark.parametrize("program", ["sframe_deep", "sframe_edge"])
@pytest.mark.parametrize(
    ("version", "releases"), [(2, ("2.44", "2.47")), (3, ("2.47",))], ids=["v2", "v3"]
)
def test_generated_sections_read_back_by_newer_objdump(
    newer_binutils: Path, program: str, version: int, releases: tuple[str, ...], tmp_path: Path
) -> None:
    binary = compile_program(f"{program}_plain", [f"{program}.c"], flags=PLAIN)
    out = tmp_path / f"{program}-v{version}"
    _generate(binary, out, version)
    section = read_sframe_file(out)
    if version == 3 and program == "sframe_edge":
        assert any(f.is_flex for f in section.fdes)  # drap's DRAP prologue
    suite = {"2.44": "bin-trixie", "2.47": "bin-sid"}
    for release in releases:
        expected = _objdump(str(newer_binutils / suite[release] / "objdump"), out)
        assert objdump_text(section, out.name, style=release) == expected, release
    assert subprocess.run([str(out)], check=False).returncode == 0


SFRAME_FIXTURES = REPO / "tests" / "fixtures" / "sframe"


@pytest.mark.slow
@pytest.mark.parametrize("program", ["deep", "a64"])
def test_generated_aarch64_sections_read_back_by_every_objdump(
    newer_binutils: Path, program: str, tmp_path: Path
) -> None:
    """AArch64 (a64: pac-ret with both keys): the committed v1 fixture without its
    .sframe, generated again from .eh_frame as v1, v2 and v3, then read by the
    cross objdump of binutils 2.40 (v1), 2.44 (v2) and 2.47 (v2, v3)."""
    bare = tmp_path / f"{program}-aarch64"
    subprocess.run(
        [
            require_tool("aarch64-linux-gnu-objcopy"),
            "--remove-section=.sframe",
            str(SFRAME_FIXTURES / f"{program}-aarch64-v1"),
            str(bare),
        ],
        check=True,
    )
    objdumps = {
        "2.40": require_tool("aarch64-linux-gnu-objdump"),
        "2.44": str(newer_binutils / "bin-trixie" / "aarch64-objdump"),
        "2.47": str(newer_binutils / "bin-sid" / "aarch64-objdump"),
    }
    readers = {1: ("2.40",), 2: ("2.44", "2.47"), 3: ("2.47",)}
    for version, releases in readers.items():
        out = tmp_path / f"{program}-v{version}"
        _generate(bare, out, version)
        section = read_sframe_file(out)
        assert section.version == version and len(section.fdes) >= 8
        if program == "a64":  # return addresses signed with the A and the B key
            assert {f.pauth_key for f in section.fdes} == {0, 1}
        for release in releases:
            expected = _objdump(objdumps[release], out)
            assert objdump_text(section, out.name, style=release) == expected, release


def _aarch64_as_ld(newer_binutils: Path, suite: str, where: Path) -> Path:
    """A directory with the suite's AArch64 `as` and `ld` under their plain names (for gcc -B)."""
    where.mkdir(exist_ok=True)
    for tool in ("as", "ld"):
        link = where / tool
        if not link.exists():
            link.symlink_to(newer_binutils / f"bin-{suite}" / f"aarch64-{tool}")
    return where


@pytest.mark.slow
def test_big_endian_aarch64_against_every_objdump(newer_binutils: Path, tmp_path: Path) -> None:
    """Byte order: a big-endian AArch64 program (ELF MSB, abi_arch 1) assembled with
    --gsframe by binutils 2.40 (v1), 2.44 (v2) and 2.47 (v3): our dump equals each
    one's objdump; then its .sframe removed and generated again as v1, v2 and v3,
    which each objdump reads back as we do."""
    gcc = require_tool("aarch64-linux-gnu-gcc")
    objdumps = {
        "2.40": require_tool("aarch64-linux-gnu-objdump"),
        "2.44": str(newer_binutils / "bin-trixie" / "aarch64-objdump"),
        "2.47": str(newer_binutils / "bin-sid" / "aarch64-objdump"),
    }
    flags = ["-mbig-endian", "-O2", "-Wa,--gsframe", "-nostdlib", "-static", "-Wl,-e,entry"]
    built = {}
    for version, release, suite in ((1, "2.40", None), (2, "2.44", "trixie"), (3, "2.47", "sid")):
        extra = []
        if suite is not None:
            tools = _aarch64_as_ld(newer_binutils, suite, newer_binutils / f"bin-{suite}-aarch64")
            extra = [f"-B{tools}/"]
        binary = compile_program(
            f"sframe_be_v{version}", ["sframe_big_endian.c"], compiler=gcc, flags=[*extra, *flags]
        )
        section = read_sframe_file(binary)
        assert section.version == version
        assert section.header.endian == ">" and section.header.abi_arch == AbiArch.AARCH64_BIG
        assert len(section.fdes) == 3
        assert objdump_text(section, binary.name, style=release) == _objdump(
            objdumps[release], binary
        )
        built[version] = binary
    bare = tmp_path / "be-bare"
    subprocess.run(
        [
            require_tool("aarch64-linux-gnu-objcopy"),
            "--remove-section=.sframe",
            str(built[1]),
            str(bare),
        ],
        check=True,
    )
    readers = {1: ("2.40",), 2: ("2.44", "2.47"), 3: ("2.47",)}
    for version, releases in readers.items():
        out = tmp_path / f"be-generated-v{version}"
        _generate(bare, out, version)
        section = read_sframe_file(out)
        assert section.header.endian == ">" and len(section.fdes) == 3
        for release in releases:
            expected = _objdump(objdumps[release], out)
            assert objdump_text(section, out.name, style=release) == expected, release
