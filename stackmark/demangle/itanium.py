"""Itanium C++ names (`_Z...`, clang's `___Z..._block_invoke`), printed as LLVM prints them.

The grammar is handled by libstdc++'s `__cxa_demangle`, called by the
compiled accelerator (`stackmark._native._demangle`) or else loaded by soname
with ctypes (the `cxxfilt` package is the fallback; importing it costs
~40 ms because it searches for the library). Its output is then brought
to LLVM's conventions, which is what llvm-symbolizer and llvm-cxxfilt
print:

    GNU                                   LLVM
    vector<int, allocator<int> >          vector<int, allocator<int>>
    operator<< <char>                     operator<<<char>
    {lambda(int)#1} / #2 / #3             'lambda'(int) / 'lambda0' / 'lambda1'
    {unnamed type#1} / #2                 'unnamed' / 'unnamed0'
    f(int)::{default arg#1}::...          f(int)::...
    {parm#1} / {parm#2}                   fp / fp0
    D<T>::Base(...)  (inheriting ctor)    D<T>::D(...)
    f<int>(int)::x   (local name)         void f<int>(int)::x
    decltype (x)                          decltype(x)
    decltype(nullptr)                     std::nullptr_t
    TLS init function for x               thread-local initialization routine for x
    TLS wrapper function for x            thread-local wrapper routine for x
    f() [clone .isra.0] [clone .cold]     f() (.isra.0.cold)

Clone suffixes are handled before libstdc++ sees the name: LLVM prints
everything from the first '.' after the encoding verbatim in parentheses.
Names LLVM does not demangle are left alone: transaction-safe clones
(`_ZGTt`), unresolved `std::` names in expressions (`srSt`), and
anything libstdc++ rejects.

Known differences that remain (rare; see tests/unit/test_demangle_itanium.py):
local names nested inside template arguments keep libstdc++'s form, C++20
template parameter declarations (`Tn`) and newer builtin types are not
understood by libstdc++ 12, and expressions inside decltype are
parenthesized GNU's way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stackmark._native import load

_Demangler = Callable[[str], "str | None"]
# The compiled `__cxa_demangle` call, or None (stackmark/_native): it spares the
# import of ctypes and libffi, 4% of a one-frame `stackmark symbolize`.
_native = load("_demangle")
_backend: _Demangler | None = None

# Patterns, compiled where a rare name first needs one (`re.compile` keeps them in
# re's cache): compiling all six at import cost 1% of a one-frame symbolize, and a
# plain substring test runs before each.
_CLOSURE = r"\{(lambda|unnamed type)"
_DEFAULT_ARG = r"::\{default arg#\d+\}"
_PARM = r"\{parm#(\d+)\}"
_BLOCK_TAIL = r"_block_invoke(?:_\d+|\d*)$"
# An unresolved name under `std::` in an expression: LLVM's parser rejects the name.
_LLVM_REJECTS = r"(?:X|cl|nt|aa|oo|eq|ne|lt|gt|le|ge)srSt\d"
_INHERITING_CTOR = r"CI[12345](?:St|N|S|\d)"


def ctypes_backend() -> _Demangler:
    """`__cxa_demangle` through ctypes (the reference the compiled call is tested
    against), or cxxfilt's when libstdc++ cannot be loaded."""
    try:
        import ctypes

        libstdcxx = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL(None)
        cxa_demangle = libstdcxx.__cxa_demangle
        cxa_demangle.restype = ctypes.c_void_p
        cxa_demangle.argtypes = [
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
        ]
        free = libc.free
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
    except (OSError, AttributeError):
        import cxxfilt

        def with_cxxfilt(name: str) -> str | None:
            try:
                return str(cxxfilt.demangle(name, external_only=False))
            except cxxfilt.Error:
                return None

        return with_cxxfilt

    def with_ctypes(name: str) -> str | None:
        try:
            raw = name.encode("utf-8")
        except UnicodeEncodeError:
            return None
        # No status pointer (allowed): a null result says all we need.
        pointer = cxa_demangle(raw, None, None, None)
        if not pointer:
            return None
        try:
            text = ctypes.string_at(pointer)
        finally:
            free(pointer)
        return text.decode("utf-8", "surrogateescape")

    return with_ctypes


def _gnu(name: str) -> str | None:
    if _native is not None:
        found: str | None = _native.cxa_demangle(name)
        return found
    global _backend
    if _backend is None:
        _backend = ctypes_backend()
    return _backend(name)


def is_itanium(name: str) -> bool:
    """LLVM's test: one to four underscores, then 'Z'."""
    pos = len(name) - len(name.lstrip("_"))
    return 0 < pos <= 4 and pos < len(name) and name[pos] == "Z"


def demangle_itanium(name: str) -> str | None:
    """`name` demangled as LLVM prints it, or None when LLVM would not demangle it."""
    if name.startswith("_Z"):
        if name.startswith("_ZGTt"):
            return None
        # LLVM prints everything after the encoding, from its '.', in parentheses. An
        # identifier may itself hold dots, so the encoding ends at the first dot after
        # which libstdc++ accepts what precedes it.
        if "srSt" in name and re.search(_LLVM_REJECTS, name):
            return None
        cut = name.find(".")
        while cut >= 0:
            text = _encoding(name[:cut])
            if text is not None:
                return f"{text} ({name[cut:]})"
            cut = name.find(".", cut + 1)
        return _encoding(name)
    if name.startswith(("___Z", "____Z")):
        return _block_invocation(name)
    return None


