"""A `Target` over an ELF core file (Linux, AMD64 and AArch64): unwinding without a debugger.

What a Linux core holds (kernel `fs/binfmt_elf.c`, GDB's `gcore`):

- `NT_PRSTATUS`, one per thread, the crashing (or selected) thread first:
  `struct elf_prstatus`; signal number at +0 (si_signo) and +12
  (pr_cursig), thread ID at +32, the general registers at +112
  (AMD64: `user_regs_struct`, r15 ... gs; AArch64: x0-x30, sp, pc, pstate).
- `NT_FILE`: the file-backed mappings: count, page size, then (start, end,
  file offset in pages) per mapping, then their paths, NUL-terminated.

Each of these records, and the dynamic linker's `r_debug` and `link_map`
read from a core without NT_FILE, is declared once below with the field
names of its public source (`PRSTATUS_COMMON`, ...; the ELF records,
Elf64_Dyn and Elf64_auxv_t among them, are `stackmark.elf`'s).
- `NT_AUXV`: the auxiliary vector (AT_SYSINFO_EHDR locates the vDSO,
  AT_ENTRY the executable's entry point).
- `NT_ARM_PAC_MASK` (AArch64): the pointer-authentication masks.
- `PT_LOAD`s: memory. Read-only file-backed mappings (program text) are
  usually left out, or only their first page kept (`coredump_filter`), so
  such bytes are read from the files that `NT_FILE` names, when present
  (under `sysroot` if given) and when their build ID matches the core's.

Modules are the ELF files of `NT_FILE` (and the vDSO), their layout and
build ID read from their headers in the core's memory (falling back to the
files); segments are their PT_LOADs rounded out to pages, as markup
emitters describe them.
"""

from __future__ import annotations

import bisect
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass

from stackmark.binary import U64, RecordLayout
from stackmark.elf import (
    EI_CLASS,
    EI_DATA,
    EI_NIDENT,
    ELF64_AUXV,
    ELF64_DYN,
    ELF64_EHDR,
    ELF64_PHDR,
    ELFCLASS64,
    ELFDATA2LSB,
    ELFMAG,
    EM_AARCH64,
    EM_X86_64,
    ET_CORE,
    NT_AUXV,
    NT_FILE,
    NT_GNU_BUILD_ID,
    NT_PRSTATUS,
    PT_DYNAMIC,
    PT_LOAD,
    PT_NOTE,
    ElfFile,
    ProgramHeader,
    iter_notes,
)
from stackmark.errors import FormatError, StackmarkError
from stackmark.model import Module, Segment
from stackmark.unwind.target import RegisterState, UnreadableMemory
from stackmark.unwind_rules import Arch

NT_ARM_PAC_MASK = 0x406
AT_PHDR, AT_PAGESZ, AT_ENTRY, AT_EXECFN, AT_SYSINFO_EHDR = 3, 6, 9, 31, 33
DT_NULL, DT_DEBUG = 0, 21
PT_PHDR = 6
MAX_LINK_MAP = 4096
MAX_HEADERS = 1 << 16  # ELF header + program headers of a module, at most

# -- the records of a 64-bit Linux core (little-endian, LP64) --------------------------

