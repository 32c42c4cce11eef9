"""Symbol names demangled the way LLVM prints them (llvm-symbolizer, llvm-cxxfilt).

    demangle(name)          LLVM's llvm::demangle: what markup's {{{symbol}}} prints
    demangle_symbol(name)   what llvm-symbolizer prints for a function name
    qualified_name(name)    a C++ function's qualified name, without parameters

Both leave a name alone when LLVM would: versioned names (`_Znwm@GLIBCXX_3.4`,
`_Z1fv@plt`) and names LLVM's demanglers reject. Schemes:

* Itanium C++ (`_Z`, clang block invocations `___Z`): libstdc++ via
  ctypes, rewritten to LLVM's style (`stackmark.demangle.itanium`);
* Rust v0 (`_R`) and legacy (`_ZN...17h<hash>E`): `stackmark.demangle.rust`;
* D (`_D`): LLVM 19 demangles only a small subset (qualified names of
  `int` variables and artificial symbols, `_Dmain`); so does this module.
* Microsoft C++ (`?f@@YAXH@Z`, `.?AUS@@`), when no other scheme reads the
  name: `stackmark.demangle.msvc`. `demangle` prints the whole declaration
  (`void __cdecl f(int)`), `demangle_symbol` what llvm-symbolizer prints for a
  function (`f(int)`).

Nothing is imported until a name needs it, and results are cached.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType


@lru_cache(maxsize=1 << 14)
def demangle_symbol(name: str) -> str:
    """`name` as llvm-symbolizer prints it: LLVM's nonMicrosoftDemangle, else for a
    name that starts with `?` its Microsoft demangler (no access, calling convention,
    member type or return type), else unchanged."""
    found = _non_microsoft(name)
    if found is None and name.startswith("?"):
        from stackmark.demangle.msvc import demangle_msvc_function

        found = demangle_msvc_function(name)
    return found if found is not None else name


@lru_cache(maxsize=1 << 14)
def demangle(name: str) -> str:
    """`name` as llvm::demangle prints it: like `demangle_symbol`, and a name that fails
    is retried without one leading underscore (so `__Z3foov` reads `foo()`), then
    read as a Microsoft name."""
    found = _non_microsoft(name)
    if found is None and name.startswith("_"):
        found = _non_microsoft(name[1:])
    if found is None and name[:1] in ("?", "."):
        from stackmark.demangle.msvc import demangle_msvc

        found = demangle_msvc(name)
    return found if found is not None else name


def qualified_name(name: str) -> str | None:
    """The qualified name of the C++ function whose linkage name is `name`, without its
    parameters (`ns::Box::area` for `_ZNK2ns3Box4areaEv`): what DWARF, and so a GSYM
    file, names a function it gives no linkage name (GCC's file-local ones, `static` or
    in an anonymous namespace). None for a name that is not an Itanium C++ function's."""
    from stackmark.demangle.itanium import qualified_name as itanium_qualified_name

    return itanium_qualified_name(name)


_itanium: ModuleType | None = None
"""stackmark.demangle.itanium, once a name needs it (a `from` import inside the
function cost a microsecond or two per name)."""


def _non_microsoft(name: str) -> str | None:
    prefix = ""
    if name.startswith("."):
        prefix, name = ".", name[1:]
    result: str | None = None
    if len(name) < 2:
        return None
    if "_Z" in name[:5]:
        global _itanium
        if _itanium is None:
            from stackmark.demangle import itanium

            _itanium = itanium
        if _itanium.is_itanium(name):
            # A Rust legacy name ends in a 17-character hash component `h<16 hex>`.
            if name.startswith("_ZN") and "17h" in name:
                from stackmark.demangle.rust import demangle_rust_legacy

                result = demangle_rust_legacy(name)
            if result is None:
                result = _itanium.demangle_itanium(name)
    elif name.startswith("_R"):
        from stackmark.demangle.rust import demangle_rust_v0

        result = demangle_rust_v0(name)
    elif name.startswith("_D"):
        result = _demangle_d(name)
    return prefix + result if result is not None else None


def _demangle_d(name: str) -> str | None:
    """The subset of D names LLVM 19 demangles: `_Dmain`, and `_D` + qualified name +
    `Z` (artificial symbol) or `i` (an int variable), printed as `a.b.c`."""
    if name == "_Dmain":
        return "D main"
    text = name[2:]
    pos = 0
    parts: list[str] = []
    while pos < len(text):
        if text[pos] == "Q":  # back reference: distance back from the 'Q'
            q_index = pos + 2
            pos += 1
            back = 0
            while pos < len(text) and "A" <= text[pos] <= "Z":
                back = back * 26 + ord(text[pos]) - ord("A")
                pos += 1
            if pos >= len(text) or not "a" <= text[pos] <= "z":
                return None
            back = back * 26 + ord(text[pos]) - ord("a")
            pos += 1
            ref = _d_backref(name, q_index - back) if back > 0 else None
            if ref is None:
                return None
            parts.append(ref)
            continue
        if not text[pos].isdigit():
            break
        start = pos
        while pos < len(text) and text[pos].isdigit():
            pos += 1
        length = int(text[start:pos])
        if length == 0 or pos + length > len(text):
            return None
        parts.append(text[pos : pos + length])
        pos += length
    if not parts or text[pos:] not in ("Z", "i"):
        return None
    return ".".join(parts)


def _d_backref(name: str, target: int) -> str | None:
    """The identifier whose length prefix starts at `target` in `name`."""
    if not 0 <= target < len(name) or not name[target].isdigit():
        return None
    end = target
    while end < len(name) and name[end].isdigit():
        end += 1
    length = int(name[target:end])
    if length == 0 or end + length > len(name):
        return None
    return name[end : end + length]
