"""binutils' own SFrame tests (2.40, 2.44, 2.47), run against `stackmark sframe`.

    make conformance-binutils                # or:
    .venv/bin/python -m tests.conformance.binutils_sframe [-v] [--release R] [FILTER]

1. Fetch. The tests come from Debian's binutils source packages 2.40-2
   (bookworm), 2.44-3 (trixie) and 2.47-6 (sid), downloaded with
   `apt-get source --download-only` through a private apt configuration
   with `deb-src` lines (build/binutils-conformance/apt; the system's apt
   configuration is not touched). Only the test directories below are
   unpacked, into build/binutils-conformance/src/<release>/ (never into the
   repository: they are binutils' files). The tools are this machine's
   binutils 2.40 and Debian's 2.44 and 2.47 (shared/tools/get-binutils.sh,
   as for the tests; s390x 2.47 from tests/support/s390x_binutils.py).
2. Run, with each release's own tools on that release's tests:
   - every dump test (a `.d` file whose `#objdump:` or `#readelf:` asks for
     `--sframe`) of gas/testsuite/gas/cfi-sframe, gas/testsuite/gas/scfi/x86_64,
     ld/testsuite/ld-x86-64/sframe*, ld-aarch64/sframe*, ld-sframe and
     binutils/testsuite/binutils-all/x86-64/*sframe*: the inputs are built as
     the `.d` says (#source, #as, #ld, #objcopy); `stackmark sframe dump`
     (`--like readelf` for #readelf, `--section` for `--sframe=NAME`) must
     print what the release's objdump/readelf prints, and must pass the `.d`
     expectation under binutils' own matcher (`regexp_diff`: `#...`, `#?`,
     `#pass`, `#failif`, blank lines skipped);
   - every gas test (cfi-sframe, scfi) with `--gsframe`: the source assembled
     without it, `stackmark sframe generate` on that object (same SFrame
     version as gas's), against gas's own section, function by function and
     row by row (PCs relative to the function; a row repeating the one before
     dropped on both sides). What stackmark writes must read back the same in
     stackmark's dump and in every objdump that knows its version;
   - libsframe/testsuite/libsframe.decode's raw sections (DATA*), wrapped in an
     ELF object by the release's objcopy: dump against objdump;
   - libsframe/testsuite/libsframe.find's C tests, built with gcc against the
     release's own libsframe sources (a stand-in dejagnu.h; sframe_decode and
     sframe_find_fre wrapped to save each section and log each answer): every
     sframe_find_fre answer against stackmark's lookup of the same PC.
   Common gas tests run for x86-64, AArch64 and (2.47) s390x, as
   cfi-sframe.exp runs them for each target.
3. Report: one line per case that is not identical, then the counts per
   release and class. Classes (the exit status is 1 when any case is in one
   of the first six):
       dump-differs      stackmark's dump is not the release tool's text
       expectation       stackmark's dump fails the .d where the tool's passes
       generate-error    generate failed
       generate-differs  generate's rows are not gas's, for no known reason
       readback          a generated section reads back differently
       lookup-differs    stackmark's FRE for a PC is not sframe_find_fre's
       known:<reason>    generate differs from gas for a documented reason
                         (docs/sframe-cbf-unwind.md): gas-repeats-rows,
                         gas-zero-length-fde, gas-row-at-function-end,
                         gas-skips-cfi-escape
       same-sframe-part  the tool also dumps another section (objdump -WF):
                         its SFrame part is identical
       tool-fails-.d     the release's own tool fails the .d (binutils' xfail)
       skipped           not applicable (no --gsframe; gas or ld refuses the input)
       same              identical
   libsframe's other C tests (encode, frecnt, be-flipping) check libsframe's
   encoder and byte swapping, which stackmark does not share, and are not run.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from stackmark.cli.main import main as stackmark_main
from stackmark.formats.sframe import spec
from stackmark.formats.sframe.lookup import SFrameTable
from stackmark.formats.sframe.reader import read_sframe_file
from tests.support.binutils import newer_binutils
from tests.support.s390x_binutils import s390x_binutils

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "binutils-conformance"
PACKAGES = {"2.40": "2.40-2", "2.44": "2.44-3", "2.47": "2.47-6"}
SUITES = ("bookworm", "trixie", "sid")
WANTED = (
    "gas/testsuite/gas/cfi-sframe/*",
    "gas/testsuite/gas/scfi/x86_64/*",
    "ld/testsuite/ld-x86-64/sframe*",
    "ld/testsuite/ld-x86-64/*.s",
    "ld/testsuite/ld-aarch64/sframe*",
    "ld/testsuite/ld-sframe/*",
    "libsframe/testsuite/*",
    "binutils/testsuite/binutils-all/x86-64/*",
    "binutils/testsuite/lib/binutils-common.exp",
    # libsframe itself, to build its C tests (libsframe.find)
    "libsframe/sframe.c",
    "libsframe/sframe-error.c",
    "libsframe/sframe-impl.h",
    "include/sframe.h",
    "include/sframe-api.h",
    "include/ansidecl.h",
    "libctf/swap.h",
)
DUMP_GROUPS = (
    "gas/testsuite/gas/cfi-sframe/*.d",
    "gas/testsuite/gas/scfi/x86_64/*.d",
    "ld/testsuite/ld-x86-64/sframe*.d",
    "ld/testsuite/ld-aarch64/sframe*.d",
    "ld/testsuite/ld-sframe/*.d",
    "binutils/testsuite/binutils-all/x86-64/*sframe*.d",
)
FAILING = (
    "dump-differs",
    "expectation",
    "generate-error",
    "generate-differs",
    "readback",
    "lookup-differs",
)
TRIPLES = {
    "x86_64": "x86_64-pc-linux-gnu",
    "aarch64": "aarch64-unknown-linux-gnu",
    "s390x": "s390x-ibm-linux-gnu",
}


# -- fetching -------------------------------------------------------------------------


def _apt_options() -> list[str]:
    apt = BUILD / "apt"
    return [
        f"-oDir::Etc::SourceList={apt / 'sources.list'}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
    ]


def fetch(releases: list[str]) -> None:
    """Unpack each release's test directories under BUILD/src/<release> (once)."""
    stamp = "\n".join(WANTED)
    missing = [
        r
        for r in releases
        if not (BUILD / "src" / r / ".complete").exists()
        or (BUILD / "src" / r / ".complete").read_text() != stamp
    ]
    if not missing:
        return
    apt = BUILD / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    downloads = apt / "downloads"
    downloads.mkdir(exist_ok=True)
    if not (apt / "sources.list").exists() or not any((apt / "lists").iterdir()):
        mirror = "http://deb.debian.org/debian"
        (apt / "sources.list").write_text(
            "".join(f"deb-src {mirror} {suite} main\n" for suite in SUITES)
        )
        print("apt-get update (deb-src bookworm, trixie, sid; private lists) ...", flush=True)
        subprocess.run(["apt-get", *_apt_options(), "update", "-qq"], check=True)
    for release in missing:
        upstream = PACKAGES[release].split("-")[0]
        tarballs = sorted(downloads.glob(f"binutils_{upstream}.orig.tar.*"))
        if not tarballs:
            print(f"apt-get source --download-only binutils={PACKAGES[release]} ...", flush=True)
            subprocess.run(
                [
                    "apt-get",
                    *_apt_options(),
                    "source",
                    "--download-only",
                    "-qq",
                    f"binutils={PACKAGES[release]}",
                ],
                cwd=downloads,
                check=True,
            )
            tarballs = sorted(downloads.glob(f"binutils_{upstream}.orig.tar.*"))
        if not tarballs:
            raise SystemExit(f"apt-get source gave no binutils {upstream} tarball in {downloads}")
        target = BUILD / "src" / release
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        print(f"unpacking binutils {upstream}'s SFrame tests ...", flush=True)
        subprocess.run(  # quiet: 2.40 and 2.44 lack some of the directories
            [
                "tar",
                "-xf",
                str(tarballs[-1]),
                "-C",
                str(target),
                "--strip-components=1",
                "--wildcards",
                "--no-wildcards-match-slash",
                *[f"*/{pattern}" for pattern in WANTED],
            ],
            check=False,
            capture_output=True,
        )
        (target / ".complete").write_text(stamp)


