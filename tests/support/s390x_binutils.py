"""binutils 2.47 for s390x (Debian sid's binutils-s390x-linux-gnu), beside the
x86-64/AArch64 ones that shared/tools/get-binutils.sh unpacks.

SFrame for s390x came with binutils 2.45, so only sid's assembler writes it
and only sid's objdump prints it. The package is fetched with the private
apt configuration get-binutils.sh left in TOOLCHAINS/apt, at the version of
the libbinutils already unpacked in TOOLCHAINS/root-sid (it needs that
library), and run through the same ld.so wrappers.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from urllib.parse import unquote

TOOLS = ("as", "ld", "objdump", "objcopy", "readelf")
PACKAGE = "binutils-s390x-linux-gnu"


def s390x_binutils(toolchains: Path) -> Path:
    """TOOLCHAINS/bin-sid-s390x with as, ld, objdump, objcopy and readelf for s390x
    (fetched once)."""
    out = toolchains / "bin-sid-s390x"
    if all((out / tool).exists() for tool in TOOLS):
        return out
    debs = toolchains / "debs-sid"
    libbinutils = sorted(debs.glob("libbinutils_*_amd64.deb"))
    if not libbinutils:
        raise RuntimeError(f"no libbinutils in {debs}: run shared/tools/get-binutils.sh first")
    version = unquote(libbinutils[-1].name.split("_")[1])
    apt = toolchains / "apt"
    options = [
        f"-oDir::Etc::SourceList={apt / 'sources.list'}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
    ]
    fetched = subprocess.run(
        ["apt-get", *options, "download", f"{PACKAGE}={version}"],
        cwd=debs,
        capture_output=True,
        text=True,
        check=False,
    )
    if fetched.returncode != 0:
        raise RuntimeError(
            f"cannot fetch {PACKAGE} {version} (the version of {libbinutils[-1].name}): "
            f"{fetched.stderr.strip()}\nDelete {toolchains} and run the tests again: "
            "get-binutils.sh then fetches a matching set."
        )
    root = toolchains / "root-sid"
    for deb in debs.glob(f"{PACKAGE}_*_amd64.deb"):
        subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
    out.mkdir(exist_ok=True)
    libraries = f"{root}/usr/lib/x86_64-linux-gnu:{root}/lib/x86_64-linux-gnu"
    for tool in TOOLS:
        wrapper = out / tool
        wrapper.write_text(
            "#!/bin/sh\n"
            f"# Debian sid's s390x-linux-gnu-{tool}, with its own glibc/ld.so\n"
            f"exec {root}/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "
            f'--library-path {libraries} {root}/usr/bin/s390x-linux-gnu-{tool} "$@"\n'
        )
        wrapper.chmod(0o755)
    return out
