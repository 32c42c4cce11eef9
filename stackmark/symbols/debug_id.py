"""Breakpad debug IDs of ELF modules, and back (what Symbolication API v5 clients send).

Breakpad's `dump_syms` names an ELF module by a debug ID made from its GNU
build ID: the first 16 bytes (zero-padded when shorter) read as a GUID
whose first three fields are little-endian, printed as 32 upper-case hex
digits with those fields byte-swapped, then the age, always `0` for ELF:

    build ID  80ae0509 e7ce 335a e3cab61c274274de 96049b64...
    debug ID  0905AE80 CEE7 5A33 E3CAB61C274274DE 0

Only those 16 bytes survive, so a debug ID names a build ID by its prefix
(`build_id_prefix`); `stackmark.formats.breakpad.BreakpadModule.build_id`
undoes the same swap for a `.sym` file's MODULE record.
"""

from __future__ import annotations

import re

from stackmark.errors import StackmarkError

GUID_BYTES = 16
ELF_AGE = "0"

_DEBUG_ID = re.compile(r"[0-9A-Fa-f]{33,40}")
"""32 hex digits of GUID and an age of 1 to 8 hex digits (PDB ages can be large)."""


def _swap_guid(raw: bytes) -> bytes:
    """The GUID's first three fields byte-swapped (the operation is its own inverse)."""
    return raw[3::-1] + raw[5:3:-1] + raw[7:5:-1] + raw[8:]


def debug_id_from_build_id(build_id: str) -> str:
    """The Breakpad debug ID of an ELF module with `build_id` (hex)."""
    try:
        raw = bytes.fromhex(build_id)
    except ValueError:
        raise StackmarkError(f"build ID {build_id[:80]!r} is not hexadecimal bytes") from None
    if not raw:
        raise StackmarkError("an empty build ID has no debug ID")
    raw = raw[:GUID_BYTES].ljust(GUID_BYTES, b"\0")
    return _swap_guid(raw).hex().upper() + ELF_AGE


def is_debug_id(text: str) -> bool:
    """Whether `text` has the shape of a debug ID (GUID and age, hex)."""
    return _DEBUG_ID.fullmatch(text) is not None


def build_id_prefix(debug_id: str) -> str:
    """The first 16 bytes of the build ID (lower-case hex) that `debug_id` was made
    from; StackmarkError when it is not a debug ID."""
    if not is_debug_id(debug_id):
        raise StackmarkError(f"{debug_id[:80]!r} is not a debug ID (32 hex digits and an age)")
    return _swap_guid(bytes.fromhex(debug_id[:32])).hex()
