"""An unwind row as one line of text: what the `sframe lookup` commands print.

    describe_row(row, Arch.AMD64)   # 'CFA = rsp+8; RA = *(CFA-8); FP = unchanged'

Shared by `stackmark sframe lookup` and the debuggers' `stackmark sframe`
command, so that both print the same line for the same row.
"""

from __future__ import annotations

from stackmark.unwind_rules import CFA, Arch, RuleKind, UnwindRow, ValueRule


def describe_row(row: UnwindRow, arch: Arch) -> str:
    """One line: CFA, RA and FP rules, and the row's flags."""
    if row.outermost:
        text = "outermost frame: the return address is undefined"
    else:
        cfa = f"{_register(row.cfa_register, arch)}{row.cfa_offset:+d}"
        if row.cfa_deref:
            cfa = f"*({cfa})"
        text = f"CFA = {cfa}; RA = {_rule(row.ra, arch)}; FP = {_rule(row.fp, arch)}"
    flags = [
        label
        for label, on in (
            ("RA signed (strip the PAC)", row.ra_mangled),
            ("signal frame", row.signal_frame),
        )
        if on
    ]
    return text + ("" if not flags else f" [{', '.join(flags)}]")


def _rule(rule: ValueRule, arch: Arch) -> str:
    base = "CFA" if rule.base == CFA else _register(rule.base, arch)
    if rule.kind is RuleKind.UNDEFINED:
        return "undefined"
    if rule.kind is RuleKind.SAME:
        return "unchanged"
    if rule.kind is RuleKind.AT:
        return f"*({base}{rule.offset:+d})"
    return f"{base}{rule.offset:+d}"


def _register(number: int, arch: Arch) -> str:
    if arch is Arch.AMD64:
        return _AMD64_REGISTERS[number] if number < len(_AMD64_REGISTERS) else f"dwarf{number}"
    if arch is Arch.AARCH64:
        return "sp" if number == 31 else f"x{number}"
    return f"r{number}"


_AMD64_REGISTERS = (
    ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp"]
    + [f"r{n}" for n in range(8, 16)]
    + ["rip"]
)
