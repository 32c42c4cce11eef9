"""`stackmark unwinder`: unwind with SFrame inside GDB's own frame machinery.

GDB (up to 18 at least) cannot read `.sframe`; its Python unwinder API
lets a plugin claim frames. This `gdb.unwinder.Unwinder` claims a frame
when the module's SFrame table covers the frame's pc, and asks the core
`stackmark.unwind.unwinder.Unwinder` for one step: the frame's CFA and the
caller's pc, SP and FP, which become GDB's saved registers. It declines
(returns None, so GDB's DWARF, sigtramp and prologue unwinders run) for
everything else, and by default also for a pc that CFI covers (an FDE of
the module's `.eh_frame` or `.debug_frame`, in the binary or its debug
files: `stackmark.dwarf.cfi_ranges`), where GDB's own unwinding is right
and knows more registers than SFrame does; `--everywhere` claims those too.
The decision is per pc, not per module: a program built with
`-fno-asynchronous-unwind-tables -Wa,--gsframe` and stripped of its debug
sections keeps CFI only for crt's `_start` and the PLT.
`--from-cfi` gives modules without `.sframe` a table generated from their
CFI (and implies `--everywhere`: only modules with CFI get one).

Signal frames stay with GDB's sigtramp unwinder, which restores every
register from the kernel's `ucontext`. The unwinder still looks at the
trampoline as GDB walks past it, to learn which (pc, SP) the signal
interrupted: that frame's pc is exact and is looked up as is, not as a
return address (pc - 1). GDB 13's PendingFrame cannot tell us this.

Frame IDs are (CFA, function start): stable while the pc moves inside
the function, as stepping requires. In GDB 13 both must be `gdb.Value`s,
and saved registers must be values of the register's own type.
"""

from __future__ import annotations

import argparse
import os
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import gdb
import gdb.unwinder

from stackmark.debugger.backend import DebuggerBackend
from stackmark.debugger.command import Command, CommandParser
from stackmark.debugger.modules import loaded_modules
from stackmark.debugger.session import Session
from stackmark.debugger.sframe import UNREADABLE, sframe_table
from stackmark.dwarf.cfi_ranges import CfiRanges
from stackmark.elf import PT_GNU_SFRAME, ElfFile
from stackmark.errors import FormatError, StackmarkError
from stackmark.formats.sframe import SFrameTable
from stackmark.model import Module
from stackmark.unwind import sigframe
from stackmark.unwind.tables import NoTable, TableCache, UnwindTable
from stackmark.unwind.target import (
    BYTE_ORDER,
    REGISTER_NAMES,
    ModuleIndex,
    RegisterState,
    word_reader,
)
from stackmark.unwind.unwinder import BY_SFRAME, BY_SIGNAL, SP_FROM_CFA, FrameState, Unwinder
from stackmark.unwind_rules import CFA, Arch, RuleKind, UnwindRow, ValueRule
from stackmark_gdb.backend import PC_NAMES, UNSIGNED_64, GdbBackend
from stackmark_gdb.events import connect_once

UNWINDER_NAME = "stackmark-sframe"
LEFT_TO_GDB = "its frames are left to GDB's own unwinders"


@dataclass(frozen=True, slots=True)
class Policy:
    """Which frames the unwinder claims."""

    everywhere: bool = False  # also modules with CFI (GDB's DWARF unwinder)
    from_cfi: bool = False  # tables generated from CFI for modules without .sframe

    def describe(self) -> str:
        where = "every module with a table" if self.everywhere else "pcs no CFI covers"
        extra = "; tables generated from CFI where there is no .sframe" if self.from_cfi else ""
        return f"claims frames in {where}{extra}"


