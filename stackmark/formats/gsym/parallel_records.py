"""FunctionInfo records encoded on every core: the last long serial step of a
large conversion (about 3 s of line tables and inline trees for 17,000
functions of a 104 MB C++ binary).

The records of one function do not depend on any other's (strings and files
are global indexes by then, and each record starts 4-aligned), so contiguous
slices are encoded by forked processes and joined in order: the bytes are the
same as one process writes. Forked, because the functions are already in
memory and pickling them would cost as much as encoding them; only the bytes
travel back.

Forking is used only where it is safe: a platform with `fork` and a process
running no other thread, native threads included (a thread holding a lock at
the fork would leave it held in the child: the language server, which has
threads, and an interpreter inside a debugger encode serially).
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from stackmark.formats.gsym.creator import (
    RecordEncoder,
    encode_records,
    records_compiled,
    records_in_pieces,
)
from stackmark.formats.gsym.function_info import FunctionInfo

MIN_FUNCTIONS = 8192
"""Fewer functions than this are encoded here: a fork costs more than it saves."""

MIN_FUNCTIONS_COMPILED = 1 << 20
"""The same with the compiled encoder active. It encodes the 21,000 functions of
the 104 MB benchmark binary in 0.2 s in one process, while forking two encoders
took 0.4 s of wall time (each child copies the pages whose reference counts it
touches): only far larger inputs are worth a fork (docs/benchmarks.md)."""


def min_functions() -> int:
    """How many functions make forking pay, for the record encoder active here."""
    return MIN_FUNCTIONS_COMPILED if records_compiled() else MIN_FUNCTIONS


SLICES_PER_JOB = 4
"""More slices than processes, so that the parent joins early ones while later
ones are encoded, and an uneven slice holds nobody up for long."""

_functions: Sequence[FunctionInfo] = ()
_little = True
"""What the forked workers encode (set before the fork, read in the child)."""


def _encode_slice(bounds: tuple[int, int]) -> tuple[bytes, list[int]]:
    start, end = bounds
    return encode_records(_functions[start:end], _little)


EMBEDDING_MODULES = ("gdb", "lldb")
"""Modules whose presence says the interpreter runs inside a debugger, whose
own threads `threading` does not see."""


def forking_is_safe() -> bool:
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and not any(name in sys.modules for name in EMBEDDING_MODULES)
    )


def records_in_parallel(jobs: int) -> RecordEncoder | None:
    """A `RecordEncoder` for `encode_gsym` over `jobs` forked processes, or None
    where that does not pay or is not safe (one job; no fork; other threads)."""
    if jobs < 2 or not forking_is_safe():
        return None

    def encode(
        functions: Sequence[FunctionInfo], little: bool
    ) -> Iterator[tuple[bytes, list[int]]]:
        global _functions, _little
        if len(functions) < min_functions() or not forking_is_safe():
            yield from records_in_pieces(functions, little)
            return
        count = len(functions)
        step = -(-count // (jobs * SLICES_PER_JOB))
        slices = [(start, min(start + step, count)) for start in range(0, count, step)]
        _functions, _little = functions, little
        done = 0  # slices yielded
        try:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
                for piece in pool.map(_encode_slice, slices):
                    yield piece
                    done += 1
        except BrokenProcessPool:
            # A worker died (the kernel's out-of-memory killer, say: each forked
            # copy of a large conversion grows as it touches the heap). The rest
            # is encoded here; the bytes are the same.
            for start, end in slices[done:]:
                yield encode_records(functions[start:end], little)
        finally:
            _functions = ()

    return encode
