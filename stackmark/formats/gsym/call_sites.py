"""Call-site info (FunctionInfo InfoType 4, LLVM 20 and newer).

Payload:

    u32 count, then per call site:
      u64 return offset (from the function start)
      u8  flags (1 = InternalCall, 2 = ExternalCall)
      u32 regex count, then that many u32 string offsets (callee-name regexes)

LLVM uses these to tell merged functions apart; lookups ignore them.
"""

from __future__ import annotations

from stackmark.formats.gsym.codec import RecordCursor, Writer
from stackmark.plain import Record

INTERNAL_CALL, EXTERNAL_CALL = 1, 2


class CallSiteInfo(Record):
    """One call site: its return address as an offset into the function, its flags
    and the string offsets of the regular expressions that match its callees."""

    __slots__ = _fields = __match_args__ = ("return_offset", "flags", "match_regex")
    return_offset: int
    flags: int
    match_regex: list[int]

    def __init__(
        self, return_offset: int, flags: int = 0, match_regex: list[int] | None = None
    ) -> None:
        self.return_offset = return_offset
        self.flags = flags
        self.match_regex = [] if match_regex is None else match_regex

    def flags_text(self) -> str:
        """The flags as llvm-gsymutil prints them ("None", "InternalCall | ExternalCall")."""
        if self.flags == 0:
            return "None"
        names = []
        if self.flags & INTERNAL_CALL:
            names.append("InternalCall")
        if self.flags & EXTERNAL_CALL:
            names.append("ExternalCall")
        return " | ".join(names)


def decode_call_sites(cur: RecordCursor) -> list[CallSiteInfo]:
    count = cur.u32("missing CallSiteInfo count")
    sites = []
    for _ in range(count):
        return_offset = cur.u64("missing ReturnOffset")
        flags = cur.u8("missing Flags")
        n = cur.u32("missing MatchRegex count")
        if n * 4 > cur.remaining:
            raise cur.fail("missing MatchRegex entry")
        regex = [cur.u32("missing MatchRegex entry") for _ in range(n)]
        sites.append(CallSiteInfo(return_offset, flags, regex))
    return sites


def encode_call_sites(w: Writer, sites: list[CallSiteInfo]) -> None:
    w.u32(len(sites))
    for site in sites:
        w.u64(site.return_offset)
        w.u8(site.flags)
        w.u32(len(site.match_regex))
        for offset in site.match_regex:
            w.u32(offset)