# -- tools ----------------------------------------------------------------------------


def toolsets(release: str) -> dict[str, dict[str, str]]:
    """arch -> tool name -> command, for one release."""
    if release == "2.40":
        x86 = {t: t for t in ("as", "ld", "objdump", "readelf", "objcopy")}
        arm = {t: f"aarch64-linux-gnu-{t}" for t in x86}
        return {"x86_64": x86, "aarch64": arm}
    toolchains = newer_binutils()
    suite = toolchains / ("bin-trixie" if release == "2.44" else "bin-sid")
    names = ("as", "ld", "objdump", "readelf", "objcopy")
    sets = {
        "x86_64": {t: str(suite / t) for t in names},
        "aarch64": {t: str(suite / f"aarch64-{t}") for t in names},
    }
    if release == "2.47":
        s390x = s390x_binutils(toolchains)
        sets["s390x"] = {t: str(s390x / t) for t in names}
    return sets


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, errors="replace", check=False
    )


def _stackmark(*args: str) -> tuple[int, str, str]:
    """`stackmark ARGS` in this process: (status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = stackmark_main(list(args))
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
    return status, out.getvalue(), err.getvalue()


# -- binutils' dump-test files ----------------------------------------------------------


@dataclass
class DumpTest:
    """The directives of one `.d` file (binutils-common.exp run_dump_test)."""

    path: Path
    options: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> DumpTest:
        test = cls(path)
        for line in path.read_text(errors="replace").splitlines():
            match = re.match(r"^#\s*([A-Za-z_]+)\s*:\s?(.*)$", line)
            if match:
                test.options.setdefault(match.group(1), []).append(match.group(2).strip())
            elif line.strip() and not line.startswith("#"):
                break
        return test

    def first(self, name: str) -> str | None:
        values = self.options.get(name)
        return values[0] if values else None

    @property
    def dump_tool(self) -> tuple[str, str] | None:
        """("objdump" or "readelf", its options) when the test dumps SFrame."""
        for tool in ("objdump", "readelf"):
            options = self.first(tool)
            if options is not None and "--sframe" in options:
                return tool, options
        return None

    @property
    def sources(self) -> list[tuple[Path, list[str]]]:
        """Each input and its own extra assembler flags (`#source: file [flags]`)."""
        found = []
        for value in self.options.get("source", []):
            name, *flags = shlex.split(value)
            found.append((self.path.parent / name, flags))
        return found or [(self.path.with_suffix(".s"), [])]

    def runs_on(self, arch: str) -> bool:
        """#target / #notarget / #skip, with binutils' check procedures taken as true."""
        triple = TRIPLES[arch]

        def matches(value: str) -> bool:
            words = re.findall(r"!?\[[^\]]*\]|\S+", value)
            hits = []
            for word in words:
                if word.startswith("!["):
                    hits.append(False)
                elif word.startswith("["):
                    hits.append(True)
                else:
                    hits.append(fnmatch.fnmatch(triple, word))
            return any(hits)

        targets = self.options.get("target", [])
        if targets and not any(matches(v) for v in targets):
            return False
        return not any(
            matches(v) for v in self.options.get("notarget", []) + self.options.get("skip", [])
        )