# The kernel's struct elf_prstatus (include/linux/elfcore.h: elf_prstatus_common,
# pr_info being struct elf_siginfo), up to pr_reg, which follows it.
PRSTATUS_COMMON = RecordLayout(
    "elf_prstatus_common",
    ("pr_info.si_signo", "i"),
    ("pr_info.si_code", "i"),
    ("pr_info.si_errno", "i"),
    ("pr_cursig", "h"),
    ("(padding before pr_sigpend)", "2x"),
    ("pr_sigpend", "Q"),
    ("pr_sighold", "Q"),
    ("pr_pid", "i"),
    ("pr_ppid", "i"),
    ("pr_pgrp", "i"),
    ("pr_sid", "i"),
    ("pr_utime.tv_sec", "q"),
    ("pr_utime.tv_usec", "q"),
    ("pr_stime.tv_sec", "q"),
    ("pr_stime.tv_usec", "q"),
    ("pr_cutime.tv_sec", "q"),
    ("pr_cutime.tv_usec", "q"),
    ("pr_cstime.tv_sec", "q"),
    ("pr_cstime.tv_usec", "q"),
)
# pr_reg (elf_gregset_t) by architecture: AMD64's struct user_regs_struct
# (the kernel's arch/x86/include/asm/user_64.h, glibc's sys/user.h) and
# AArch64's struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h).
AMD64_USER_REGS = RecordLayout(
    "user_regs_struct (x86_64)",
    *(
        (name, "Q")
        for name in (
            "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
            "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
            "fs_base", "gs_base", "ds", "es", "fs", "gs",
        )
    ),
)  # fmt: skip
AARCH64_USER_PT_REGS = RecordLayout(
    "user_pt_regs (arm64)",
    *((f"regs[{i}]", "Q") for i in range(31)),
    ("sp", "Q"),
    ("pc", "Q"),
    ("pstate", "Q"),
)
# NT_ARM_PAC_MASK's struct user_pac_mask (arch/arm64/include/uapi/asm/ptrace.h).
USER_PAC_MASK = RecordLayout("user_pac_mask", ("data_mask", "Q"), ("insn_mask", "Q"))
# NT_FILE as the kernel writes it (fs/binfmt_elf.c, fill_files_note): a header,
# `count` entries (file_ofs in units of page_size), then `count` NUL-terminated paths.
NT_FILE_HEADER = RecordLayout("NT_FILE header", ("count", "Q"), ("page_size", "Q"))
NT_FILE_ENTRY = RecordLayout("NT_FILE entry", ("start", "Q"), ("end", "Q"), ("file_ofs", "Q"))
# The dynamic linker's list (glibc's link.h): struct r_debug, and the public
# fields of struct link_map that are read (l_prev and glibc's own follow).
R_DEBUG = RecordLayout(
    "struct r_debug",
    ("r_version", "i"),
    ("(padding before r_map)", "4x"),
    ("r_map", "Q"),
    ("r_brk", "Q"),
    ("r_state", "i"),
    ("(padding before r_ldbase)", "4x"),
    ("r_ldbase", "Q"),
)
LINK_MAP = RecordLayout(
    "struct link_map (l_addr .. l_next)",
    ("l_addr", "Q"),
    ("l_name", "Q"),
    ("l_ld", "Q"),
    ("l_next", "Q"),
)

_PICK_PRSTATUS = PRSTATUS_COMMON.picker("pr_cursig", "pr_pid")
_PICK_PROGRAM_HEADERS = ELF64_EHDR.picker("e_phoff", "e_phentsize", "e_phnum")
# (DWARF register number, index in user_regs_struct) of the registers a frame
# keeps: the System V AMD64 psABI numbers rax 0, rdx 1, rcx 2, rbx 3, rsi 4,
# rdi 5, rbp 6, rsp 7, r8-r15 8-15.
_AMD64_DWARF_NUMBERS = {"rax": 0, "rdx": 1, "rcx": 2, "rbx": 3, "rsi": 4, "rdi": 5, "rbp": 6}
_AMD64_DWARF_NUMBERS |= {"rsp": 7} | {f"r{n}": n for n in range(8, 16)}
_AMD64_DWARF_SLOTS = tuple(
    (_AMD64_DWARF_NUMBERS[name], index)
    for index, name in enumerate(AMD64_USER_REGS.names)
    if name in _AMD64_DWARF_NUMBERS
)
_AMD64_RIP = AMD64_USER_REGS.names.index("rip")
_AARCH64_PC = AARCH64_USER_PT_REGS.names.index("pc")

_ARCH_BY_MACHINE = {EM_X86_64: Arch.AMD64, EM_AARCH64: Arch.AARCH64}
_MACHINE_NAMES = {EM_X86_64: "x86_64", EM_AARCH64: "aarch64"}


@dataclass(frozen=True, slots=True)
class CoreThread:
    """One thread of the core: its ID, the signal it stopped with, its registers."""

    tid: int
    signal: int
    registers: RegisterState


@dataclass(frozen=True, slots=True)
class FileMapping:
    """One `NT_FILE` entry: [start, end) maps `path` from byte `offset`."""

    start: int
    end: int
    offset: int
    path: str


@dataclass(slots=True)
class _MappedFile:
    """A file named by NT_FILE, mapped for reading; unusable when it is not
    the file that ran (its build ID differs from the one in the core)."""

    data: mmap.mmap
    usable: bool = True


