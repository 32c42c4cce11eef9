"""binutils 2.44 (Debian trixie) and 2.47 (Debian sid), beside this machine's 2.40.

shared/tools/get-binutils.sh unpacks them without installing into
build/toolchains/bin-trixie and bin-sid (as, ld, objdump, readelf, objcopy,
and aarch64-* for the cross tools), once per checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.build import REPO

TOOLCHAINS = REPO / "build" / "toolchains"
SUITE_OF_RELEASE = {"2.44": "bin-trixie", "2.47": "bin-sid"}


def newer_binutils(toolchains: Path = TOOLCHAINS) -> Path:
    """The toolchains directory with bin-trixie and bin-sid, fetched on first use."""
    if (
        not (toolchains / "bin-sid" / "objdump").exists()
        or not (toolchains / "bin-trixie" / "objdump").exists()
    ):
        script = REPO.parent / "shared" / "tools" / "get-binutils.sh"
        if not script.exists():
            raise RuntimeError(f"{script} is missing: it fetches binutils 2.44/2.47")
        proc = subprocess.run(
            ["bash", str(script), str(toolchains)], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"get-binutils.sh failed:\n{proc.stdout}{proc.stderr}")
    return toolchains


def release_tool(release: str, tool: str, toolchains: Path = TOOLCHAINS) -> str:
    """The path of `tool` (as, ld, objdump, ...) of binutils `release` (2.40, 2.44, 2.47)."""
    if release == "2.40":  # this machine's: aarch64-objdump is aarch64-linux-gnu-objdump
        cross = tool.removeprefix("aarch64-")
        return tool if cross == tool else f"aarch64-linux-gnu-{cross}"
    return str(toolchains / SUITE_OF_RELEASE[release] / tool)