# binutils' matcher, regexp_diff, is Tcl: the runner sources it from the fetched
# binutils-common.exp and runs it with tclsh, with stand-ins for the DejaGnu
# procedures it calls (logging only).
_TCL_DRIVER = """
proc send_log {args} {}
proc verbose {args} {}
proc perror {args} { puts stderr [lindex $args 0] }
set library [lindex $argv 0]
set text [read [open $library r]]
set start [string first "proc regexp_diff " $text]
set end [string first "\n}\n" $text $start]
eval [string range $text $start [expr {$end + 2}]]
puts [regexp_diff [lindex $argv 1] [lindex $argv 2]]
"""


def regexp_diff(output: str, expected: Path, release: str, work: Path) -> bool:
    """Does `output` pass the `.d` file `expected`, by binutils' own regexp_diff
    (`#...`, `#?`, `#pass`, `#failif`, blank lines skipped; each other line a Tcl
    regexp anchored at both ends)?"""
    library = BUILD / "src" / release / "binutils/testsuite/lib/binutils-common.exp"
    driver = work / "regexp_diff.tcl"
    driver.write_text(_TCL_DRIVER)
    dumped = work / "dump.out"
    dumped.write_text(output)
    proc = _run(["tclsh", str(driver), str(library), str(dumped), str(expected)], work)
    if proc.returncode != 0 or proc.stdout.strip() not in ("0", "1"):
        raise SystemExit(f"regexp_diff failed on {expected}: {proc.stderr.strip()}")
    return proc.stdout.strip() == "0"


# -- one case ---------------------------------------------------------------------------


@dataclass
class Outcome:
    release: str
    arch: str
    test: str
    kind: str  # "dump", "generate", "libsframe"
    verdict: str  # a class of the module docstring
    detail: str = ""
    lookups: int = 0  # libsframe-find: sframe_find_fre answers compared


def _assemble(
    tools: dict[str, str], test: DumpTest, work: Path, flags: list[str]
) -> tuple[list[Path], str | None, str]:
    """The objects of a test's sources, or the assembler's complaint; its warnings."""
    objects = []
    warnings = ""
    for i, (source, extra) in enumerate(test.sources):
        if not source.exists():
            return [], f"no source {source.name}", warnings
        obj = work / f"{i}-{source.stem}.o"
        proc = _run([tools["as"], *flags, *extra, "-o", str(obj), str(source)], work)
        warnings += proc.stderr
        if proc.returncode != 0:
            return [], proc.stderr.strip(), warnings
        objects.append(obj)
    return objects, None, warnings