# -- the tables of the loaded modules ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModuleTable:
    """A module's SFrame table, the CFI ranges of its files, and whether the unwinder
    claims every pc the table covers (`everywhere`) or only those no CFI covers."""

    module: Module
    table: SFrameTable | None
    source: str  # "sframe v1", "generated from .eh_frame (v3)", or why there is none
    cfi: CfiRanges
    everywhere: bool

    @property
    def has_cfi(self) -> bool:
        return bool(self.cfi)

    def claims_at(self, lookup: int) -> bool:
        """Whether the unwinder claims a frame looked up at module-relative `lookup`."""
        return self.table is not None and (self.everywhere or not self.cfi.covers(lookup))

    @property
    def functions_without_cfi(self) -> int:
        """How many of the table's functions start where no CFI covers."""
        if self.table is None:
            return 0
        return sum(1 for fde in self.table.section.fdes if not self.cfi.covers(fde.start))

    def row(self, pc: int) -> UnwindRow | None:
        return self.table.row(pc) if self.table is not None else None


def _wanted_for(path: str, policy: Policy) -> bool:
    """Whether the unwinder may have frames to claim in the object file at `path`:
    it has SFrame (or, with `--from-cfi`, CFI) and, unless `--everywhere`, some
    function of its SFrame table is not covered by its CFI."""
    if not os.path.isfile(path):
        return True  # deleted or renamed since it was loaded: its table may be in memory
    try:
        with ElfFile.open(path) as elf:
            has_sframe = elf.section(".sframe") is not None or any(
                p.type == PT_GNU_SFRAME for p in elf.segments
            )
            if policy.everywhere:
                return has_sframe or (policy.from_cfi and bool(CfiRanges.from_elf(elf)))
            if not has_sframe:
                return False
            cfi = CfiRanges.from_elf(elf)
    except FormatError:
        return False
    if not cfi:
        return True
    try:
        table = SFrameTable.from_elf(path)
    except FormatError:
        return True  # the table will be read from memory (or reported) later
    return any(not cfi.covers(fde.start) for fde in table.section.fdes)


def _debug_files() -> dict[str, list[str]]:
    """realpath of an objfile -> the separate debug files GDB loaded for it."""
    found: dict[str, list[str]] = {}
    for objfile in gdb.objfiles():
        owner = objfile.owner
        if owner is not None and owner.filename:
            found.setdefault(os.path.realpath(owner.filename), []).append(objfile.filename)
    return found


def module_tables(
    modules: Sequence[Module], backend: DebuggerBackend, policy: Policy
) -> list[ModuleTable]:
    debug_files = _debug_files()
    result = []
    for module in modules:
        table, source = sframe_table(module, backend.read_memory, policy.from_cfi)
        path = module.path or ""
        files = [path, *debug_files.get(os.path.realpath(path), [])] if path else []
        # Only a module with a table needs its CFI (libc's alone is 4,000 FDEs).
        cfi = CfiRanges.from_files(files) if table is not None else CfiRanges([])
        result.append(ModuleTable(module, table, source, cfi, policy.everywhere))
    return result


# -- the process the unwinder works on --------------------------------------------------


class _Target:
    """The core unwinder's `Target` over the GDB inferior: memory and modules."""

    def __init__(self, arch: Arch, modules: Sequence[Module], backend: GdbBackend):
        self._arch = arch
        self._modules = modules
        self.read_memory = backend.read_memory

    @property
    def arch(self) -> Arch:
        return self._arch

    def registers(self) -> RegisterState:
        raise StackmarkError("the GDB unwinder steps one pending frame at a time")

    def modules(self) -> Sequence[Module]:
        return self._modules

    def code_address_mask(self) -> int | None:
        try:
            mask = gdb.parse_and_eval("$pauth_cmask")
        except gdb.error:
            return None
        return None if mask.type.code == gdb.TYPE_CODE_VOID else int(mask)


