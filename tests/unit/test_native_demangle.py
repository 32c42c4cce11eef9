"""The compiled `__cxa_demangle` call (`stackmark._native._demangle`) against the
ctypes call it replaces (`stackmark.demangle.itanium.ctypes_backend`).

Both ask the same libstdc++, so the results must be equal for every name: the
exports of libstdc++ itself, names libstdc++ rejects, and strings no
demangler expects (empty, embedded NUL, lone surrogates, non-ASCII).
"""

from __future__ import annotations

import pytest

from stackmark._native import forced_pure, load
from stackmark.demangle.itanium import ctypes_backend
from tests.unit.test_demangle_itanium import library_names

pytestmark = pytest.mark.skipif(
    forced_pure(), reason="STACKMARK_PURE=1: no compiled kernel to compare with"
)

ODD_NAMES = [
    "",
    "_Z",
    "_Z3foov",
    "_Z3foo\x00v",
    "_Z3f\udc80v",
    "_Z1\u00e9v",
    "_ZN3\u00e9\u00e9\u00e9E",
    "main",
    "_ZNKSt6vectorIiSaIiEE4sizeEv",
    "_Z" + "N3abc" * 200 + "E",
    "_ZZ4mainENKUlvE_clEv",
]


def test_compiled_call_equals_ctypes_on_library_and_odd_names() -> None:
    native = load("_demangle")
    assert native is not None
    reference = ctypes_backend()
    names = library_names("/usr/lib/x86_64-linux-gnu/libstdc++.so.6") + ODD_NAMES
    assert len(names) > 3000
    differ = [(n, native.cxa_demangle(n), reference(n)) for n in names]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ, differ[:3]
    assert native.cxa_demangle("_Z3foov") == "foo()"
    assert native.cxa_demangle("main") is None


def test_compiled_call_rejects_what_is_not_a_string() -> None:
    native = load("_demangle")
    assert native is not None
    with pytest.raises(TypeError):
        native.cxa_demangle(b"_Z3foov")