def _as_flags(test: DumpTest, arch: str) -> list[str]:
    flags = shlex.split(test.first("as") or "")
    if arch == "x86_64" and "cfi-sframe" in str(test.path):
        flags.insert(0, "--64")  # cfi-sframe.exp's ASFLAGS
    return flags


def dump_case(
    release: str,
    arch: str,
    tools: dict[str, str],
    test: DumpTest,
    work: Path,
    kind: str = "dump",
) -> Outcome:
    """The test's dump by stackmark against the release tool's, then against the
    `.d` (not for another release's sources: their `.d` expects that release)."""
    name = _test_name(test.path)
    tool_and_options = test.dump_tool
    assert tool_and_options is not None
    tool, options = tool_and_options
    if tool not in tools:
        return Outcome(release, arch, name, kind, "skipped", f"no {tool} for {arch}")
    objects, error, _warnings = _assemble(tools, test, work, _as_flags(test, arch))
    if error is not None:
        return Outcome(release, arch, name, kind, "skipped", f"as: {error}")
    binary = objects[0]
    if test.first("ld") is not None:
        binary = work / "linked"
        proc = _run(
            [
                tools["ld"],
                *shlex.split(test.first("ld") or ""),
                "-o",
                str(binary),
                *map(str, objects),
            ],
            test.path.parent,  # linker scripts (-T) are named relative to the test
        )
        if proc.returncode != 0:
            return Outcome(release, arch, name, kind, "skipped", f"ld: {proc.stderr.strip()}")
    if test.first("objcopy") is not None:
        copied = work / "copied"
        proc = _run(
            [tools["objcopy"], *shlex.split(test.first("objcopy") or ""), str(binary), str(copied)],
            work,
        )
        if proc.returncode != 0:
            return Outcome(release, arch, name, kind, "skipped", f"objcopy: {proc.stderr.strip()}")
        binary = copied
    section = ".sframe"
    match = re.search(r"--sframe=(\S+)", options)
    if match:
        section = match.group(1)
    reference = _run([tools[tool], *shlex.split(options), binary.name], work).stdout
    args = ["sframe", "dump", binary.name, "--section", section]
    if tool == "readelf":
        args += ["--like", "readelf"]
    with _cwd(work):
        status, ours, err = _stackmark(*args)
    if [o for o in shlex.split(options) if not o.startswith("--sframe")]:
        # the tool also dumps something else (objdump -WF: .eh_frame): the SFrame part
        heading = "Contents of the SFrame section"
        theirs, mine = reference.partition(heading)[2], ours.partition(heading)[2]
        verdict = "same-sframe-part" if theirs and theirs == mine else "dump-differs"
        return Outcome(release, arch, name, kind, verdict, _diff(theirs, mine))
    if ours != reference:
        detail = _diff(reference, ours) + (
            f"\n(stackmark status {status}: {err.strip()})" if err else ""
        )
        return Outcome(release, arch, name, kind, "dump-differs", detail)
    if kind != "dump":
        return Outcome(release, arch, name, kind, "same")
    tool_passes = regexp_diff(reference, test.path, release, work)
    if regexp_diff(ours, test.path, release, work):
        return Outcome(release, arch, name, kind, "same")
    if not tool_passes:
        return Outcome(release, arch, name, kind, "tool-fails-.d")
    return Outcome(release, arch, name, kind, "expectation", ours)


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _diff(expected: str, got: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(True), got.splitlines(True), "binutils", "stackmark", n=1
        )
    )


# -- generate against gas --------------------------------------------------------------------


def functions(
    dump: str, *, merge_repeats: bool = True, drop_end_rows: bool = False
) -> list[list[str]]:
    """objdump's function index: per FDE its attributes and rows, PCs relative to
    the function; with `merge_repeats`, a row repeating the one before it dropped;
    with `drop_end_rows`, rows at or past the function's end dropped too."""
    result: list[list[str]] = []
    start = size = 0
    for line in dump.splitlines():
        heading = re.match(
            r"^    func idx \[\d+\]: pc = 0x([0-9a-f]+), size = (\d+) bytes(.*)$", line
        )
        row = re.match(r"^    ([0-9a-f]{16})(.*)$", line)
        if heading:
            start, size = int(heading.group(1), 16), int(heading.group(2))
            result.append([f"size {size}{heading.group(3)}"])
        elif result and row:
            offset = (int(row.group(1), 16) - start) & 0xFFFFFFFFFFFFFFFF
            columns = row.group(2).split()
            if drop_end_rows and offset >= size:
                continue
            if merge_repeats and len(result[-1]) > 1 and result[-1][-1].split()[1:] == columns:
                continue
            result[-1].append(" ".join([f"+{offset:x}", *columns]))
    return result


