"""Field syntax of symbolizer markup, exactly as llvm-symbolizer 19 accepts it.

Each reader returns the value, or None when the field is malformed (the
caller then reports `expected <what>; found '<field>'`). The rules, as
LLVM 19's llvm/lib/DebugInfo/Symbolize/MarkupFilter.cpp applies them:

* `%p` address: `0x` + hex digits (any case, at most 64 bits); a string of
  only `0`s is accepted without `0x`.
* `%i` module ID and mmap size: C-style radix (`0x`/`0X` hex, `0b` binary,
  `0o` or a leading `0` octal, else decimal).
* frame number: decimal only.
* build ID: hex digits, any case; an odd count gets a leading zero.
* mode: `r`, `w`, `x` in that order, each optional, at least one.
* PC type: exactly `ra` or `pc`.
"""

from __future__ import annotations

import re

U64_MASK = (1 << 64) - 1


_DIGITS = {
    2: re.compile("[01]+"),
    8: re.compile("[0-7]+"),
    10: re.compile("[0-9]+"),
    16: re.compile("[0-9a-fA-F]+"),
}


def parse_unsigned(text: str, radix: int) -> int | None:
    """The whole of `text` as an unsigned 64-bit integer in `radix` (0: C-style prefix).

    Mirrors the rules of LLVM's StringRef::getAsInteger: no sign, no
    surrounding space, no digit outside the radix, no overflow. (Python's
    int() alone would also take signs, blanks, underscores and non-ASCII
    digits, hence the pattern check first.)
    """
    if radix == 0:
        radix = 10
        lower = text[:2].lower()
        if lower == "0x":
            radix, text = 16, text[2:]
        elif lower == "0b":
            radix, text = 2, text[2:]
        elif text.startswith("0o"):
            radix, text = 8, text[2:]
        elif len(text) > 1 and text[0] == "0" and "0" <= text[1] <= "9":
            radix, text = 8, text[1:]
    if not _DIGITS[radix].fullmatch(text):
        return None
    significant = text.lstrip("0") or "0"
    if len(significant) > 64:  # more than 64 bits in any radix
        return None
    value = int(significant, radix)
    return value if value <= U64_MASK else None


def parse_address(text: str) -> int | None:
    """`%p`: 0x-prefixed hex, or all zeros."""
    if not text:
        return None
    if text.strip("0") == "":
        return 0
    if not text.startswith("0x"):
        return None
    return parse_unsigned(text[2:], 16)


def parse_module_id(text: str) -> int | None:
    """`%i` module ID (also used for mmap sizes)."""
    return parse_unsigned(text, 0)


parse_size = parse_module_id


def parse_frame_number(text: str) -> int | None:
    """`bt` frame number: decimal only."""
    return parse_unsigned(text, 10)


_HEX = frozenset("0123456789abcdefABCDEF")


def parse_build_id(text: str) -> str | None:
    """`%x` build ID, normalised to lower-case hex of whole bytes."""
    if not text or not all(c in _HEX for c in text):
        return None
    text = text.lower()
    return "0" + text if len(text) % 2 else text


def parse_mode(text: str) -> str | None:
    """mmap mode: optional r, w, x in that order (any case), at least one letter."""
    if not text:
        return None
    rest = text.lower()
    for letter in "rwx":
        if rest.startswith(letter):
            rest = rest[1:]
    return None if rest else text.lower()


def parse_pc_type(text: str) -> str | None:
    """`ra` (return address) or `pc` (precise code location)."""
    return text if text in ("ra", "pc") else None


def parse_hex_value(text: str) -> int | None:
    """A hexdict value: one or more `0` digits, or `0x` followed by hex digits."""
    if text and text.strip("0") == "":
        return 0
    if text.startswith("0x") and len(text) > 2:
        return parse_unsigned(text[2:], 16)
    return None
