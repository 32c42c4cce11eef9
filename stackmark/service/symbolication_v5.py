"""Mozilla's Symbolication API v5: requests checked, frames answered.

The request and answer are those of Mozilla's reference service (Eliot),
so that profilers and crash tools that speak it work unchanged:

    {"jobs": [{"memoryMap": [["libxul.so", "0905AE80CEE75A33E3CAB61C274274DE0"], ...],
               "stacks": [[[0, 31290], [1, 4660], [-1, 16]]]}]}
    (a body without "jobs" is one job)

    {"results": [{"stacks": [[{"frame": 0, "module": "libxul.so",
                               "module_offset": "0x7a3a", "function": "main",
                               "function_offset": "0x1a", "file": "/src/main.c",
                               "line": 12, "inlines": [{"function": ..., "file": ..,
                                                        "line": ..}]}, ...]],
                  "found_modules": {"libxul.so/0905AE80...0": true, ...}}]}

A frame is `[module index, module offset]`; index -1 (or an offset of -1)
is a frame outside any module, answered with its offset only. A module is
found by its debug name and Breakpad debug ID (`stackmark.symbols.
debug_id`): among the local ELF places by build-ID prefix, then in the
Breakpad symbol stores, then on debuginfod servers by the 16 bytes the
debug ID keeps. `found_modules` says true (found), false (looked for, not
found) or null (not looked for: no frame needs it, or it has no name or
ID). `inlines` lists the inlined calls at the address, innermost first;
`function`, `file` and `line` are the outermost (physical) function's.

When a module's lookup is still running at the request's deadline (a slow
symbol server, a large conversion), the answer leaves its frames
unsymbolized and says so: `"partial": true` at the top and the module
under `"timed_out_modules"` in its job. The lookup goes on in the
background for the next request.

A request that does not have this shape, or exceeds the limits, raises
`RequestError` with a message in the reference service's words.
"""

from __future__ import annotations

from typing import Any

from stackmark.errors import StackmarkError
from stackmark.markup.naming import Naming
from stackmark.model import SourceFrame
from stackmark.plain import FrozenRecord
from stackmark.symbols.breakpad_store import check_module_name
from stackmark.symbols.deadline import Background, Deadline
from stackmark.symbols.debug_id import is_debug_id
from stackmark.symbols.debug_id_modules import DebugIdModules, FoundModule


class RequestError(StackmarkError):
    """A request the API refuses (HTTP 400); the message says why."""


class V5Limits(FrozenRecord):
    """The most one request may ask: jobs, modules per job, frames in all."""

    __slots__ = _fields = ("jobs", "modules", "frames")
    jobs: int
    modules: int
    frames: int

    def __init__(self, jobs: int = 10, modules: int = 1000, frames: int = 20000) -> None:
        object.__setattr__(self, "jobs", jobs)
        object.__setattr__(self, "modules", modules)
        object.__setattr__(self, "frames", frames)


Job = tuple[list[tuple[str, str]], list[list[tuple[int, int]]]]
"""(memory map of (debug name, debug ID), stacks of (module index, module offset))."""


def parse_request(payload: object, limits: V5Limits) -> list[Job]:
    """The jobs of a decoded JSON request body (RequestError when it is not one)."""
    if not isinstance(payload, dict):
        raise RequestError("job 0 is invalid")
    jobs = payload.get("jobs", [payload])
    if not isinstance(jobs, list):
        raise RequestError("jobs must be a list")
    if len(jobs) > limits.jobs:
        raise RequestError(f"please limit number of jobs in a single request to <= {limits.jobs}")
    parsed: list[Job] = []
    frames = 0
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise RequestError(f"job {i} is invalid")
        if "stacks" not in job:
            raise RequestError(f"job {i} is invalid: no stacks specified")
        if "memoryMap" not in job:
            raise RequestError(f"job {i} is invalid: no memoryMap specified")
        try:
            modules = _modules(job["memoryMap"], limits)
        except RequestError as exc:
            raise RequestError(f"job {i} has invalid modules: {exc}") from None
        try:
            stacks = _stacks(job["stacks"], len(modules))
        except RequestError as exc:
            raise RequestError(f"job {i} has invalid stacks: {exc}") from None
        frames += sum(len(stack) for stack in stacks)
        if frames > limits.frames:
            raise RequestError(
                f"please limit number of frames in a single request to <= {limits.frames}"
            )
        parsed.append((modules, stacks))
    return parsed


def _modules(value: object, limits: V5Limits) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        raise RequestError("modules must be a list")
    if len(value) > limits.modules:
        raise RequestError(f"please limit number of modules in a job to <= {limits.modules}")
    modules: list[tuple[str, str]] = []
    for i, item in enumerate(value):
        if not isinstance(item, list) or len(item) != 2:
            raise RequestError(f"module index {i} does not have a debug_filename and debug_id")
        name, debug_id = item
        # Empty strings are allowed (nothing is looked up for them); anything else
        # must be a plain file name and a hex ID: they become paths and URLs.
        if not isinstance(name, str) or (name and check_module_name(name, ANY_ID) is not None):
            raise RequestError(f"module index {i} has an invalid debug_filename")
        if not isinstance(debug_id, str) or not all(c in _HEX for c in debug_id):
            raise RequestError(f"module index {i} has an invalid debug_id")
        modules.append((name, debug_id))
    return modules


