"""Build IDs as they arrive from logs, checked before they name anything.

A build ID read from a log is untrusted text: it becomes part of a file
path (`.build-id/xx/rest.debug`, a cache directory) and of a URL
(`/buildid/ID/debuginfo`). This module is the one place that turns such
text into a safe, canonical build ID: lower-case hexadecimal, an even
number of digits, of a sane length. Nothing else in stackmark should build
a path or URL from a build ID that has not been through `validate_build_id`.
"""

from __future__ import annotations

from stackmark.errors import StackmarkError

MIN_BUILD_ID_BYTES = 1
MAX_BUILD_ID_BYTES = 64
"""GNU build IDs are 8 (xxhash), 16 (md5/uuid) or 20 (sha1) bytes; tools
such as `ld --build-id=0x...` allow any length, so accept up to 64 bytes
(elfutils' client has the same limit)."""

_HEX_DIGITS = frozenset("0123456789abcdef")


class InvalidBuildIdError(StackmarkError):
    """Text that cannot be a build ID (not hex, odd length, too long)."""


def validate_build_id(text: str) -> str:
    """The canonical (lower-case hex) build ID for `text`, or InvalidBuildIdError.

    Accepts upper or lower case; rejects everything else, including
    separators, whitespace, `..` and `/`, so the result is safe to use as a
    path component or URL segment.
    """
    canonical = text.lower()
    if not canonical:
        raise InvalidBuildIdError("empty build ID")
    if not _HEX_DIGITS.issuperset(canonical):
        raise InvalidBuildIdError(f"build ID {_shown(text)} is not hexadecimal")
    if len(canonical) % 2:
        raise InvalidBuildIdError(f"build ID {_shown(text)} has an odd number of hex digits")
    if not MIN_BUILD_ID_BYTES <= len(canonical) // 2 <= MAX_BUILD_ID_BYTES:
        raise InvalidBuildIdError(
            f"build ID {_shown(text)} is {len(canonical) // 2} bytes long "
            f"(at most {MAX_BUILD_ID_BYTES})"
        )
    return canonical


def is_valid_build_id(text: str) -> bool:
    """True when `validate_build_id(text)` would succeed."""
    try:
        validate_build_id(text)
    except InvalidBuildIdError:
        return False
    return True


def build_id_debug_relpath(build_id: str, suffix: str = ".debug") -> str:
    """`.build-id/xx/rest<suffix>`: where a debug-file directory keeps a build ID.

    `build_id` is validated here, so the result never leaves the directory
    it is joined to.
    """
    canonical = validate_build_id(build_id)
    if len(canonical) < 4:
        # Needs at least one byte after the two-digit directory name.
        raise InvalidBuildIdError(f"build ID {canonical} is too short for a .build-id path")
    return f".build-id/{canonical[:2]}/{canonical[2:]}{suffix}"


def _shown(text: str, limit: int = 80) -> str:
    """`text` quoted for an error message, shortened if a log gave us a huge field."""
    shown = text if len(text) <= limit else text[:limit] + "..."
    return repr(shown)
