"""LLVM 19's own lit tests, run with stackmark standing in for the llvm tools.

    make conformance                         # or:
    .venv/bin/python -m tests.conformance.llvm_lit [-v] [--llvm-src PATH] [TEST_FILTER]

1. Fetch. The tests come from Debian's source package `llvm-toolchain-19`
   (`apt-get source --download-only`, after adding a `deb-src` entry when
   none is configured; needs root the first time). Only the files below are
   unpacked, into build/llvm-conformance/llvm-test/ (never into the
   repository: they are LLVM's code). `--llvm-src PATH` (or LLVM_SRC=PATH
   for make) takes an orig tarball, a directory holding one, or an unpacked
   tree with llvm/test instead of downloading.
2. Run. Each test's RUN lines go through bash with pipefail, one by one, in
   a fresh directory, after lit's substitutions (%s %S %p %t %T, with /
   forms). PATH starts with a directory where `llvm-symbolizer` and
   `llvm-gsymutil` are stackmark (tests/conformance/llvm_stand_ins.py) and
   every other LLVM utility (FileCheck, yaml2obj, split-file, llc, not...)
   is LLVM 19's own, so FileCheck-19 judges stackmark's output.
3. Report: PASS / FAIL / UNSUPPORTED per test, then the counts per group.
   The exit status is 1 when a test fails.

Groups:
    markup     llvm/test/DebugInfo/symbolize-filter-markup-*.test and
               llvm/test/tools/llvm-symbolizer/filter-markup*.test (14)
    gsym       llvm/test/tools/llvm-gsymutil/** (but cmdline.test) and
               llvm/test/DebugInfo/X86/fission-no-inline-gsym.ll (7)
    gsym-cmdline  llvm/test/tools/llvm-gsymutil/cmdline.test: llvm's own
               --help and --version text, which stackmark does not copy
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "llvm-conformance"
TESTS = BUILD / "llvm-test"  # holds llvm/test/...
SOURCE_PACKAGE = "llvm-toolchain-19"
LLVM_BIN = Path("/usr/lib/llvm-19/bin")
STOOD_IN = ("llvm-symbolizer", "llvm-gsymutil")

# The files taken from the source tree (tar wildcards under its top directory).
WANTED = (
    "llvm/test/DebugInfo/symbolize-filter-markup-*",
    "llvm/test/tools/llvm-symbolizer/filter-markup*",
    "llvm/test/tools/llvm-gsymutil/*",
    "llvm/test/DebugInfo/X86/fission-no-inline-gsym.ll",
)

# group -> glob patterns under TESTS (test files only: not lit.local.cfg, Inputs/)
GROUPS: dict[str, tuple[str, ...]] = {
    "markup": (
        "llvm/test/DebugInfo/symbolize-filter-markup-*.test",
        "llvm/test/tools/llvm-symbolizer/filter-markup*.test",
    ),
    "gsym": (
        "llvm/test/tools/llvm-gsymutil/*/*.yaml",
        "llvm/test/tools/llvm-gsymutil/*/*.test",
        "llvm/test/DebugInfo/X86/fission-no-inline-gsym.ll",
    ),
    "gsym-cmdline": ("llvm/test/tools/llvm-gsymutil/cmdline.test",),
}

# What LLVM 19 as Debian builds it offers to REQUIRES / UNSUPPORTED lines
# (every target is registered; this is Linux).
FEATURES = frozenset(
    {
        "x86-registered-target",
        "aarch64-registered-target",
        "arm-registered-target",
        "system-linux",
        "shell",
        "zlib",
        "default_triple",
    }
)


# -- fetching -------------------------------------------------------------------


def _have_tests() -> bool:
    return all(glob.glob(str(TESTS / pattern)) for pattern in WANTED)


def _extract_from_tarball(tarball: Path) -> None:
    """Unpack only WANTED from an orig tarball into TESTS."""
    TESTS.mkdir(parents=True, exist_ok=True)
    patterns = [f"*/{pattern}" for pattern in WANTED]
    print(f"unpacking LLVM's tests from {tarball.name} (a minute) ...", flush=True)
    subprocess.run(
        [
            "tar",
            "-xf",
            str(tarball),
            "-C",
            str(TESTS),
            "--strip-components=1",
            "--wildcards",
            *patterns,
        ],
        check=True,
    )


def _copy_from_tree(root: Path) -> None:
    for pattern in WANTED:
        for found in glob.glob(str(root / pattern)):
            source = Path(found)
            target = TESTS / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                shutil.copyfile(source, target)


def _orig_tarball(directory: Path) -> Path | None:
    found = sorted(directory.glob(f"{SOURCE_PACKAGE}_*.orig.tar.*"))
    return found[-1] if found else None


def _ensure_deb_src() -> None:
    """Add a deb-src entry for this release's main archive when none is configured."""
    sources = [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        if re.search(r"^\s*deb-src\s|^Types:.*\bdeb-src\b", text, re.M):
            return
    if os.geteuid() != 0:
        raise SystemExit(
            "no deb-src entry in /etc/apt: add one (as root) or pass --llvm-src "
            f"with {SOURCE_PACKAGE}'s orig tarball"
        )
    release = "bookworm"
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            release = line.split("=", 1)[1].strip('"') or release
    entry = Path("/etc/apt/sources.list.d/stackmark-deb-src.sources")
    entry.write_text(
        "Types: deb-src\n"
        "URIs: http://deb.debian.org/debian\n"
        f"Suites: {release} {release}-updates\n"
        "Components: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    print(f"added {entry}; apt-get update ...", flush=True)
    subprocess.run(["apt-get", "update", "-qq"], check=True)


def fetch(llvm_src: Path | None) -> None:
    """Put LLVM's test files under TESTS (once)."""
    if _have_tests():
        return
    if llvm_src is not None:
        if llvm_src.is_file():
            _extract_from_tarball(llvm_src)
        elif (llvm_src / "llvm" / "test").is_dir():
            _copy_from_tree(llvm_src)
        elif (tarball := _orig_tarball(llvm_src)) is not None:
            _extract_from_tarball(tarball)
        else:
            raise SystemExit(f"{llvm_src}: neither an orig tarball nor a tree with llvm/test")
    else:
        downloads = BUILD / "apt"
        downloads.mkdir(parents=True, exist_ok=True)
        tarball = _orig_tarball(downloads)
        if tarball is None:
            _ensure_deb_src()
            print(f"apt-get source --download-only {SOURCE_PACKAGE} ...", flush=True)
            subprocess.run(
                ["apt-get", "source", "--download-only", "-qq", SOURCE_PACKAGE],
                cwd=downloads,
                check=True,
            )
            tarball = _orig_tarball(downloads)
            if tarball is None:
                raise SystemExit(f"apt-get source gave no orig tarball in {downloads}")
        _extract_from_tarball(tarball)
    if not _have_tests():
        raise SystemExit(f"LLVM's test files are not all in {TESTS} after fetching")


# -- one test -----------------------------------------------------------------------


@dataclass
class Result:
    group: str
    test: str  # path under llvm/test
    status: str  # PASS, FAIL, UNSUPPORTED
    detail: str = ""


def run_lines(text: str) -> list[str]:
    """The commands of a test's RUN: lines, continuation lines (`\\`) joined."""
    commands: list[str] = []
    pending = ""
    for line in text.splitlines():
        at = line.find("RUN:")
        if at < 0:
            continue
        part = line[at + 4 :].strip()
        if part.endswith("\\"):
            pending += part[:-1].strip() + " "
            continue
        commands.append(pending + part)
        pending = ""
    if pending:
        commands.append(pending.strip())
    return commands


def _keyword_items(text: str, keyword: str) -> list[str]:
    items: list[str] = []
    for match in re.finditer(rf"{keyword}:(.*)$", text, re.M):
        items += [item.strip() for item in match.group(1).split(",") if item.strip()]
    return items


def _holds(expression: str) -> bool:
    """A REQUIRES/UNSUPPORTED item: features joined by && and ||, possibly negated."""
    return any(
        all(
            (term.strip()[1:].strip() not in FEATURES)
            if term.strip().startswith("!")
            else (term.strip() in FEATURES)
            for term in alternative.split("&&")
        )
        for alternative in expression.split("||")
    )


def unsupported_reason(text: str) -> str | None:
    for item in _keyword_items(text, "REQUIRES"):
        if not _holds(item):
            return f"REQUIRES: {item}"
    for item in _keyword_items(text, "UNSUPPORTED"):
        if _holds(item):
            return f"UNSUPPORTED: {item}"
    return None


def substitute(command: str, source: Path, tmp: Path) -> str:
    """lit's substitutions for one test: %s, %S, %p, %t, %T (and %/x forms), %%."""
    table = {
        "s": str(source),
        "S": str(source.parent),
        "p": str(source.parent),
        "t": str(tmp),
        "T": str(tmp.parent),
    }

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        return table[match.group(1)]

    return re.sub(r"%%|%/?([sSptT])", replace, command)


def run_test(group: str, source: Path, env: dict[str, str], work: Path) -> Result:
    name = str(source.relative_to(TESTS))
    text = source.read_text(errors="surrogateescape")
    reason = unsupported_reason(text)
    if reason is not None:
        return Result(group, name, "UNSUPPORTED", reason)
    out_dir = work / name.replace("/", "_")
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    tmp = out_dir / f"{source.name}.tmp"
    for command in run_lines(text):
        command = substitute(command, source, tmp)
        try:
            proc = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=out_dir,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=600,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Result(group, name, "FAIL", f"$ {command}\n(timed out)")
        if proc.returncode != 0:
            detail = f"$ {command}\n(exit {proc.returncode})\n{proc.stdout}{proc.stderr}"
            return Result(group, name, "FAIL", detail)
    return Result(group, name, "PASS")


# -- the environment ------------------------------------------------------------------


def tool_directory() -> Path:
    """A directory with LLVM 19's utilities, and stackmark as llvm-symbolizer/-gsymutil."""
    tools = BUILD / "bin"
    shutil.rmtree(tools, ignore_errors=True)
    tools.mkdir(parents=True)
    for tool in LLVM_BIN.iterdir():
        if tool.name not in STOOD_IN:
            (tools / tool.name).symlink_to(tool)
    for name in STOOD_IN:
        script = tools / name
        script.write_text(
            f'#!/bin/sh\nexec "{sys.executable}" -m tests.conformance.llvm_stand_ins {name} "$@"\n'
        )
        script.chmod(0o755)
    return tools


def environment(tools: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEBUGINFOD_URLS"}
    env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["XDG_CACHE_HOME"] = str(BUILD / "cache")  # no GSYM cache entry from elsewhere
    env["LC_ALL"] = "C.UTF-8"
    return env


def tests_of(group: str) -> Iterator[Path]:
    seen: set[Path] = set()
    for pattern in GROUPS[group]:
        for found in sorted(glob.glob(str(TESTS / pattern))):
            path = Path(found)
            if path.name == "lit.local.cfg" or path in seen:
                continue
            if group == "gsym" and path.name == "cmdline.test":
                continue
            seen.add(path)
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--llvm-src",
        type=Path,
        default=os.environ.get("LLVM_SRC") or None,
        help="llvm-toolchain-19's orig tarball, a directory holding it, or an unpacked tree",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show why tests fail")
    parser.add_argument("filter", nargs="?", help="run only tests whose path matches this regex")
    args = parser.parse_args(argv)
    fetch(args.llvm_src)
    env = environment(tool_directory())
    work = BUILD / "run"
    results: list[Result] = []
    for group in GROUPS:
        for source in tests_of(group):
            if args.filter and not re.search(args.filter, str(source)):
                continue
            result = run_test(group, source, env, work)
            results.append(result)
            print(f"{result.status}: {group} :: {result.test}", flush=True)
            if args.verbose and result.status == "FAIL":
                print("    " + result.detail.rstrip().replace("\n", "\n    "), flush=True)
    print()
    for group in GROUPS:
        mine = [r for r in results if r.group == group]
        if not mine:
            continue
        passed = sum(r.status == "PASS" for r in mine)
        unsupported = sum(r.status == "UNSUPPORTED" for r in mine)
        extra = f", {unsupported} unsupported" if unsupported else ""
        print(f"{group}: {passed} of {len(mine) - unsupported} pass{extra}")
    return 1 if any(r.status == "FAIL" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