class CoreFile:
    """An opened core file: threads, memory and modules."""

    def __init__(self, path: str | os.PathLike[str], *, sysroot: str | None = None):
        self.path = os.fspath(path)
        self.sysroot = sysroot
        self.elf = ElfFile.open(self.path)
        self._files: dict[str, _MappedFile | None] = {}
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def _load(self) -> None:
        if self.elf.e_type != ET_CORE:
            raise FormatError(f"not a core file (ELF type {self.elf.e_type})", source=self.path)
        arch = _ARCH_BY_MACHINE.get(self.elf.machine)
        if arch is None or not self.elf.is_64 or self.elf.endian != "<":
            raise FormatError(
                f"unsupported core architecture {self.elf.machine_name} "
                "(AMD64 and AArch64 little-endian are supported)",
                source=self.path,
            )
        self.arch = arch
        self.machine_name = _MACHINE_NAMES[self.elf.machine]
        self.threads: list[CoreThread] = []
        self.mappings: list[FileMapping] = []
        self.file_page_size = 4096  # NT_FILE's unit for file offsets (GDB writes 1)
        self.auxv: dict[int, int] = {}
        self.pac_mask: int | None = None
        self._read_notes()
        if not self.threads:
            raise FormatError("the core has no NT_PRSTATUS note (no threads)", source=self.path)
        loads = sorted((s for s in self.elf.segments if s.type == PT_LOAD), key=lambda s: s.vaddr)
        self._loads = loads
        self._load_starts = [s.vaddr for s in loads]
        self.warnings: list[str] = []
        self._set_mappings(self.mappings)
        if not self.mappings:
            self._map_from_dynamic_linker()
        self.modules: list[Module] = self._find_modules()
        self._check_files()

    def close(self) -> None:
        for mapped in self._files.values():
            if mapped is not None and isinstance(mapped.data, mmap.mmap):
                mapped.data.close()
        self.elf.close()

    def __enter__(self) -> CoreFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- notes ----------------------------------------------------------------------

    def _read_notes(self) -> None:
        auxv = ELF64_AUXV.compiled("<")
        pac_mask = USER_PAC_MASK.compiled("<")
        for note in self.elf.notes():
            if note.name == "CORE" and note.type == NT_PRSTATUS:
                self.threads.append(self._parse_prstatus(note.desc, note.offset))
            elif note.name == "CORE" and note.type == NT_FILE:
                self._parse_nt_file(note.desc, note.offset)
            elif note.name == "CORE" and note.type == NT_AUXV:
                for i in range(0, len(note.desc) - auxv.size + 1, auxv.size):
                    a_type, a_val = auxv.unpack_from(note.desc, i)
                    self.auxv.setdefault(a_type, a_val)
            elif (
                note.name == "LINUX"
                and note.type == NT_ARM_PAC_MASK
                and len(note.desc) >= pac_mask.size
            ):
                _data_mask, insn_mask = pac_mask.unpack_from(note.desc)
                self.pac_mask = insn_mask

    def _parse_prstatus(self, desc: bytes, offset: int) -> CoreThread:
        pr_reg = AMD64_USER_REGS if self.arch is Arch.AMD64 else AARCH64_USER_PT_REGS
        if len(desc) < PRSTATUS_COMMON.size + pr_reg.size:
            raise FormatError(
                f"NT_PRSTATUS of {len(desc)} bytes is too short", offset=offset, source=self.path
            )
        signal, tid = _PICK_PRSTATUS(PRSTATUS_COMMON.compiled("<").unpack_from(desc))
        regs = pr_reg.compiled("<").unpack_from(desc, PRSTATUS_COMMON.size)
        values: dict[int, int]
        if self.arch is Arch.AMD64:
            values = {dwarf: regs[index] for dwarf, index in _AMD64_DWARF_SLOTS}
            pc = regs[_AMD64_RIP]
        else:
            values = {i: regs[i] for i in range(32)}  # x0-x30, sp: DWARF numbers 0-31
            pc = regs[_AARCH64_PC]
        return CoreThread(tid, signal, RegisterState(pc, values))

    def _parse_nt_file(self, desc: bytes, offset: int) -> None:
        header, entry = NT_FILE_HEADER.compiled("<"), NT_FILE_ENTRY.compiled("<")
        if len(desc) < header.size:
            raise FormatError("NT_FILE note is too short", offset=offset, source=self.path)
        count, page_size = header.unpack_from(desc)
        table_end = header.size + entry.size * count
        if table_end > len(desc):
            raise FormatError(
                f"NT_FILE lists {count} mappings but holds {len(desc)} bytes",
                offset=offset,
                source=self.path,
            )
        names = desc[table_end:].split(b"\0")
        if len(names) < count:
            raise FormatError(
                f"NT_FILE lists {count} mappings but only {len(names)} paths",
                offset=offset,
                source=self.path,
            )
        self.file_page_size = page_size or 4096
        for i in range(count):
            start, end, page_offset = entry.unpack_from(desc, header.size + entry.size * i)
            path = names[i].decode("utf-8", "surrogateescape")
            self.mappings.append(FileMapping(start, end, page_offset * self.file_page_size, path))
        self.mappings.sort(key=lambda m: m.start)

    # -- memory ---------------------------------------------------------------------

    def read_memory(self, address: int, size: int) -> bytes:
        """Bytes at `address` from the core, else from the mapped file; raises
        `UnreadableMemory` when neither has them."""
        first = self._read_some(address, size)
        if len(first) == size:
            return first
        out = bytearray(first)
        address += len(first)
        size -= len(first)
        while size > 0:
            chunk = self._read_some(address, size)
            out += chunk
            address += len(chunk)
            size -= len(chunk)
        return bytes(out)

    def _read_some(self, address: int, size: int) -> bytes:
        """A non-empty prefix of the range, from wherever it is available."""
        i = bisect.bisect_right(self._load_starts, address) - 1
        if i >= 0:
            seg = self._loads[i]
            inside = address - seg.vaddr
            if inside < seg.filesz:
                count = min(size, seg.filesz - inside)
                return self.elf.read(seg.offset + inside, count)
        data = self._read_from_file(address, size)
        if data:
            return data
        raise UnreadableMemory(address, size, "not in the core or its mapped files")

    def _read_from_file(self, address: int, size: int) -> bytes:
        j = bisect.bisect_right(self._mapping_starts, address) - 1
        if j < 0:
            return b""
        mapping = self.mappings[j]
        if not mapping.start <= address < mapping.end:
            return b""
        mapped = self._file(mapping.path)
        if mapped is None or not mapped.usable:
            return b""
        where = mapping.offset + address - mapping.start
        count = min(size, mapping.end - address, len(mapped.data) - where)
        if count <= 0:
            return b""
        return bytes(mapped.data[where : where + count])

    def local_path(self, path: str) -> str:
        """Where a path named in the core is found on this machine: under the
        sysroot when it is there (as QEMU's -L looks), else the path itself,
        and a relative path (QEMU cores name what the command line said) also
        beside the core."""
        candidates = [os.path.join(self.sysroot, path.lstrip("/"))] if self.sysroot else []
        candidates.append(path)
        if not os.path.isabs(path):
            candidates.append(os.path.join(os.path.dirname(os.path.abspath(self.path)), path))
        return next((c for c in candidates if os.path.exists(c)), candidates[0])

    def _set_mappings(self, mappings: list[FileMapping]) -> None:
        self.mappings = sorted(mappings, key=lambda m: m.start)
        self._mapping_starts = [m.start for m in self.mappings]

    # -- cores without NT_FILE (QEMU's): the dynamic linker's list ------------------

    def _map_from_dynamic_linker(self) -> None:
        """Find the loaded files as GDB does when a core has no NT_FILE: the
        executable from AT_EXECFN/AT_PHDR, the libraries from the dynamic
        linker's `r_debug.r_map` list (found through DT_DEBUG), each file's
        PT_LOADs giving the file-backed ranges."""
        execfn, phdr = self.auxv.get(AT_EXECFN), self.auxv.get(AT_PHDR)
        if not execfn or not phdr:
            self.warnings.append("no NT_FILE note and no AT_EXECFN/AT_PHDR: modules unknown")
            return
        try:
            executable = self._c_string(execfn)
        except StackmarkError as exc:
            self.warnings.append(f"no NT_FILE note, and the executable's name is unreadable: {exc}")
            return
        found: list[FileMapping] = []
        exe_elf = self._open_elf(executable)
        if exe_elf is None:
            self.warnings.append(f"{self.local_path(executable)}: not found; modules unknown")
            return
        with exe_elf:
            segments = exe_elf.segments
            loads = [seg for seg in segments if seg.type == PT_LOAD]
            phdr_seg = next((seg for seg in segments if seg.type == PT_PHDR), None)
            if not loads or phdr_seg is None:
                self.warnings.append(f"{executable}: no PT_PHDR to place it by; modules unknown")
                return
            bias = phdr - phdr_seg.vaddr
            found += self._file_mappings(executable, loads, bias)
            dynamic = next((seg for seg in segments if seg.type == PT_DYNAMIC), None)
        self._set_mappings(found)  # so the reads below can use the executable's file
        if dynamic is not None:
            for path, lib_bias in self._link_map(dynamic.vaddr + bias, dynamic.memsz):
                lib = self._open_elf(path)
                if lib is None:
                    self.warnings.append(f"{self.local_path(path)}: not found")
                    continue
                with lib:
                    found += self._file_mappings(
                        path, [g for g in lib.segments if g.type == PT_LOAD], lib_bias
                    )
        self._set_mappings(found)

    def _open_elf(self, path: str) -> ElfFile | None:
        try:
            return ElfFile.open(self.local_path(path))
        except StackmarkError:
            return None

    def _file_mappings(
        self, path: str, loads: Sequence[ProgramHeader], bias: int
    ) -> list[FileMapping]:
        page = self.auxv.get(AT_PAGESZ) or 4096
        mappings = []
        for seg in loads:
            start = (bias + seg.vaddr) & ~(page - 1)
            end = (bias + seg.vaddr + seg.filesz + page - 1) & ~(page - 1)
            offset = seg.offset & ~(page - 1)
            if end > start:
                mappings.append(FileMapping(start, end, offset, path))
        return mappings

    def _link_map(self, dynamic: int, size: int) -> list[tuple[str, int]]:
        """(path, load bias) of each library on the dynamic linker's list."""
        try:
            dyn, link_map = ELF64_DYN.compiled("<"), LINK_MAP.compiled("<")
            r_debug = 0
            for i in range(0, size - dyn.size + 1, dyn.size):
                d_tag, d_un = dyn.unpack(self.read_memory(dynamic + i, dyn.size))
                if d_tag == DT_NULL:
                    break
                if d_tag == DT_DEBUG:
                    r_debug = d_un
            if not r_debug:
                return []
            r_map = self.read_memory(r_debug + R_DEBUG.offsets["r_map"], R_DEBUG.sizes["r_map"])
            entry = U64[True].unpack(r_map)[0]
            libraries = []
            seen: set[int] = set()
            while entry and entry not in seen and len(seen) < MAX_LINK_MAP:
                seen.add(entry)
                l_addr, l_name, _l_ld, l_next = link_map.unpack(
                    self.read_memory(entry, link_map.size)
                )
                name = self._c_string(l_name) if l_name else ""
                if "/" in name:  # not the executable (""), not the vDSO ("linux-vdso.so.1")
                    libraries.append((name, l_addr))
                entry = l_next
            return libraries
        except StackmarkError as exc:
            self.warnings.append(f"the dynamic linker's list of libraries is unreadable: {exc}")
            return []

    def _c_string(self, address: int, limit: int = 4096) -> str:
        out = bytearray()
        while len(out) < limit:
            chunk = self._read_some(address + len(out), 64)
            nul = chunk.find(b"\0")
            if nul >= 0:
                out += chunk[:nul]
                return out.decode("utf-8", "surrogateescape")
            out += chunk
        raise UnreadableMemory(address, limit, "string without an end")

    def _file(self, path: str) -> _MappedFile | None:
        if path in self._files:
            return self._files[path]
        mapped: _MappedFile | None = None
        try:
            with open(self.local_path(path), "rb") as f:
                if os.fstat(f.fileno()).st_size > 0:
                    mapped = _MappedFile(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
        except OSError:
            mapped = None
        self._files[path] = mapped
        return mapped

    # -- modules --------------------------------------------------------------------

    def _find_modules(self) -> list[Module]:
        headers: list[tuple[int, str | None, str]] = []  # (address, path, name)
        seen: set[str] = set()
        for mapping in self.mappings:
            if mapping.offset == 0 and mapping.path not in seen:
                seen.add(mapping.path)
                headers.append((mapping.start, mapping.path, os.path.basename(mapping.path)))
        vdso = self.auxv.get(AT_SYSINFO_EHDR)
        if vdso:
            headers.append((vdso, None, "[vdso]"))
        modules: list[Module] = []
        for address, path, name in headers:
            module = self._module_at(address, path, name)
            if module is not None:
                modules.append(module)
        entry = self.auxv.get(AT_ENTRY)
        modules.sort(
            key=lambda m: (
                not any(s.contains(entry) for s in m.segments) if entry else True,
                m.segments[0].start,
            )
        )
        for i, module in enumerate(modules):
            module.id = i
        return modules

    def _module_at(self, address: int, path: str | None, name: str) -> Module | None:
        """The module whose ELF header is mapped at `address`; None if it is not ELF."""
        try:
            ident = self.read_memory(address, EI_NIDENT + ELF64_EHDR.size)
        except StackmarkError:
            self.warnings.append(f"{path or name}: its ELF header is not in the core or on disk")
            return None
        if ident[: len(ELFMAG)] != ELFMAG:
            return None  # a mapped data file
        if ident[EI_CLASS] != ELFCLASS64 or ident[EI_DATA] != ELFDATA2LSB:
            self.warnings.append(f"{path or name}: not a 64-bit little-endian ELF file")
            return None
        phoff, phentsize, phnum = _PICK_PROGRAM_HEADERS(
            ELF64_EHDR.compiled("<").unpack_from(ident, EI_NIDENT)
        )
        if phentsize < ELF64_PHDR.size or phoff + phentsize * phnum > MAX_HEADERS:
            self.warnings.append(f"{path or name}: implausible program headers in memory")
            return None
        try:
            header = self.read_memory(address, phoff + phentsize * phnum)
            elf = ElfFile.from_bytes(header, name=f"{path or name} (in memory)")
            segments = elf.segments
        except StackmarkError as exc:
            self.warnings.append(f"{path or name}: unreadable program headers: {exc}")
            return None
        loads = [s for s in segments if s.type == PT_LOAD]
        if not loads:
            return None
        page = self.auxv.get(AT_PAGESZ) or 4096
        first = min(loads, key=lambda s: s.offset)  # the one mapping file offset 0
        bias = address - (first.vaddr - first.offset)
        module_segments: list[Segment] = []
        for seg in sorted(loads, key=lambda s: s.vaddr):
            low = seg.vaddr & ~(page - 1)
            high = (seg.vaddr + seg.memsz + page - 1) & ~(page - 1)
            if module_segments and bias + low < module_segments[-1].end:
                low = module_segments[-1].end - bias  # two PT_LOADs share a page
            if high > low:
                module_segments.append(Segment(bias + low, high - low, seg.mode, low))
        build_id = self._build_id(bias, [s for s in segments if s.type == PT_NOTE], path)
        return Module(id=0, name=name, build_id=build_id, segments=module_segments, path=path)

    def _build_id(self, bias: int, notes: Sequence[ProgramHeader], path: str | None) -> str:
        """The GNU build ID from the PT_NOTE segments in memory, else from the file."""
        for seg in notes:
            try:
                data = self.read_memory(bias + seg.vaddr, seg.filesz)
            except StackmarkError:
                continue
            found = _find_build_id(data)
            if found:
                return found
        if path is not None:
            try:
                with ElfFile.open(self.local_path(path)) as elf:
                    return elf.build_id or ""
            except StackmarkError:
                pass
        return ""

    def _check_files(self) -> None:
        """Stop reading memory from files whose build ID differs from the core's."""
        for module in self.modules:
            if module.path is None or not module.build_id:
                continue
            mapped = self._file(module.path)
            if mapped is None:
                self.warnings.append(
                    f"{self.local_path(module.path)}: not found; its code is not in the core"
                )
                continue
            try:
                with ElfFile.open(self.local_path(module.path)) as elf:
                    file_id = elf.build_id or ""
            except StackmarkError:
                file_id = ""
            if file_id != module.build_id:
                mapped.usable = False
                self.warnings.append(
                    f"{self.local_path(module.path)}: build ID {file_id or 'none'} differs from "
                    f"the core's {module.build_id}; not reading code from it"
                )


def _find_build_id(data: bytes) -> str | None:
    """The GNU build ID in a PT_NOTE's bytes from the core's memory, or None
    (also when a note before it is cut short)."""
    try:
        for name, note_type, desc, _ in iter_notes(data, True, "PT_NOTE in the core's memory"):
            if note_type == NT_GNU_BUILD_ID and name.rstrip(b"\0") == b"GNU":
                return desc.hex() or None
    except FormatError:
        pass
    return None


class CoreTarget:
    """The `Target` for one thread of a core file."""

    def __init__(self, core: CoreFile, thread: int = 0):
        self.core = core
        self.thread = core.threads[thread]

    @property
    def arch(self) -> Arch:
        return self.core.arch

    def registers(self) -> RegisterState:
        return self.thread.registers

    def read_memory(self, address: int, size: int) -> bytes:
        return self.core.read_memory(address, size)

    def modules(self) -> Sequence[Module]:
        return self.core.modules

    def code_address_mask(self) -> int | None:
        return self.core.pac_mask

    def local_path(self, path: str) -> str:
        """Where a file the core names is on this machine (see `CoreFile.local_path`)."""
        return self.core.local_path(path)