class _PendingRegisters(Mapping[int, int]):
    """A pending frame's registers by DWARF number, read only when asked for."""

    def __init__(self, frame: gdb.PendingFrame, names: Mapping[int, str]):
        self._frame = frame
        self._names = names

    def __getitem__(self, number: int) -> int:
        name = self._names.get(number)
        if name is None:
            raise KeyError(number)
        try:
            return int(self._frame.read_register(name)) & UNSIGNED_64
        except (gdb.error, ValueError):  # <not saved>, <unavailable>
            raise KeyError(number) from None

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _FrameId:
    """What GDB 13's create_unwind_info wants: .sp and .pc as gdb.Values."""

    __slots__ = ("pc", "sp")

    def __init__(self, sp: gdb.Value, pc: gdb.Value):
        self.sp = sp
        self.pc = pc


@dataclass(frozen=True, slots=True)
class _Claim:
    """A frame the unwinder claims: where its function starts and how to unwind it.

    Most rows say "CFA = SP or FP + n; RA and FP saved at CFA + k (or FP
    unchanged)". For those, `base` names the CFA register and the saved
    slots are read in one memory read of `span` bytes at CFA + `first`
    (RA at `ra_at` in it, FP at `fp_at`, or None for "unchanged"): the
    fewest calls into GDB per frame. Other rows (a dereferenced CFA, a
    mangled or register-held RA, ...) leave `base` None and go through the
    core unwinder's `step`.
    """

    function_start: gdb.Value
    row: UnwindRow
    base: str | None = None
    cfa_offset: int = 0
    first: int = 0
    span: int = 0
    ra_at: int = 0
    fp_at: int | None = None


def _simple_slots(row: UnwindRow, arch: Arch) -> tuple[int, int, int, int | None] | None:
    """(first, span, ra_at, fp_at) for a row the fast path handles, else None."""
    if row.cfa_deref or row.ra_mangled or row.outermost or row.signal_frame:
        return None
    if row.cfa_register not in (arch.sp, arch.fp) or SP_FROM_CFA[arch] != 0:
        return None
    ra, fp = row.ra, row.fp
    if ra.kind is not RuleKind.AT or ra.base != CFA:
        return None
    if fp.kind is RuleKind.SAME:
        return ra.offset, 8, 0, None
    if fp.kind is not RuleKind.AT or fp.base != CFA or abs(fp.offset - ra.offset) > 64:
        return None
    first = min(ra.offset, fp.offset)
    span = max(ra.offset, fp.offset) + 8 - first
    return first, span, ra.offset - first, fp.offset - first


