"""`stackmark bt`: the backtraces of a stopped process as markup, CBF or JSON.

`collect` asks the backend for the modules and for each thread's frames
and folds them into physical frames (`frames.physical_frames`). The
writers turn that one snapshot into:

- markup: `{{{reset}}}`, the modules and their mmaps, then `{{{bt}}}`
  lines (through `stackmark.unwind.emit`, as the unwinder and CBF tools
  write them); with several threads, a plain `Thread N "name":` line before
  each thread's frames (markup filters keep plain text);
- CBF: per thread, `cbf: BASE64` (the Compact Backtrace Format) and
  `images: BASE64` (the Compact Image Map), base64 without padding as
  Swift writes it, then the frames those bytes decode to, symbolized;
- JSON: modules, threads and frames, each frame's inline chain (innermost
  first) as `stackmark symbolize` finds it for the same address: the same
  frames, names and full paths as the markup and CBF give once symbolized.
  (GDB hides an inlined call whose first instruction is the pc of a stop, and
  names files as the debug info spells them; its view is not used when the
  symbolizer knows the address.) A frame the symbolizer knows nothing about
  keeps the debugger's names.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from stackmark.debugger.backend import DebuggerBackend, ThreadInfo
from stackmark.debugger.cbf import decoded_listing
from stackmark.debugger.command import Command, CommandParser
from stackmark.debugger.frames import PhysicalFrame, physical_frames
from stackmark.debugger.modules import loaded_modules, module_for_address
from stackmark.debugger.session import Session
from stackmark.demangle import demangle, demangle_symbol
from stackmark.formats import cbf
from stackmark.formats.imagemap import Image, ImageMap, encode_image_map
from stackmark.formats.swift_backtrace import encode_base64
from stackmark.markup.layout import FrameText
from stackmark.markup.naming import NameOptions, Naming
from stackmark.model import Module
from stackmark.symbols.api import SymbolizerAPI
from stackmark.unwind.emit import context_lines, frame_lines
from stackmark.unwind_rules import Arch

PLATFORM = "linux"
"""The platform string of the image maps (Swift records the OS it ran on)."""


@dataclass(frozen=True)
class ThreadBacktrace:
    thread: ThreadInfo
    frames: list[PhysicalFrame]
    stopped: str | None = None  # why the debugger's unwinding stopped early (bad memory...)


@dataclass(frozen=True)
class Snapshot:
    """Modules and per-thread physical frames of one stop."""

    arch: Arch
    modules: list[Module]
    threads: list[ThreadBacktrace]


def collect(
    backend: DebuggerBackend, *, all_threads: bool, past_main: bool, symbols: bool
) -> Snapshot:
    """Read the modules and the frames of the selected (or every) thread."""
    threads = backend.threads()
    if not all_threads:
        threads = [t for t in threads if t.selected] or threads[:1]
    modules = loaded_modules(backend)
    traces = []
    for thread in threads:
        frames = physical_frames(backend.frames(thread, past_main=past_main, symbols=symbols))
        stopped = backend.unwind_stop()
        if stopped is None and frames:
            last = frames[-1]
            if module_for_address(modules, last.frame.lookup_address) is None:
                address = last.frame.address
                stopped = f"frame #{last.index} at 0x{address:x} is in no loaded module"
        traces.append(ThreadBacktrace(thread, frames, stopped))
    return Snapshot(backend.arch(), modules, traces)


def stop_note(trace: ThreadBacktrace) -> Iterator[str]:
    """A plain-text line after a backtrace that ended early, saying why (markup
    filters pass it through)."""
    if trace.stopped:
        yield f"(backtrace stopped: {trace.stopped})"


def thread_title(thread: ThreadInfo) -> str:
    name = f' "{thread.name}"' if thread.name else ""
    return f"Thread {thread.number}{name}:"


def markup_lines(snapshot: Snapshot) -> Iterator[str]:
    """The snapshot as symbolizer markup."""
    yield from context_lines(snapshot.modules)
    several = len(snapshot.threads) > 1
    for trace in snapshot.threads:
        if several:
            yield thread_title(trace.thread)
        yield from frame_lines(f.frame for f in trace.frames)
        yield from stop_note(trace)


def image_map(snapshot: Snapshot) -> ImageMap:
    images = [Image.from_module(m) for m in snapshot.modules if m.segments]
    return ImageMap(PLATFORM, images, snapshot.arch.pointer_size * 8)


def cbf_bytes(trace: ThreadBacktrace, word_bits: int = 64) -> bytes:
    return cbf.encode([f.frame for f in trace.frames], word_bits)


def cbf_lines(snapshot: Snapshot, session: Session) -> Iterator[str]:
    """Per thread: `cbf: BASE64`, `images: BASE64`, then those bytes decoded again
    and symbolized, as `stackmark cbf decode` shows them."""
    images = encode_image_map(image_map(snapshot))
    word_bits = snapshot.arch.pointer_size * 8
    several = len(snapshot.threads) > 1
    for trace in snapshot.threads:
        if several:
            yield thread_title(trace.thread)
        data = cbf_bytes(trace, word_bits)
        yield f"cbf: {encode_base64(data)}"
        yield f"images: {encode_base64(images)}"
        yield from decoded_listing(session, data, images)
        yield from stop_note(trace)


def _hex(value: int) -> str:
    return f"0x{value:x}"


def _module_record(module: Module) -> dict[str, object]:
    return {
        "id": module.id,
        "name": module.name,
        "build_id": module.build_id,
        "path": module.path,
        "load_bias": _hex(module.load_bias),
        "segments": [
            {
                "start": _hex(s.start),
                "size": _hex(s.size),
                "mode": s.mode,
                "module_relative": _hex(s.module_relative),
            }
            for s in module.segments
        ],
    }


def _function_record(text: FrameText) -> dict[str, object]:
    record: dict[str, object] = {
        "name": text.function,
        "file": text.file,
        "line": text.line or None,
    }
    if text.column:
        record["column"] = text.column
    return record


def _frame_record(
    frame: PhysicalFrame, modules: Sequence[Module], symbolizer: SymbolizerAPI, naming: Naming
) -> dict[str, object]:
    address = frame.frame.address
    lookup = frame.frame.lookup_address
    record: dict[str, object] = {
        "index": frame.index,
        "kind": frame.frame.kind.value,
        "address": _hex(address),
    }
    chain: list[dict[str, object]] = []
    module = module_for_address(list(modules), lookup)
    if module is not None:
        segment = next(s for s in module.segments if s.contains(lookup))
        record["module"] = module.id
        record["module_address"] = _hex(segment.to_module_relative(address))
        found = symbolizer.code(module, segment.to_module_relative(lookup)).frames
        if found:
            chain = [_function_record(text) for text in naming.frame_texts_for(found)]
    record["functions"] = chain or [
        {"name": member.function, "file": member.file, "line": member.line or None}
        for member in frame.members
    ]
    if frame.is_signal_trampoline:
        record["signal_trampoline"] = True
    return record


def json_lines(snapshot: Snapshot, session: Session) -> Iterator[str]:
    """The snapshot as one indented JSON document (frames symbolized as `stackmark
    symbolize` does, with the files the debugger loaded)."""
    symbolizer = session.symbolizer([], [], [])
    naming = Naming(NameOptions(), demangle_name=demangle_symbol, demangle_symbol=demangle)
    threads = []
    for trace in snapshot.threads:
        record: dict[str, object] = {
            "number": trace.thread.number,
            "name": trace.thread.name,
            "selected": trace.thread.selected,
            "frames": [
                _frame_record(f, snapshot.modules, symbolizer, naming) for f in trace.frames
            ],
        }
        if trace.stopped:
            record["stopped"] = trace.stopped
        threads.append(record)
    document = {
        "arch": snapshot.arch.value,
        "modules": [_module_record(m) for m in snapshot.modules],
        "threads": threads,
    }
    yield from json.dumps(document, indent=2).splitlines()


# -- stackmark bt ------------------------------------------------------------------


def _configure_bt(parser: CommandParser) -> None:
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument(
        "--markup",
        dest="format",
        action="store_const",
        const="markup",
        help="symbolizer markup: {{{reset}}}, {{{module}}}, {{{mmap}}}, {{{bt}}} (the default)",
    )
    formats.add_argument(
        "--cbf",
        dest="format",
        action="store_const",
        const="cbf",
        help="Compact Backtrace Format: a 'cbf: BASE64' line, an 'images: BASE64' line "
        "(Compact Image Map), then the decoded frames",
    )
    formats.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="modules, threads and frames as JSON",
    )
    parser.set_defaults(format="markup")
    parser.add_argument(
        "-a", "--all-threads", action="store_true", help="every thread, not only the selected one"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="also the frames the debugger hides by default: those past main "
        "(the C library's start-up code, _start)",
    )


def _run_bt(session: Session, args: argparse.Namespace) -> Iterable[str]:
    session.require_process()
    snapshot = collect(
        session.backend,
        all_threads=args.all_threads,
        past_main=args.full,
        symbols=args.format == "json",
    )
    for problem in session.unwinder_problems():
        session.warn(f"stackmark bt: warning: {problem}\n")
    if args.format == "json":
        return json_lines(snapshot, session)
    if args.format == "cbf":
        return cbf_lines(snapshot, session)
    return markup_lines(snapshot)


BT = Command(
    words=("bt",),
    summary="Print the backtrace as symbolizer markup, CBF or JSON.",
    description=(
        "One entry per physical frame: inlined calls are folded into the frame they were\n"
        "inlined into; frame 0 and frames interrupted by a signal are ':pc', the others\n"
        "':ra' (return addresses). The markup symbolizes with 'stackmark symbolize' or\n"
        "'llvm-symbolizer --filter-markup', here or on another machine."
    ),
    configure=_configure_bt,
    run=_run_bt,
)