def _known_difference(gas: str, ours: str, gas_warnings: str) -> str | None:
    """The documented reason gas's functions differ from ours, if one explains it."""
    gas_functions, our_functions = functions(gas), functions(ours)
    if ".cfi_escape" in gas_warnings and len(gas_functions) <= len(our_functions):
        # gas gives up on a function at an escape it does not parse; stackmark reads
        # the CFI the escape encodes and writes the rows it gives
        described = [f for f in gas_functions if len(f) > 1]
        if all(f in our_functions for f in described):
            return "known:gas-skips-cfi-escape"
    if functions(gas, drop_end_rows=True) == functions(ours, drop_end_rows=True):
        return "known:gas-row-at-function-end"
    zero_length = [f for f in gas_functions if f[0].startswith("size 0")]
    if zero_length and [f for f in gas_functions if f not in zero_length] == our_functions:
        return "known:gas-zero-length-fde"
    return None


def generate_case(
    release: str,
    arch: str,
    tools: dict[str, str],
    test: DumpTest,
    work: Path,
    readers: dict[int, list[tuple[str, str]]],
    kind: str = "generate",
) -> Outcome:
    name = _test_name(test.path)
    flags = _as_flags(test, arch)
    asks = any(f.startswith("--gsframe") and f != "--gsframe=no" for f in flags)
    if not asks or test.first("error") is not None:
        return Outcome(release, arch, name, kind, "skipped", "not a --gsframe test")
    gas_work, plain_work = work / "gas", work / "plain"
    gas_work.mkdir()
    plain_work.mkdir()
    gas_objects, error, gas_warnings = _assemble(tools, test, gas_work, flags)
    if error is not None or not gas_objects:
        return Outcome(release, arch, name, kind, "skipped", f"as: {error}")
    gas_object = gas_objects[0]
    # the same source, CFI only: no --gsframe, and .eh_frame where it asked for .sframe alone
    source, extra = test.sources[0]
    text = source.read_text(errors="surrogateescape")
    text = re.sub(r"\.cfi_sections\s+\.sframe\b", ".cfi_sections .eh_frame", text)
    plain_source = plain_work / source.name
    plain_source.write_text(text, errors="surrogateescape")
    plain_flags = [f for f in flags if not f.startswith("--gsframe")]
    plain = plain_work / "plain.o"
    proc = _run(
        [tools["as"], *plain_flags, *extra, "-o", str(plain), str(plain_source)], plain_work
    )
    if proc.returncode != 0:
        return Outcome(release, arch, name, kind, "skipped", f"as: {proc.stderr.strip()}")
    try:
        gas_version = read_sframe_file(gas_object).version
    except Exception as exc:  # the gas object has no SFrame at all
        return Outcome(release, arch, name, kind, "skipped", f"gas wrote no SFrame: {exc}")
    generated = plain_work / "generated.o"
    status, out, err = _stackmark(
        "sframe", "generate", str(plain), "-o", str(generated), "--sframe-version", str(gas_version)
    )
    if status != 0:
        return Outcome(release, arch, name, kind, "generate-error", err.strip())
    objdump = tools["objdump"]
    gas_dump = _run([objdump, "--sframe", gas_object.name], gas_work).stdout
    our_dump = _run([objdump, "--sframe", generated.name], plain_work).stdout
    # what stackmark wrote reads back the same in stackmark and in every objdump of its version
    for style, other in readers.get(gas_version, []):
        theirs = _run([other, "--sframe", generated.name], plain_work).stdout
        with _cwd(plain_work):
            _status, mine, _err = _stackmark("sframe", "dump", generated.name, "--style", style)
        if mine != theirs:
            return Outcome(release, arch, name, kind, "readback", _diff(theirs, mine))
    if functions(gas_dump, merge_repeats=False) == functions(our_dump, merge_repeats=False):
        return Outcome(release, arch, name, kind, "same")
    if functions(gas_dump) == functions(our_dump):
        # gas writes a row identical to the one before it (after .cfi_restore_state,
        # or a rule restated); stackmark merges them: the same answer at every PC
        detail = _diff(
            "\n".join(map(str, functions(gas_dump, merge_repeats=False))),
            "\n".join(map(str, functions(our_dump, merge_repeats=False))),
        )
        return Outcome(release, arch, name, kind, "known:gas-repeats-rows", detail)
    known = _known_difference(gas_dump, our_dump, gas_warnings)
    detail = _diff(
        "\n".join(map(str, functions(gas_dump))), "\n".join(map(str, functions(our_dump)))
    )
    if out.count("could not be expressed"):
        detail += "\n" + out
    return Outcome(release, arch, name, kind, known or "generate-differs", detail)