class _Process:
    """One process layout: its tables, a core unwinder over them, and caches."""

    def __init__(self, arch: Arch, tables: list[ModuleTable], backend: GdbBackend):
        self.arch = arch
        self.tables = tables
        self.sp_number = arch.sp
        self.fp_number = arch.fp
        modules = [t.module for t in tables]
        self.target = _Target(arch, modules, backend)
        self.index = ModuleIndex(modules)
        self.by_module = {id(t.module): t for t in tables}

        def table_of(module: Module) -> UnwindTable | NoTable:
            found = self.by_module[id(module)]
            return found if found.table is not None else NoTable(found.source)

        self.unwinder = Unwinder(self.target, TableCache(table_of))
        self.read_word = word_reader(self.target)
        self.byte_order: Literal["little", "big"] = "little" if BYTE_ORDER[arch] == "<" else "big"
        self.names = REGISTER_NAMES[arch]
        self.pc_name = PC_NAMES[arch]
        self.sp_name = self.names[arch.sp]
        self.fp_name = self.names[arch.fp]
        self.claims: dict[tuple[int, bool], _Claim | None] = {}
        self.code: dict[int, bool] = {}  # return addresses seen: in loaded code?
        self.trampolines: dict[int, bool] = {}
        self.interrupted: set[tuple[int, int]] = set()  # (pc, SP) a signal interrupted
        self.inline_depths: dict[int, int] = {}
        self.claimed_pcs: dict[int, bool] = {}
        self.errors: dict[str, str] = {}  # module name -> why its rows could not be read
        self.inferior = gdb.selected_inferior()
        self.pc_type: gdb.Type | None = None
        self.sp_type: gdb.Type | None = None

    def claim(self, pc: int, precise: bool) -> _Claim | None:
        """How to unwind a frame at `pc` if the unwinder claims it, else None."""
        key = (pc, precise)
        if key in self.claims:
            return self.claims[key]
        claim: _Claim | None = None
        found = self.index.find(pc)
        if found is not None:
            module, segment = found
            table = self.by_module[id(module)]
            lookup = segment.to_module_relative(pc if precise else pc - 1)
            try:
                claimed = table.table is not None and table.claims_at(lookup)
                fde = table.table.find_fde(lookup) if claimed and table.table else None
                row = table.row(lookup) if fde is not None else None
            except StackmarkError as exc:  # a damaged FDE or FRE list, read lazily
                self.errors.setdefault(module.name, str(exc))
                fde = row = None
            if fde is not None and row is not None:
                start = gdb.Value(fde.start + module.load_bias)
                slots = _simple_slots(row, self.arch)
                if slots is None:
                    claim = _Claim(start, row)
                else:
                    base = self.sp_name if row.cfa_register == self.sp_number else self.fp_name
                    claim = _Claim(start, row, base, row.cfa_offset, *slots)
        self.claims[key] = claim
        return claim

    def may_claim(self, pc: int) -> bool:
        """Whether the unwinder may claim a frame at `pc` (its module has a table, and
        no CFI covers `pc` or the byte before it, unless it claims everywhere)."""
        known = self.claimed_pcs.get(pc)
        if known is None:
            found = self.index.find(pc)
            known = False
            if found is not None:
                module, segment = found
                table = self.by_module[id(module)]
                lookup = segment.to_module_relative(pc)
                known = table.claims_at(lookup) or table.claims_at(lookup - 1)
            self.claimed_pcs[pc] = known
        return known

    def inline_depth(self, pc: int) -> int:
        """How many inlined calls the debug info has at `pc` (0 without debug info).

        A frame whose younger frames are all inline frames (stopped in inlined
        code: GDB lists the inlined calls at levels 0 to n-1, the function they
        were inlined into at level n) has the exact pc of the stop, like frame 0,
        and must be looked up at it, not at pc - 1: at the first instruction of
        an inlined block right after a stack adjustment, pc - 1 is in another row.
        So a frame at level n <= the inline depth at its pc is precise (a return
        address has a normal frame among its younger ones: level > depth).
        """
        depth = self.inline_depths.get(pc)
        if depth is None:
            depth = 0
            try:
                block = gdb.block_for_pc(pc)
                while block is not None and not block.is_global and not block.is_static:
                    if block.function is not None:
                        depth += 1
                    block = block.superblock
            except (gdb.error, RuntimeError):
                depth = 1
            self.inline_depths[pc] = depth = max(depth - 1, 0)  # the concrete function
        return depth

    def is_code(self, address: int) -> bool:
        known = self.code.get(address)
        if known is None:
            known = self.code[address] = self.index.is_code(address)
        return known

    def is_trampoline(self, pc: int) -> bool:
        known = self.trampolines.get(pc)
        if known is None:
            known = sigframe.is_sigreturn_trampoline(self.target, self.arch, pc)
            self.trampolines[pc] = known
        return known

    def note_interrupted(self, trampoline_sp: int) -> None:
        """Remember the (pc, SP) of the frame a signal interrupted."""
        int32 = struct.Struct(BYTE_ORDER[self.arch] + "i")

        def read_int32(address: int) -> int:
            value: int = int32.unpack(self.target.read_memory(address, 4))[0]
            return value

        try:
            context = sigframe.interrupted_context(
                self.arch, trampoline_sp, self.read_word, read_int32
            )
        except StackmarkError:
            return
        self.note_precise(FrameState(context.registers.pc, context.registers.values, True))

    def note_precise(self, frame: FrameState) -> None:
        sp = frame.registers.get(self.sp_number)
        if sp is not None:
            self.interrupted.add((frame.pc, sp))

    def problems(self, policy: Policy) -> list[str]:
        """The tables the unwinder needed and could not read (whole, or some rows)."""
        found = []
        for table in self.tables:
            if table.table is None and table.source.startswith(UNREADABLE):
                found.append(f"{table.module.name}: SFrame {table.source}; {LEFT_TO_GDB}")
        for name, error in self.errors.items():
            found.append(f"{name}: SFrame unreadable: {error}; {LEFT_TO_GDB}")
        return found


