"""What the unwinder needs from a process: the `Target` protocol.

A target answers three questions: the registers of the innermost frame,
the bytes at an address, and the loaded modules. The GDB and LLDB adapters
implement it over a live process; `stackmark.unwind.core` implements it
over an ELF core file; tests implement it over recorded snapshots.
Registers are keyed by DWARF register number (`Arch.sp`, `Arch.fp`,
`Arch.ra`), the pc separately (AArch64 has no DWARF number for it).
A target may also offer `local_path(path) -> str`, where a file it names
is found on this machine (a core file's sysroot); the unwinder then reads
unwind tables from there.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from stackmark.errors import StackmarkError
from stackmark.model import Module, Segment
from stackmark.unwind_rules import Arch


class UnreadableMemory(StackmarkError):
    """A target has no bytes for (part of) an address range."""

    def __init__(self, address: int, size: int, reason: str = "cannot read memory"):
        self.address = address
        self.size = size
        super().__init__(f"{reason} at 0x{address:x} ({size} bytes)")


@dataclass(frozen=True, slots=True)
class RegisterState:
    """The pc and other registers (by DWARF number) of one frame."""

    pc: int
    values: Mapping[int, int]


class Target(Protocol):
    """A process (live or dead) the unwinder can walk."""

    @property
    def arch(self) -> Arch:
        """The architecture; decides register numbers and frame layouts."""
        ...

    def registers(self) -> RegisterState:
        """The registers of the innermost frame of the thread to unwind."""
        ...

    def read_memory(self, address: int, size: int) -> bytes:
        """`size` bytes at `address`; raises a `StackmarkError` (such as
        `UnreadableMemory`) when they cannot be read."""
        ...

    def modules(self) -> Sequence[Module]:
        """The loaded modules, with their mapped segments (runtime addresses)."""
        ...

    def code_address_mask(self) -> int | None:
        """AArch64: the bits that carry a pointer-authentication code in code
        addresses (NT_ARM_PAC_MASK, GDB's $pauth_cmask), or None if unknown."""
        ...


BYTE_ORDER: dict[Arch, str] = {Arch.AMD64: "<", Arch.AARCH64: "<", Arch.S390X: ">"}


def word_reader(target: Target) -> Callable[[int], int]:
    """A function reading one pointer-sized word of `target` at an address
    (raising like `Target.read_memory`)."""
    unpack = struct.Struct(BYTE_ORDER[target.arch] + "Q").unpack
    read_memory = target.read_memory

    def read(address: int) -> int:
        data = read_memory(address, 8)
        if len(data) != 8:
            raise UnreadableMemory(address, 8, f"short read ({len(data)} bytes)")
        value: int = unpack(data)[0]
        return value

    return read


class ModuleIndex:
    """Finds the module and segment holding an address (binary search)."""

    def __init__(self, modules: Sequence[Module]):
        entries = sorted(
            ((seg.start, seg, mod) for mod in modules for seg in mod.segments if seg.size > 0),
            key=lambda entry: entry[0],
        )
        self._starts = [entry[0] for entry in entries]
        self._entries = [(entry[1], entry[2]) for entry in entries]

        self._last: tuple[Module, Segment] | None = None

    def find(self, address: int) -> tuple[Module, Segment] | None:
        last = self._last  # consecutive frames are mostly in the same segment
        if last is not None and last[1].start <= address < last[1].start + last[1].size:
            return last
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0:
            segment, module = self._entries[i]
            if segment.contains(address):
                self._last = (module, segment)
                return self._last
        return None

    def is_code(self, address: int) -> bool:
        """True when `address` lies in an executable segment of some module."""
        found = self.find(address)
        return found is not None and "x" in found[1].mode


# DWARF register names, for output (`--json`) and messages.
REGISTER_NAMES: dict[Arch, dict[int, str]] = {
    Arch.AMD64: {
        **{i: name for i, name in enumerate(("rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp"))},
        7: "rsp",
        **{i: f"r{i}" for i in range(8, 16)},
        16: "rip",
    },
    Arch.AARCH64: {**{i: f"x{i}" for i in range(31)}, 31: "sp"},
    Arch.S390X: {i: f"r{i}" for i in range(16)},
}


def register_name(arch: Arch, number: int) -> str:
    return REGISTER_NAMES[arch].get(number, f"reg{number}")