def objdumps_by_version() -> dict[str, dict[int, list[tuple[str, str]]]]:
    """arch -> SFrame version -> (release, objdump) for every objdump that shows it."""
    toolchains = newer_binutils()
    trixie, sid = toolchains / "bin-trixie", toolchains / "bin-sid"
    s390x = s390x_binutils(toolchains) / "objdump"
    return {
        "x86_64": {
            1: [("2.40", "objdump")],
            2: [("2.44", str(trixie / "objdump")), ("2.47", str(sid / "objdump"))],
            3: [("2.47", str(sid / "objdump"))],
        },
        "aarch64": {
            1: [("2.40", "aarch64-linux-gnu-objdump")],
            2: [("2.44", str(trixie / "aarch64-objdump")), ("2.47", str(sid / "aarch64-objdump"))],
            3: [("2.47", str(sid / "aarch64-objdump"))],
        },
        "s390x": {2: [("2.47", str(s390x))], 3: [("2.47", str(s390x))]},
    }


def libsframe_case(
    release: str, tools_by_arch: dict[str, dict[str, str]], data: Path, work: Path
) -> Outcome:
    """A raw section of libsframe.decode, wrapped into an ELF object by objcopy."""
    name = _test_name(data)
    raw = data.read_bytes()
    abi = raw[4] if len(raw) > 4 else 0
    arch, bfd = {
        1: ("aarch64", "elf64-bigaarch64"),
        2: ("aarch64", "elf64-littleaarch64"),
        3: ("x86_64", "elf64-x86-64"),
        4: ("s390x", "elf64-s390"),
    }.get(abi, ("x86_64", "elf64-x86-64"))
    tools = tools_by_arch.get(arch)
    if tools is None:
        return Outcome(release, arch, name, "libsframe", "skipped", f"no {arch} tools")
    wrapped = work / "wrapped.o"
    binary_arch = {"x86_64": "i386:x86-64", "aarch64": "aarch64", "s390x": "s390:64-bit"}[arch]
    proc = _run(
        [
            tools["objcopy"],
            "-I",
            "binary",
            "-O",
            bfd,
            "-B",
            binary_arch,
            "--rename-section",
            ".data=.sframe",
            str(data),
            str(wrapped),
        ],
        work,
    )
    if proc.returncode != 0:
        return Outcome(release, arch, name, "libsframe", "skipped", proc.stderr.strip())
    reference = _run([tools["objdump"], "--sframe", wrapped.name], work)
    with _cwd(work):
        _status, ours, _err = _stackmark("sframe", "dump", wrapped.name)
    if reference.stdout != ours:
        return Outcome(
            release, arch, name, "libsframe", "dump-differs", _diff(reference.stdout, ours)
        )
    return Outcome(release, arch, name, "libsframe", "same")


# -- libsframe's lookups ----------------------------------------------------------------

# libsframe.find's C tests build sections with libsframe's encoder and check
# sframe_find_fre's answers. Linked with these wrappers, each section a test
# decodes is saved (section-N.bin) and each lookup logged (lookups.txt:
# section, pc, status, the FRE's start, info and data-word bytes), so that
# stackmark can be asked the same questions about the same bytes.
_DEJAGNU_SHIM = """
#include <stdarg.h>
#include <stdio.h>
static inline void pass (const char *fmt, ...)
{ va_list a; va_start (a, fmt); printf ("PASS: "); vprintf (fmt, a); puts (""); va_end (a); }
static inline void fail (const char *fmt, ...)
{ va_list a; va_start (a, fmt); printf ("FAIL: "); vprintf (fmt, a); puts (""); va_end (a); }
static inline void note (const char *fmt, ...) { (void) fmt; }
static inline void totals (void) {}
"""