# -- the GDB unwinder -----------------------------------------------------------------


class SFrameUnwinder(gdb.unwinder.Unwinder):  # type: ignore[misc]
    """Claims frames that SFrame covers (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(UNWINDER_NAME)
        self.policy = Policy()
        self.frames_unwound = 0
        self.last_error = ""
        self._backend = GdbBackend()
        self._process: _Process | None = None
        self._building = False

    def forget(self) -> None:
        """Drop the process layout (object files came or went, the process changed)."""
        self._process = None

    def problems(self) -> list[str]:
        """What `stackmark bt` warns about: tables the unwinder could not read."""
        process = self._process
        return process.problems(self.policy) if process is not None and self.enabled else []

    def resumed(self) -> None:
        """The inferior runs again: the frames it had, signal frames included, are gone."""
        if self._process is not None:
            self._process.interrupted.clear()

    def process(self) -> _Process | None:
        """The current layout, built on first use; None without a process.

        GDB events (object files, exits, inferiors) drop it: checking the
        layout on every frame would cost more than unwinding the frame.
        """
        process = self._process
        if process is not None:
            return process
        if self._building or not self._backend.has_process():
            return None
        self._building = True
        try:
            arch = self._backend.arch()
            modules = loaded_modules(self._backend)
            tables = module_tables(modules, self._backend, self.policy)
            process = _Process(arch, tables, self._backend)
        finally:
            self._building = False
        self._process = process
        return process

    def __call__(self, pending_frame: gdb.PendingFrame) -> gdb.UnwindInfo | None:
        try:
            return self._unwind(pending_frame)
        except Exception as exc:  # a bug here must never break GDB's own unwinding
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None

    def _unwind(self, pending: gdb.PendingFrame) -> gdb.UnwindInfo | None:
        process = self._process or self.process()
        if process is None:
            return None
        pc_value = pending.read_register(process.pc_name)
        pc = int(pc_value) & UNSIGNED_64
        level = pending.level()
        precise = level == 0
        if not precise and process.may_claim(pc):
            precise = level <= process.inline_depth(pc)
        if not precise and process.interrupted:
            sp = int(pending.read_register(process.sp_name)) & UNSIGNED_64
            precise = (pc, sp) in process.interrupted
        claim = process.claims.get((pc, precise), _UNKNOWN)
        if claim is _UNKNOWN:
            claim = process.claim(pc, precise)
        if claim is None:
            if process.is_trampoline(pc):
                sp = int(pending.read_register(process.sp_name)) & UNSIGNED_64
                process.note_interrupted(sp)
            return None
        if process.pc_type is None:
            process.pc_type = pc_value.type
            process.sp_type = pending.read_register(process.sp_name).type
        if claim.base is None:
            info = self._unwind_by_core(pending, process, claim, pc, precise)
        else:
            info = self._unwind_simple(pending, process, claim)
        if info is not None:
            self.frames_unwound += 1
        return info

    @staticmethod
    def _unwind_simple(
        pending: gdb.PendingFrame, process: _Process, claim: _Claim
    ) -> gdb.UnwindInfo | None:
        """The fast path (see `_Claim`)."""
        base = pending.read_register(claim.base)
        if base.is_optimized_out:
            return None
        cfa = (int(base) & UNSIGNED_64) + claim.cfa_offset
        try:
            block = bytes(process.inferior.read_memory(cfa + claim.first, claim.span))
        except (gdb.MemoryError, gdb.error):
            return None
        ra_bytes = block[claim.ra_at : claim.ra_at + 8]
        ra = int.from_bytes(ra_bytes, process.byte_order)
        if ra == 0 or not process.is_code(ra):
            return None  # the core unwinder stops here; GDB's unwinders may know better
        if claim.fp_at is None:
            fp = pending.read_register(process.fp_name)  # unchanged, unless it is not known
        else:
            fp = gdb.Value(block[claim.fp_at : claim.fp_at + 8], process.sp_type)
        cfa_value = gdb.Value(cfa).cast(process.sp_type)
        info = pending.create_unwind_info(_FrameId(cfa_value, claim.function_start))
        info.add_saved_register(process.pc_name, gdb.Value(ra_bytes, process.pc_type))
        info.add_saved_register(process.sp_name, cfa_value)
        if not fp.is_optimized_out:
            info.add_saved_register(process.fp_name, fp)
        return info

    @staticmethod
    def _unwind_by_core(
        pending: gdb.PendingFrame, process: _Process, claim: _Claim, pc: int, precise: bool
    ) -> gdb.UnwindInfo | None:
        """Any other row: one step of the core unwinder."""
        registers = _PendingRegisters(pending, process.names)
        step = process.unwinder.step(FrameState(pc, registers, precise))
        caller = step.caller
        if step.method == BY_SIGNAL and caller is not None:
            process.note_precise(caller)  # a signal-frame FDE: GDB's sigtramp unwinder restores it
            return None
        if step.method != BY_SFRAME or caller is None or step.cfa is None:
            return None
        sp_type, pc_type = process.sp_type, process.pc_type
        cfa_value = gdb.Value(step.cfa).cast(sp_type)
        info = pending.create_unwind_info(_FrameId(cfa_value, claim.function_start))
        info.add_saved_register(process.pc_name, gdb.Value(caller.pc).cast(pc_type))
        caller_sp = caller.registers.get(process.sp_number)
        if caller_sp is not None:
            info.add_saved_register(process.sp_name, gdb.Value(caller_sp).cast(sp_type))
        caller_fp = caller.registers.get(process.fp_number)
        if caller_fp is not None:
            info.add_saved_register(process.fp_name, gdb.Value(caller_fp).cast(sp_type))
        return info


_UNKNOWN = _Claim(gdb.Value(0), UnwindRow(0, 0, 0, 0, ValueRule.undefined(), ValueRule.same()))
"""`claims.get` default meaning "not looked up yet" (None means "not ours")."""

_UNWINDER: SFrameUnwinder | None = None


def the_unwinder() -> SFrameUnwinder:
    global _UNWINDER
    if _UNWINDER is None:
        _UNWINDER = SFrameUnwinder()
    return _UNWINDER


_WANTED: dict[tuple[str, int, int, Policy], bool] = {}
"""(object file, its mtime and size, policy) -> `_wanted_for`."""


def is_needed() -> bool:
    """Whether some loaded object file may have frames for the unwinder."""
    policy = the_unwinder().policy
    for objfile in gdb.objfiles():
        if objfile.owner is not None or not objfile.is_valid() or not objfile.is_file:
            continue
        path = objfile.filename
        try:
            stat = os.stat(path)
            key = (path, stat.st_mtime_ns, stat.st_size, policy)
        except OSError:
            key = (path, 0, 0, policy)
        wanted = _WANTED.get(key)
        if wanted is None:
            wanted = _WANTED[key] = _wanted_for(path, policy)
        if wanted:
            return True
    return False


def sync_registration() -> None:
    """Keep the unwinder registered exactly while it is on and has something to do.

    GDB calls into Python for every frame it unwinds as long as any Python
    unwinder is registered, even a disabled one; unregistered, the plugin
    costs GDB's own unwinding nothing.
    """
    unwinder = the_unwinder()
    wanted = unwinder.enabled and is_needed()
    registered = unwinder in gdb.frame_unwinders
    if wanted and not registered:
        gdb.unwinder.register_unwinder(None, unwinder, replace=True)
    elif registered and not wanted:
        gdb.frame_unwinders.remove(unwinder)
    if wanted != registered:
        gdb.invalidate_cached_frames()


def install_unwinder() -> None:
    """Connect the unwinder's events and register it if it has work (see sync_registration)."""
    connect_once(_objfiles_changed, gdb.events.new_objfile, gdb.events.clear_objfiles)
    connect_once(_forget, gdb.events.exited, gdb.events.new_inferior, gdb.events.inferior_deleted)
    connect_once(_resumed, gdb.events.cont)
    for old in [u for u in gdb.frame_unwinders if u.name == UNWINDER_NAME]:
        gdb.frame_unwinders.remove(old)  # a copy from an earlier load of the plugin
    sync_registration()


