"""Microsoft C++ decorated names (`?f@@YAXH@Z`), spelled as LLVM 19 spells them.

The grammar itself is read by the `demangle` package (pure Python, no
dependencies), whose MSVC scheme follows LLVM's MicrosoftDemangle.cpp and
whose "llvm" style prints LLVM's spelling; tests/unit/test_demangle_msvc.py
holds it to llvm-undname-19 on every name of programs compiled for Windows at
test time. This module adds the two things LLVM does around the grammar:

* which parts are printed. `{{{symbol}}}` (llvm::demangle) prints the whole
  declaration, `public: static int __cdecl C::f(int)`; llvm-symbolizer names a
  function without access, calling convention, member type and return type,
  `C::f(int)` (LLVMSymbolizer::DemangleName's flags).
* what follows the name. LLVM's microsoftDemangle reads one decorated name and
  ignores the characters after it, except after a type descriptor name
  (`.?AUS@@`) or an RTTI type descriptor (`??_R0...@8`), which must end the
  input. The package reads whole names only, so a name it refuses is retried
  without its last characters, longest first.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_MAX_TRAILING = 64
"""How many trailing characters are dropped, at most, to find the name in front of
them: a bound on the retries a hostile name can cost (each is a full parse)."""

_MAX_LENGTH = 4096
"""Longer names are left alone, as a bound on the work one name can cost."""

_WHOLE_INPUT_ONLY = (".", "??_R0")
"""Prefixes of the names LLVM reads only when nothing follows them."""

_styles: dict[bool, Any] = {}


def _style(for_function: bool) -> Any:
    """The package's "llvm" style, narrowed for llvm-symbolizer's function names."""
    style = _styles.get(for_function)
    if style is None:
        import demangle as package

        if for_function:
            style = package.style(
                "llvm",
                msvc={
                    "access_specifier": False,
                    "calling_convention": False,
                    "member_type": False,
                    "return_type": False,
                },
            )
        else:
            style = package.style("llvm")
        _styles[for_function] = style
    return style


def _read_whole(name: str, style: Any) -> str | None:
    import demangle as package

    try:
        text: str = package.demangle_strict(name, language="msvc", style=style)
    except package.DemanglingError:
        return None
    return text


def _read(name: str, for_function: bool) -> str | None:
    if not name or len(name) > _MAX_LENGTH or name[0] not in "?.":
        return None
    style = _style(for_function)
    found = _read_whole(name, style)
    if found is not None or name.startswith(_WHOLE_INPUT_ONLY):
        return found
    for end in range(len(name) - 1, max(1, len(name) - _MAX_TRAILING - 1), -1):
        found = _read_whole(name[:end], style)
        if found is not None:
            return found
    return None


@lru_cache(maxsize=1 << 12)
def demangle_msvc(name: str) -> str | None:
    """`name` as llvm::demangle prints a Microsoft name (what `{{{symbol}}}` shows),
    or None when LLVM cannot read it."""
    return _read(name, for_function=False)


@lru_cache(maxsize=1 << 12)
def demangle_msvc_function(name: str) -> str | None:
    """`name` as llvm-symbolizer prints a function's Microsoft name (only names that
    start with `?`), or None when LLVM cannot read it."""
    if not name.startswith("?"):
        return None
    return _read(name, for_function=True)