_LOOKUP_WRAPPERS = """
#include <stdio.h>
#include "sframe-api.h"
sframe_decoder_ctx *__real_sframe_decode (const char *, size_t, int *);
int __real_sframe_find_fre (sframe_decoder_ctx *, PC_TYPE, sframe_frame_row_entry *);
static const sframe_decoder_ctx *decoded[1024];
static int count;

sframe_decoder_ctx *
__wrap_sframe_decode (const char *buf, size_t size, int *err)
{
  sframe_decoder_ctx *ctx = __real_sframe_decode (buf, size, err);
  if (ctx != NULL && count < 1024)
    {
      char name[32];
      snprintf (name, sizeof name, "section-%d.bin", count);
      FILE *f = fopen (name, "wb");
      fwrite (buf, 1, size, f);
      fclose (f);
      decoded[count++] = ctx;
    }
  return ctx;
}

int
__wrap_sframe_find_fre (sframe_decoder_ctx *ctx, PC_TYPE pc, sframe_frame_row_entry *frep)
{
  int status = __real_sframe_find_fre (ctx, pc, frep);
  int i = count - 1;
  while (i >= 0 && decoded[i] != ctx)
    i--;
  FILE *f = fopen ("lookups.txt", "a");
  fprintf (f, "%d %lld %d", i, (long long) pc, status);
  if (status == 0)
    {
      fprintf (f, " %u %u ", (unsigned) frep->fre_start_addr, (unsigned) frep->fre_info);
      for (size_t k = 0; k < sizeof frep->WORDS_FIELD; k++)
        fprintf (f, "%02x", frep->WORDS_FIELD[k]);
    }
  fputs ("\\n", f);
  fclose (f);
  return status;
}
"""


def libsframe_find_case(release: str, test: Path, work: Path) -> Outcome:
    """One libsframe.find test, built against the release's libsframe: every
    sframe_find_fre answer against stackmark's lookup of the same PC."""
    name = _test_name(test)
    root = BUILD / "src" / release
    api = (root / "include/sframe-api.h").read_text()
    pc_type = "int32_t" if re.search(r"sframe_find_fre \([^)]*int32_t pc", api) else "int64_t"
    words = "fre_datawords" if "fre_datawords" in api else "fre_offsets"
    shim = work / "shim"
    shim.mkdir()
    (shim / "config.h").write_text("")
    (shim / "dejagnu.h").write_text(_DEJAGNU_SHIM)
    (work / "wrappers.c").write_text(_LOOKUP_WRAPPERS)
    program = work / test.stem
    build = _run(
        [
            "gcc", "-O1", "-w", f"-DPC_TYPE={pc_type}", f"-DWORDS_FIELD={words}",
            f"-I{shim}", f"-I{root / 'libsframe'}", f"-I{root / 'include'}",
            f"-I{root / 'libctf'}", f"-I{root / 'libsframe/testsuite'}",
            str(test), str(root / "libsframe/sframe.c"), str(root / "libsframe/sframe-error.c"),
            str(work / "wrappers.c"),
            "-Wl,--wrap=sframe_decode", "-Wl,--wrap=sframe_find_fre", "-o", str(program),
        ],
        work,
    )  # fmt: skip
    if build.returncode != 0:
        return Outcome(release, "x86_64", name, "libsframe-find", "skipped", build.stderr[-500:])
    ran = _run([str(program)], work)
    if "PASS:" not in ran.stdout or "FAIL:" in ran.stdout:
        detail = "libsframe's own test does not pass:\n" + ran.stdout
        return Outcome(release, "x86_64", name, "libsframe-find", "skipped", detail)
    log = work / "lookups.txt"
    lookups = log.read_text().splitlines() if log.exists() else []
    differences = [line for line in lookups if not _same_lookup(line, work)]
    verdict = "lookup-differs" if differences else "same"
    detail = f"{len(lookups)} lookups; differ: " + "; ".join(differences[:5])
    return Outcome(release, "x86_64", name, "libsframe-find", verdict, detail, len(lookups))


def _same_lookup(line: str, work: Path) -> bool:
    """Does stackmark find the FRE libsframe found (or none where it found none)?"""
    fields = line.split()
    section, pc, status = int(fields[0]), int(fields[1]), int(fields[2])
    data = (work / f"section-{section}.bin").read_bytes()
    # libsframe's PCs are relative to the section and often negative (text lies
    # below it): place the section high enough that every function lies above 0
    base = 1 << 40
    match = SFrameTable.from_bytes(data, base).find(base + pc)
    if status != 0:
        return match is None or match.fre is None
    if match is None or match.fre is None:
        return False
    start, info, raw = int(fields[3]), int(fields[4]), bytes.fromhex(fields[5])
    fre = match.fre
    size = spec.WORD_SIZE.get(spec.fre_info_word_size_code(info), 1)
    endian: Literal["little", "big"] = "little" if data[:2] == b"\xe2\xde" else "big"
    words = tuple(
        int.from_bytes(raw[i * size : (i + 1) * size], endian, signed=True)
        for i in range(spec.fre_info_word_count(info))
    )
    return (fre.start, fre.info, tuple(fre.words)) == (start, info, words)


def _test_name(path: Path) -> str:
    """The test's path in its release's sources, after that release: 2.47/gas/..."""
    return str(path.relative_to(BUILD / "src"))