def _objfiles_changed(_event: object) -> None:
    the_unwinder().forget()
    sync_registration()


def _forget(_event: object) -> None:
    the_unwinder().forget()


def _resumed(_event: object) -> None:
    the_unwinder().resumed()


# -- `stackmark unwinder on|off|status` ----------------------------------------------


def _configure(parser: CommandParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=("on", "off", "status"),
        default="status",
        help="turn the SFrame unwinder on or off, or show what it does (default)",
    )
    parser.add_argument(
        "--everywhere",
        action="store_true",
        help="with on: also claim frames whose pc CFI (.eh_frame, .debug_frame) covers, "
        "which GDB unwinds itself otherwise",
    )
    parser.add_argument(
        "--from-cfi",
        action="store_true",
        help="with on: generate SFrame from the CFI of modules that have no .sframe section "
        "and unwind them with it (implies --everywhere: those modules have CFI, so GDB "
        "would unwind them itself otherwise)",
    )


def _run(session: Session, args: argparse.Namespace) -> Iterable[str]:
    unwinder = the_unwinder()
    if args.action != "status":
        unwinder.enabled = args.action == "on"
        if unwinder.enabled:
            unwinder.policy = Policy(args.everywhere or args.from_cfi, args.from_cfi)
        unwinder.forget()
        sync_registration()
        gdb.invalidate_cached_frames()
    return _status(unwinder)


