"""Compile fixture programs at test time, once per distinct recipe.

Outputs are cached under build/test-fixtures/<hash of sources and flags>,
so a second `make test` reuses them; a changed source or flag rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "tests" / "fixtures" / "src"
CACHE = REPO / "build" / "test-fixtures"


def _recipe_key(parts: Sequence[str], inputs: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for path in inputs:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run(cmd: Sequence[str | os.PathLike[str]], cwd: Path | None = None) -> str:
    """Run a build command; raise with its output when it fails."""
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def compile_program(
    name: str,
    sources: Sequence[str | Path],
    *,
    compiler: str = "gcc",
    flags: Sequence[str] = ("-g", "-O0"),
    link_flags: Sequence[str] = (),
    shared: bool = False,
    post: Sequence[Sequence[str]] = (),
) -> Path:
    """Compile `sources` (names relative to tests/fixtures/src, or paths) into `name`.

    `post` lists commands run afterwards in the output directory; `{out}`
    in them is replaced by the output path (e.g. strip, objcopy).
    Returns the output path. Build IDs are always emitted.
    """
    src_paths = [Path(s) if Path(s).is_absolute() else SOURCES / s for s in sources]
    parts = [name, compiler, *flags, *link_flags, str(shared), *(" ".join(p) for p in post)]
    out_dir = CACHE / f"{name}-{_recipe_key(parts, src_paths)}"
    out = out_dir / name
    if out.exists():
        return out
    tmp_dir = out_dir.with_name(out_dir.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir(parents=True)
    target = tmp_dir / name
    cmd: list[str | Path] = [compiler, *flags, *src_paths, "-o", target, "-Wl,--build-id=sha1"]
    if shared:
        cmd[1:1] = ["-shared", "-fPIC"]
    cmd += list(link_flags)
    run(cmd, cwd=tmp_dir)
    for step in post:
        run([part.replace("{out}", str(target)) for part in step], cwd=tmp_dir)
    try:
        tmp_dir.rename(out_dir)
    except OSError:  # another process built it first
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return out


def build_id_of(path: Path) -> str:
    """The GNU build ID of an ELF file, as readelf prints it."""
    for line in run(["readelf", "-n", path]).splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    raise RuntimeError(f"{path} has no build ID")