def _archs_of(test: DumpTest, available: dict[str, dict[str, str]]) -> list[str]:
    text = str(test.path)
    for arch, marks in (
        ("x86_64", ("x86_64", "x86-64", "scfi")),
        ("aarch64", ("aarch64",)),
        ("s390x", ("s390x",)),
    ):
        if any(
            mark in test.path.name or f"/ld-{mark}/" in text or f"/{mark}/" in text
            for mark in marks
        ):
            return [arch] if arch in available else []
    if "/ld-sframe/" in text:
        return ["x86_64"]
    return [a for a in ("x86_64", "aarch64", "s390x") if a in available]


def cases(release: str) -> Iterator[Path]:
    root = BUILD / "src" / release
    seen: set[Path] = set()
    for pattern in DUMP_GROUPS:
        for path in sorted(root.glob(pattern)):
            if path not in seen:
                seen.add(path)
                yield path


def run_release(
    release: str, filter_: str | None, verbose: bool, cross: bool = True
) -> list[Outcome]:
    """The release's own tests with its tools; with `cross`, also the dumps of the
    newest release's gas tests assembled by this release's gas, against its objdump
    (not their `.d` files, which expect the newer output, and not generate: the
    older gas has bugs those newer tests were written for, e.g. PR 33756)."""
    sets = toolsets(release)
    readers = objdumps_by_version()
    outcomes: list[Outcome] = []
    work_root = BUILD / "run" / release
    shutil.rmtree(work_root, ignore_errors=True)
    counter = 0

    def fresh() -> Path:
        nonlocal counter
        counter += 1
        path = work_root / str(counter)
        path.mkdir(parents=True)
        return path

    newest = max(PACKAGES)
    runs = [(path, "") for path in cases(release)]
    if cross and release != newest:
        runs += [(path, f" ({newest} sources)") for path in cases(newest) if "/gas/" in str(path)]
    for path, suffix in runs:
        if filter_ and not re.search(filter_, str(path)):
            continue
        test = DumpTest.read(path)
        for arch in _archs_of(test, sets):
            if not test.runs_on(arch):
                continue
            tools = sets[arch]
            if test.dump_tool is not None:
                outcomes.append(dump_case(release, arch, tools, test, fresh(), "dump" + suffix))
            if "/gas/" in str(path) and not suffix:  # older gas has bugs the newer tests pin
                arch_objdumps = readers.get(arch, {})
                outcomes.append(
                    generate_case(
                        release, arch, tools, test, fresh(), arch_objdumps, "generate" + suffix
                    )
                )
    for data in sorted(
        (BUILD / "src" / release / "libsframe/testsuite/libsframe.decode").glob("DATA*")
    ):
        if filter_ and not re.search(filter_, str(data)):
            continue
        outcomes.append(libsframe_case(release, sets, data, fresh()))
    for program in sorted(
        (BUILD / "src" / release / "libsframe/testsuite/libsframe.find").glob("*.c")
    ):
        if filter_ and not re.search(filter_, str(program)):
            continue
        outcomes.append(libsframe_find_case(release, program, fresh()))
    for outcome in outcomes:
        if outcome.verdict not in ("same", "skipped"):
            print(
                f"{outcome.verdict}: {release} {outcome.arch} {outcome.kind} :: {outcome.test}",
                flush=True,
            )
            if verbose and outcome.detail:
                print("    " + outcome.detail.rstrip().replace("\n", "\n    "), flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--release",
        action="append",
        choices=sorted(PACKAGES),
        help="only this release (repeatable)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the differences")
    parser.add_argument(
        "--no-cross",
        action="store_true",
        help="do not also assemble the newest release's gas tests with the older releases",
    )
    parser.add_argument("filter", nargs="?", help="run only tests whose path matches this regex")
    args = parser.parse_args(argv)
    releases = args.release or sorted(PACKAGES)
    fetch(sorted(set(releases) | ({max(PACKAGES)} if not args.no_cross else set())))
    outcomes: list[Outcome] = []
    for release in releases:
        outcomes += run_release(release, args.filter, args.verbose, not args.no_cross)
    print()
    for release in releases:
        for kind in sorted({o.kind for o in outcomes if o.release == release}):
            counts = Counter(o.verdict for o in outcomes if o.release == release and o.kind == kind)
            if counts:
                text = ", ".join(f"{verdict} {n}" for verdict, n in sorted(counts.items()))
                answers = sum(
                    o.lookups for o in outcomes if o.release == release and o.kind == kind
                )
                if answers:
                    text += f" ({answers} sframe_find_fre answers)"
                print(f"binutils {release} {kind}: {text}")
    return 1 if any(o.verdict in FAILING for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