def _status(unwinder: SFrameUnwinder) -> Iterator[str]:
    if not unwinder.enabled:
        state = "off"
    elif unwinder in gdb.frame_unwinders:
        state = "on"
    else:
        state = "on, idle: no loaded module has frames for it"
    yield f"stackmark SFrame unwinder: {state}; {unwinder.policy.describe()}"
    yield f"frames unwound: {unwinder.frames_unwound}"
    if unwinder.last_error:
        yield f"last error: {unwinder.last_error}"
    process = unwinder.process() if unwinder.enabled else None
    if process is None:
        return
    for problem in process.problems(unwinder.policy):
        yield f"problem: {problem}"
    width = max((len(t.module.name) for t in process.tables), default=0)
    for table in process.tables:
        yield f"  {table.module.name:<{width}}  {table.source}; {_role(table)}"


def _role(table: ModuleTable) -> str:
    """Who unwinds a module's frames, as `stackmark unwinder status` says it."""
    if table.table is None:
        return "unwound by GDB"
    if table.everywhere or not table.has_cfi:
        return "unwound by stackmark"
    uncovered = table.functions_without_cfi
    total = len(table.table.section.fdes)
    if uncovered == 0:
        return "unwound by GDB (CFI covers every function)"
    return (
        f"unwound by stackmark where no CFI covers the pc ({uncovered} of {total} functions), "
        "by GDB elsewhere"
    )


UNWINDER_COMMAND = Command(
    words=("unwinder",),
    summary="Turn the SFrame unwinder on or off, or show its status.",
    description=(
        "The unwinder unwinds frames with the .sframe sections of the loaded modules where\n"
        "GDB cannot: at pcs no .eh_frame/.debug_frame entry covers (by default), or\n"
        "wherever an SFrame table covers the pc (--everywhere). It is on when stackmark\n"
        "is loaded."
    ),
    configure=_configure,
    run=_run,
)
