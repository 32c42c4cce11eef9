"""`stackmark unwind CORE`: the backtrace of a core file, without a debugger.

    stackmark unwind CORE [--markup | --cbf | --json] [--all-threads | --thread TID]

Markup (the default) is the module context and one `bt` element per frame,
for `stackmark symbolize` or `llvm-symbolizer --filter-markup`. `--cbf`
prints Swift's Codable JSON (`{"architecture", "backtrace", "imageMap"}`:
CBF and the Compact Image Map, base64), one object per thread. `--json`
prints everything the unwinder knows: modules, and per thread the frames
with their CFA, module offset and how each was found, and why it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys

from stackmark.errors import StackmarkError
from stackmark.formats import cbf
from stackmark.formats.imagemap import Image, ImageMap, encode_image_map
from stackmark.formats.swift_backtrace import SwiftBacktrace
from stackmark.model import Module
from stackmark.unwind.core import CoreFile, CoreTarget, CoreThread
from stackmark.unwind.emit import context_lines, frame_lines
from stackmark.unwind.tables import SFrameTables, TableCache
from stackmark.unwind.unwinder import DEFAULT_MAX_FRAMES, Unwinder, UnwindResult

SWIFT_ARCHITECTURE = {"x86_64": "x86_64", "aarch64": "arm64"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("core", metavar="CORE", help="an ELF core file (kernel or gdb gcore)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument(
        "--markup",
        action="store_const",
        dest="form",
        const="markup",
        help="symbolizer markup (default)",
    )
    form.add_argument(
        "--cbf",
        action="store_const",
        dest="form",
        const="cbf",
        help="Swift Codable JSON with CBF and image map, one line per thread",
    )
    form.add_argument(
        "--json",
        action="store_const",
        dest="form",
        const="json",
        help="frames, CFAs, modules and stop reasons as JSON",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--all-threads", action="store_true", help="every thread, not only the first"
    )
    which.add_argument("--thread", type=int, metavar="TID", help="the thread with this ID")
    parser.add_argument("--sysroot", metavar="DIR", help="find the files the core names under DIR")
    parser.add_argument("--max-frames", type=int, default=DEFAULT_MAX_FRAMES, metavar="N")
    parser.add_argument(
        "--notes",
        action="store_true",
        help="markup: say after each frame how it was found, and why unwinding stopped",
    )
    parser.set_defaults(form="markup")


def run(args: argparse.Namespace) -> int:
    with CoreFile(args.core, sysroot=args.sysroot) as core:
        for warning in core.warnings:
            print(f"stackmark unwind: warning: {warning}", file=sys.stderr)
        indexes = _thread_indexes(core, args)
        tables = TableCache(SFrameTables(read_memory=core.read_memory, path_map=core.local_path))
        results = []
        for index in indexes:
            unwinder = Unwinder(CoreTarget(core, index), tables, max_frames=args.max_frames)
            results.append((core.threads[index], unwinder.unwind()))
        if args.form == "json":
            print(json.dumps(_json(core, results), indent=2))
        elif args.form == "cbf":
            image_map = encode_image_map(
                ImageMap("linux", [Image.from_module(m) for m in core.modules if m.segments])
            )
            for _thread, result in results:
                swift = SwiftBacktrace(
                    SWIFT_ARCHITECTURE.get(core.machine_name, core.machine_name),
                    cbf.encode(result.backtrace_with_markers),
                    image_map,
                )
                print(swift.to_json())
        else:
            _print_markup(core.modules, results, args)
    return 0


def _thread_indexes(core: CoreFile, args: argparse.Namespace) -> list[int]:
    if args.all_threads:
        return list(range(len(core.threads)))
    if args.thread is not None:
        for i, thread in enumerate(core.threads):
            if thread.tid == args.thread:
                return [i]
        known = ", ".join(str(t.tid) for t in core.threads)
        raise StackmarkError(f"{core.path}: no thread {args.thread} (threads: {known})")
    return [0]


def _print_markup(
    modules: list[Module], results: list[tuple[CoreThread, UnwindResult]], args: argparse.Namespace
) -> None:
    for line in context_lines(modules):
        print(line)
    for thread, result in results:
        if len(results) > 1:
            signal = f" (signal {thread.signal})" if thread.signal else ""
            print(f"thread {thread.tid}{signal}:")
        for line in frame_lines(result.backtrace_with_markers, notes=args.notes):
            print(line)
        if args.notes:
            print(f"(unwinding stopped: {result.stop_reason})")


def _json(core: CoreFile, results: list[tuple[CoreThread, UnwindResult]]) -> dict[str, object]:
    threads = []
    for thread, result in results:
        frames = []
        for unwound in result.frames:
            frame = unwound.frame
            entry: dict[str, object] = {
                "kind": frame.kind.value,
                "address": f"0x{frame.address:x}",
                "cfa": None if unwound.cfa is None else f"0x{unwound.cfa:x}",
                "module": unwound.module.name if unwound.module else None,
            }
            if unwound.module is not None:
                segment = next(s for s in unwound.module.segments if s.contains(frame.address))
                entry["module_offset"] = f"0x{segment.to_module_relative(frame.address):x}"
            entry["found_by"] = frame.note or "registers"
            frames.append(entry)
        threads.append(
            {
                "tid": thread.tid,
                "signal": thread.signal,
                "frames": frames,
                "stop_reason": result.stop_reason,
                "truncated": result.truncated,
            }
        )
    return {
        "core": core.path,
        "arch": core.machine_name,
        "modules": [
            {
                "id": m.id,
                "name": m.name,
                "path": m.path,
                "build_id": m.build_id,
                "segments": [
                    {
                        "start": f"0x{s.start:x}",
                        "size": f"0x{s.size:x}",
                        "mode": s.mode,
                        "module_relative": f"0x{s.module_relative:x}",
                    }
                    for s in m.segments
                ],
            }
            for m in core.modules
        ],
        "threads": threads,
    }