_HEX = frozenset("0123456789abcdefABCDEF")
ANY_ID = "0" * 33
"""A well-formed debug ID, for checking a name alone."""


def _stacks(value: object, module_count: int) -> list[list[tuple[int, int]]]:
    if not isinstance(value, list):
        raise RequestError("stacks must be a list of lists")
    if not value:
        raise RequestError("no stacks specified")
    stacks: list[list[tuple[int, int]]] = []
    for i, stack in enumerate(value):
        if not isinstance(stack, list):
            raise RequestError(f"stack {i} is not a list")
        frames: list[tuple[int, int]] = []
        for j, frame in enumerate(stack):
            if not isinstance(frame, list) or len(frame) != 2:
                raise RequestError(f"stack {i} frame {j} is not a list of two items")
            index, offset = frame
            if not isinstance(index, int) or isinstance(index, bool):
                raise RequestError(f"stack {i} frame {j} has an invalid module_index")
            if not -1 <= index < module_count:
                raise RequestError(f"stack {i} frame {j} has a module_index that isn't in modules")
            if (
                not isinstance(offset, int)
                or isinstance(offset, bool)
                or not -1 <= offset < 1 << 64
            ):
                raise RequestError(f"stack {i} frame {j} has an invalid module_offset")
            frames.append((index, offset))
        stacks.append(frames)
    return stacks


# ---------------------------------------------------------------------------
# Answering
# ---------------------------------------------------------------------------

_PENDING = object()


def symbolicate(
    jobs: list[Job],
    modules: DebugIdModules,
    naming: Naming,
    background: Background,
    deadline: Deadline,
) -> dict[str, Any]:
    """The v5 answer for `jobs` (see the module doc), by `deadline`."""
    results: list[dict[str, Any]] = []
    partial = False
    for memory_map, stacks in jobs:
        lookups: dict[int, object] = {}  # module index -> FoundModule | None | _PENDING
        timed_out: list[str] = []
        answered: list[list[dict[str, Any]]] = []
        for stack in stacks:
            frames_out: list[dict[str, Any]] = []
            for number, (index, offset) in enumerate(stack):
                name, debug_id = memory_map[index] if index >= 0 else ("", "")
                frame: dict[str, Any] = {
                    "frame": number,
                    "module": name or "<unknown>",
                    "module_offset": hex(offset),
                }
                frames_out.append(frame)
                if not name or not debug_id:
                    continue
                if index not in lookups:
                    lookups[index] = _look_up(modules, name, debug_id, background, deadline)
                    if lookups[index] is _PENDING:
                        timed_out.append(f"{name}/{debug_id}")
                found = lookups[index]
                if not isinstance(found, FoundModule) or offset < 0:
                    continue
                if deadline.passed():
                    partial = True
                    continue
                _fill(frame, found, offset, naming)
            answered.append(frames_out)
        result: dict[str, Any] = {
            "stacks": answered,
            "found_modules": {
                f"{name}/{debug_id}": _found_value(lookups.get(i, _PENDING))
                for i, (name, debug_id) in enumerate(memory_map)
            },
        }
        if timed_out:
            result["timed_out_modules"] = timed_out
            partial = True
        results.append(result)
    answer: dict[str, Any] = {"results": results}
    if partial:
        answer["partial"] = True
    return answer


def _look_up(
    modules: DebugIdModules, name: str, debug_id: str, background: Background, deadline: Deadline
) -> object:
    known, found = modules.known(name, debug_id)
    if known:
        return found
    if not is_debug_id(debug_id) or check_module_name(name, debug_id) is not None:
        return None
    done, found = background.wait(
        ("v5", name, debug_id.upper()), lambda: modules.find(name, debug_id), deadline
    )
    return found if done else _PENDING


def _found_value(lookup: object) -> bool | None:
    """True found, False looked for in vain, None not looked for (or not yet)."""
    if lookup is _PENDING:
        return None
    return lookup is not None


def _fill(frame: dict[str, Any], found: FoundModule, offset: int, naming: Naming) -> None:
    chain, symbol = found.frames(offset)
    if not chain:
        return
    outer = chain[-1]
    function = naming.function(outer)
    if function is None and symbol is not None:
        function = naming.data(symbol)
    if function is not None:
        frame["function"] = function
    if symbol is not None and symbol.start <= found.base + offset:
        frame["function_offset"] = hex(found.base + offset - symbol.start)
    _place(frame, naming, outer)
    if len(chain) > 1:
        inlines = []
        for inner in chain[:-1]:
            entry: dict[str, Any] = {"function": naming.function(inner)}
            _place(entry, naming, inner)
            inlines.append(entry)
        frame["inlines"] = inlines


def _place(entry: dict[str, Any], naming: Naming, source: SourceFrame) -> None:
    """`file`, and `line` when there is a file and a line (as the reference service)."""
    path = naming.file(source)
    if path:
        entry["file"] = path
        if source.line:
            entry["line"] = source.line
