"""JSON records for `--output-style=json`: one object per element, with its resolution.

Addresses are strings (`"0x..."`), since JSON numbers lose precision above
2^53. Lines and columns are 1-based (characters, not bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stackmark.markup.context import MarkupContext, Placement
from stackmark.markup.diagnostics import Diagnostic
from stackmark.markup.naming import Naming
from stackmark.markup.resolve import CodeResult, DataResult
from stackmark.markup.syntax import Element
from stackmark.model import DataSymbol, Module, SourceFrame
from stackmark.symbols.api import ModuleResolution

Record = dict[str, Any]


def hex_(value: int) -> str:
    return f"0x{value:x}"


def diagnostic(diag: Diagnostic) -> Record:
    out: Record = {
        "severity": diag.severity.value,
        "message": diag.message,
        "code": diag.code,
        "line": diag.line + 1,
    }
    if diag.column is not None:
        out["column"] = diag.column + 1
    return out


def element(el: Element, source: str, diags: Sequence[Diagnostic]) -> Record:
    return {
        "source": source,
        "line": el.line + 1,
        "column": el.start + 1,
        "end_line": el.end_line + 1,
        "end_column": el.end + 1,
        "tag": el.tag,
        "text": el.text,
        "diagnostics": [diagnostic(d) for d in diags],
    }


def module(m: Module) -> Record:
    return {"id": m.id, "name": m.name, "type": "elf", "build_id": m.build_id}


def context(ctx: MarkupContext) -> Record:
    """The whole layout (for `dumpfile`, whose consumer needs it)."""
    return {
        "modules": [module(m) for m in ctx.modules.values()],
        "segments": [
            {
                "module": mp.module.id,
                "start": hex_(mp.segment.start),
                "size": hex_(mp.segment.size),
                "mode": mp.segment.mode,
                "module_relative": hex_(mp.segment.module_relative),
            }
            for mp in ctx.mappings
        ],
    }


def symbols(resolution: ModuleResolution | None, error: str | None) -> Record | None:
    if resolution is None and error is None:
        return None
    return {
        "file": resolution.binary if resolution else None,
        "error": error,
    }


def placement(p: Placement | None) -> Record:
    if p is None:
        return {"module": None}
    return {
        "module": module(p.module),
        "segment": {
            "start": hex_(p.segment.start),
            "size": hex_(p.segment.size),
            "mode": p.segment.mode,
            "module_relative": hex_(p.segment.module_relative),
        },
        "module_relative_address": hex_(p.module_relative),
    }


def frame(f: SourceFrame, naming: Naming, inlined: bool) -> Record:
    return {
        "function": naming.function(f),
        "linkage_name": f.linkage_name,
        "name": f.name,
        "file": naming.file(f),
        "line": f.line,
        "column": f.column,
        "inlined": inlined,
    }


def code(result: CodeResult, naming: Naming) -> Record:
    out = placement(result.placement)
    out["lookup_address"] = hex_(result.address)
    out["symbols"] = symbols(result.resolution, result.error)
    last = len(result.frames) - 1
    out["frames"] = [frame(f, naming, i != last) for i, f in enumerate(result.frames)]
    return out


def data_symbol(sym: DataSymbol | None, address: int, naming: Naming) -> Record | None:
    if sym is None:
        return None
    return {
        "name": naming.data(sym),
        "linkage_name": sym.name,
        "start": hex_(sym.start),
        "size": sym.size,
        "offset": address - sym.start,
    }


def data(result: DataResult, naming: Naming) -> Record:
    out = placement(result.placement)
    out["lookup_address"] = hex_(result.address)
    out["symbols"] = symbols(result.resolution, result.error)
    relative = result.placement.module_relative if result.placement else result.address
    out["symbol"] = data_symbol(result.symbol, relative, naming)
    return out
