"""Programs for the debuginfod tests, compiled at test time, and a served copy.

Three builds cover what a server can hold for a build ID:
- `alpha`: an unstripped binary (debuginfo and executable are one file);
- `split`: a stripped binary plus its `objcopy --only-keep-debug` file;
- `beta_stripped`: only a stripped binary (no debuginfo anywhere).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.support.build import REPO, SOURCES, build_id_of, compile_program

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