def qualified_name(name: str) -> str | None:
    """The scope-qualified name of the C++ function mangled as `name`, without its
    parameter list and what follows it (`shapes::Box::area` for `_ZNK6shapes3Box4areaEv`),
    or None when `name` is no `_Z` function encoding, or a clone's (`.cold`: the
    function's own name is not the clone's). A template function's return type stays
    in front."""
    if not name.startswith("_Z") or "." in name:
        return None
    text = _encoding(name)
    call = _top_level_call(text) if text is not None else -1
    return text[:call] if text is not None and call > 0 else None


def _encoding(name: str) -> str | None:
    """One `_Z` encoding (no clone suffix) in LLVM's style, or None."""
    text = _gnu(name)
    if text is None:
        return None
    if name.startswith("_ZZ"):
        text = _with_local_return_type(name, text)
    if "CI" in name and re.search(_INHERITING_CTOR, name):
        text = _inheriting_constructor(text)
    return _llvm_style(text)


def _with_local_return_type(name: str, text: str) -> str:
    """`_ZZ<encoding>E<entity>`: LLVM prints the encoding's return type (a function
    template has one) before the local name; libstdc++ does not. The encoding is found
    as the prefix whose own demangling, less a return type, starts `text`."""
    pos = name.find("E", 3)
    while pos >= 0:
        enclosing = _gnu("_Z" + name[3:pos])
        if enclosing is not None:
            if text.startswith(enclosing + "::"):
                return text
            space = enclosing.find(" ")
            while space >= 0:
                if text.startswith(enclosing[space + 1 :] + "::"):
                    return enclosing[: space + 1] + text
                space = enclosing.find(" ", space + 1)
        pos = name.find("E", pos + 1)
    return text


def _inheriting_constructor(text: str) -> str:
    """libstdc++ names an inheriting constructor after the base class; LLVM after the
    class it is declared in: `D<T>::Base(int)` -> `D<T>::D(int)`."""
    params = _top_level_call(text)
    if params < 0:
        return text
    parts = _split_scopes(text[:params])
    if len(parts) < 2:
        return text
    owner = parts[-2].split("<", 1)[0]
    ctor = parts[-1]
    args = ctor[ctor.find("<") :] if "<" in ctor else ""
    return "::".join([*parts[:-1], owner + args]) + text[params:]


def _top_level_call(text: str) -> int:
    """Index of the '(' opening the last top-level parameter list, or -1."""
    depth = 0
    last = -1
    for i, ch in enumerate(text):
        if ch in "<(":
            if ch == "(" and depth == 0:
                last = i
            depth += 1
        elif ch in ">)":
            depth -= 1
    return last


def _split_scopes(name: str) -> list[str]:
    """A qualified name split at its top-level '::'."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(name):
        ch = name[i]
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == ":" and depth == 0 and name.startswith("::", i):
            parts.append(name[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(name[start:])
    return parts


def _block_invocation(name: str) -> str | None:
    """`___Z<encoding>_block_invoke[_N|N]`: a clang block's invocation function."""
    body = name[3:] if name.startswith("___Z") else name[4:]
    tail = re.search(_BLOCK_TAIL, body)
    if tail is None:
        return None
    inner = demangle_itanium("_" + body[: tail.start()])
    if inner is None:
        return None
    return "invocation function for block in " + inner


def _llvm_style(text: str) -> str:
    while "> >" in text:
        text = text.replace("> >", ">>")
    text = text.replace("operator<< <", "operator<<<").replace("operator< <", "operator<<")
    if "{" in text:
        text = re.sub(_DEFAULT_ARG, "", text)
        text = re.sub(_PARM, lambda m: "fp" + _count(int(m.group(1))), text)
        text = _closures(text)
    text = text.replace("decltype (", "decltype(").replace("decltype(nullptr)", "std::nullptr_t")
    if text.startswith("TLS "):
        text = text.replace("TLS init function for ", "thread-local initialization routine for ", 1)
        text = text.replace("TLS wrapper function for ", "thread-local wrapper routine for ", 1)
    return text


def _count(number: int) -> str:
    """GNU numbers closures and parameters from 1; LLVM prints nothing for the first,
    then 0, 1, ..."""
    return "" if number <= 1 else str(number - 2)


def _closures(text: str) -> str:
    """{lambda(ARGS)#N} -> 'lambdaK'(ARGS) and {unnamed type#N} -> 'unnamedK'."""
    out: list[str] = []
    pos = 0
    while True:
        match = re.compile(_CLOSURE).search(text, pos)
        if match is None:
            out.append(text[pos:])
            return "".join(out)
        start = match.start()
        if match.group(1) == "unnamed type":
            close = text.find("}", match.end())
            number = text[match.end() + 1 : close] if close > 0 else ""
            if close < 0 or text[match.end()] != "#" or not number.isdigit():
                out.append(text[pos : match.end()])
                pos = match.end()
                continue
            out.append(text[pos:start] + "'unnamed" + _count(int(number)) + "'")
            pos = close + 1
            continue
        # {lambda(...)#N}: find the parenthesis closing the parameter list.
        params_at = match.end()
        if params_at >= len(text) or text[params_at] != "(":
            out.append(text[pos:params_at])
            pos = params_at
            continue
        depth = 0
        i = params_at
        while i < len(text):
            ch = text[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        tail = re.match(r"\)#(\d+)\}", text[i:])
        if tail is None:
            out.append(text[pos:params_at])
            pos = params_at
            continue
        params = text[params_at : i + 1]
        out.append(text[pos:start] + "'lambda" + _count(int(tail.group(1))) + "'" + params)
        pos = i + tail.end()
