"""Swift's stored form of a backtrace: Codable JSON carrying CBF and CIF in base64.

Swift's `Backtrace` encodes (Backtrace+Codable.swift) as a JSON object

    {"architecture": "x86_64", "backtrace": "<base64 CBF>", "imageMap": "<base64 CIF>"}

where `imageMap` is present only when the images are known. Swift's base64
(Base64.swift) writes the standard alphabet without `=` padding, and reads
leniently: `-`/`_` stand for `+`/`/`, reading stops at the first `=`, and
any other character (or a dangling single character) ends the data with
the bytes decoded so far.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

from stackmark.errors import FormatError

_URL_SAFE = str.maketrans("-_", "+/")
_BASE64_PREFIX = re.compile(r"[A-Za-z0-9+/_-]*")


def encode_base64(data: bytes) -> str:
    """Standard base64 without `=` padding, as Swift writes it."""
    return base64.b64encode(data).decode("ascii").rstrip("=")


@dataclass(frozen=True, slots=True)
class Base64Result:
    """Decoded bytes, and where decoding stopped early (index of the first
    character not used, other than `=` padding), or None."""

    data: bytes
    stopped_at: int | None


def decode_base64(text: str) -> Base64Result:
    """Decode base64 the way Swift does (never raises)."""
    used = _BASE64_PREFIX.match(text)
    end = used.end() if used else 0
    stopped_at = end if end < len(text) and text[end] != "=" else None
    body = text[:end].translate(_URL_SAFE)
    if len(body) % 4 == 1:  # a dangling character carries no whole byte
        stopped_at = end - 1 if stopped_at is None else stopped_at
        body = body[:-1]
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4))
    except binascii.Error:  # unreachable for the alphabet matched above; be safe
        return Base64Result(b"", 0)
    return Base64Result(data, stopped_at)


@dataclass(frozen=True, slots=True)
class SwiftBacktrace:
    """The three fields of Swift's Codable `Backtrace`."""

    architecture: str
    backtrace: bytes
    image_map: bytes | None = None

    def to_json(self) -> str:
        obj: dict[str, str] = {
            "architecture": self.architecture,
            "backtrace": encode_base64(self.backtrace),
        }
        if self.image_map is not None:
            obj["imageMap"] = encode_base64(self.image_map)
        return json.dumps(obj)

    @staticmethod
    def from_json(text: str, source: str | None = None) -> SwiftBacktrace:
        """Parse the JSON object; `FormatError` naming `source` when it is not one."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", source=source
            ) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("backtrace"), str):
            raise FormatError('expected an object with a "backtrace" string', source=source)
        architecture = obj.get("architecture", "")
        image_map = obj.get("imageMap")
        if not isinstance(architecture, str) or not (
            image_map is None or isinstance(image_map, str)
        ):
            raise FormatError('"architecture" and "imageMap" must be strings', source=source)
        return SwiftBacktrace(
            architecture,
            decode_base64(obj["backtrace"]).data,
            decode_base64(image_map).data if image_map is not None else None,
        )
