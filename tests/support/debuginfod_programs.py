"""Programs for the debuginfod tests, compiled at test time, and a served copy.

Three builds cover what a server can hold for a build ID:
- `alpha`: an unstripped binary (debuginfo and executable are one file);
- `split`: a stripped binary plus its `objcopy --only-keep-debug` file;
- `beta_stripped`: only a stripped binary (no debuginfo anywhere).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.build import REPO, SOURCES, build_id_of, compile_program, run
from tests.support.debuginfod_servers import server_environment

ODD_SOURCE_DIR = REPO / "build" / "test-fixtures" / "debuginfod-src" / "odd dir#1+2"
"""A fixed (so the compile cache stays valid) directory whose name needs
%-escaping in a source URL and escaping in elfutils' cache names."""


@dataclass(frozen=True)
class Build:
    name: str
    build_id: str
    executable: Path
    debuginfo: Path | None  # None: the server has no debuginfo for it
    source: Path


def build_programs() -> dict[str, Build]:
    alpha_src = SOURCES / "debuginfod_alpha.c"
    beta_src = SOURCES / "debuginfod_beta.c"
    alpha = compile_program("debuginfod_alpha", [alpha_src], flags=["-g", "-O2"])
    split = compile_program(
        "debuginfod_alpha_split",
        [alpha_src],
        flags=["-g", "-O1"],
        post=[
            ["objcopy", "--only-keep-debug", "{out}", "{out}.debug"],
            ["strip", "--strip-debug", "{out}"],
        ],
    )
    beta = compile_program(
        "debuginfod_beta_stripped",
        [beta_src],
        flags=["-g", "-O0"],
        post=[["strip", "--strip-all", "{out}"]],
    )
    ODD_SOURCE_DIR.mkdir(parents=True, exist_ok=True)
    odd_src = ODD_SOURCE_DIR / "beta copy+1.c"
    if not odd_src.exists() or odd_src.read_bytes() != beta_src.read_bytes():
        odd_src.write_bytes(beta_src.read_bytes())
    odd = compile_program("debuginfod_beta_odd", [odd_src], flags=["-g", "-O1"])
    builds = [
        Build("alpha", build_id_of(alpha), alpha, alpha, alpha_src),
        Build(
            "split", build_id_of(split), split, split.with_name(split.name + ".debug"), alpha_src
        ),
        Build("beta_stripped", build_id_of(beta), beta, None, beta_src),
        Build("odd", build_id_of(odd), odd, odd, odd_src),
    ]
    return {b.name: b for b in builds}


def populate(serve_dir: Path, builds: dict[str, Build]) -> Path:
    """Copy every build's files into `serve_dir` (what the server scans)."""
    serve_dir.mkdir(parents=True, exist_ok=True)
    for build in builds.values():
        shutil.copy2(build.executable, serve_dir / build.name)
        if build.debuginfo is not None and build.debuginfo != build.executable:
            shutil.copy2(build.debuginfo, serve_dir / f"{build.name}.debug")
    return serve_dir


def symbol_address(path: Path, name: str) -> int:
    """The value of symbol `name` in `path`, as nm prints it."""
    for line in run(["nm", "--defined-only", path]).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise KeyError(f"{name} not in {path}")


@dataclass(frozen=True)
class LogModule:
    """A module of a generated crash log: a build and the functions its frames are in."""

    build: Build | None  # None: a module no server has (`missing_id`)
    functions: tuple[str, ...] = ()
    offsets: tuple[int, ...] = ()  # raw module offsets, for builds without symbols
    missing_id: str = "ab" * 20


def crash_log(modules: list[LogModule], *, title: str = "crash") -> str:
    """A markup log: one context with every module mapped, then a backtrace with
    a frame in each listed function (a little past its start) and at each raw
    offset. Modules sit 256 MiB apart, each mapped rx from module offset 0."""
    lines = [f"[{title}] service started", "{{{reset}}}"]
    frames: list[int] = []
    for number, module in enumerate(modules):
        base = 0x7F0000000000 + number * 0x10000000
        build_id = module.build.build_id if module.build else module.missing_id
        name = module.build.name if module.build else "missing"
        lines.append(f"{{{{{{module:{number}:{name}:elf:{build_id}}}}}}}")
        lines.append(f"{{{{{{mmap:{base:#x}:0x10000:load:{number}:rx:0x0}}}}}}")
        if module.build is not None:
            symbols = module.build.debuginfo or module.build.executable
            frames += [base + symbol_address(symbols, f) + 4 for f in module.functions]
        frames += [base + offset for offset in module.offsets]
    lines.append(f"[{title}] SIGSEGV; backtrace:")
    lines += [f"{{{{{{bt:{i}:{address:#x}}}}}}}" for i, address in enumerate(frames)]
    lines.append(f"[{title}] done")
    return "\n".join(lines) + "\n"


def cli_environment(cache: Path, urls: str = "") -> dict[str, str]:
    """An environment for `stackmark`/`llvm-symbolizer-19` subprocesses: no
    proxies, no inherited debuginfod or cache settings, `cache` for downloads
    (and XDG_CACHE_HOME below it, so no test writes to the user's caches)."""
    env = server_environment()
    env["DEBUGINFOD_CACHE_PATH"] = str(cache)
    env["XDG_CACHE_HOME"] = str(cache.parent / f"{cache.name}-xdg")
    if urls:
        env["DEBUGINFOD_URLS"] = urls
    return env


def stackmark_cli(
    *args: str | Path, env: dict[str, str], stdin: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m stackmark ARGS` from the checkout; text in, text out."""
    return subprocess.run(
        [sys.executable, "-m", "stackmark", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def llvm_filter(
    log: str, *args: str | Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`llvm-symbolizer-19 --filter-markup ARGS` on `log`."""
    return subprocess.run(
        ["llvm-symbolizer-19", "--filter-markup", *map(str, args)],
        input=log,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
