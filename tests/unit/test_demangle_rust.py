"""Rust v0 and legacy names: stackmark.demangle against llvm-cxxfilt-19 and llvm-symbolizer-19.

The v0 names are built by hand to reach every production of RFC 2603 that
LLVM prints: paths, closures and shims, generic arguments, impl paths,
every basic type, arrays, slices, tuples, references, pointers, function
signatures with binders and ABIs, dyn traits with associated types,
constants of every kind, back references, punycode, suffixes, the
instantiating crate, and invalid inputs.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.demangle import demangle, demangle_symbol
from stackmark.demangle.rust import demangle_rust_legacy, demangle_rust_v0
from tests.conftest import require_tool
from tests.support.demangling import cxxfilt

V0_NAMES = [
    "_RNvCs1234_7mycrate4main",
    "_RNvNtCs1234_7mycrate6module8function",
    "_RNCNvCs1234_7mycrate4main0B3_",
    "_RINvCs1234_7mycrate3fooppE",
    "_RINvCs1234_7mycrate3fooahstlxnmyoijbcdefuvzE",
    "_RINvCs1_1a1bAhj4_SlTlETmhEE",
    "_RINvCs1_1a1bRL_lQlPlOlE",
    "_RINvCs1_1a1bFG_RL0_hEuFUKCEuFK9rust_callElE",
    "_RINvCs1_1a1bFG0_RL1_hRL0_tEuE",
    "_RINvCs1_1a1bDNtCs1_4core3AnyEL_E",
    "_RINvCs1_1a1bDNtCs1_4core8Iteratorp4ItemlEL_E",
    "_RINvCs1_1a1bDNtCs1_4core3AnyNtB9_4SendEL_E",
    "_RINvCs1_1a1bDG_NtCs1_4core3AnyEL0_E",
    "_RINvCs1_1a1bKj4_Kln10_Kb1_Kb0_Kc61_Kc27_Kc1f600_Ko123456789abcdef0123_KpE",
    "_RINvCs1_1a1bKc9_Kca_Kcd_Kc5c_Kc22_Kc7f_E",
    "_RNvMNtCs1_1a1bNtB4_1S3new",
    "_RNvMs_NtCs1_1a1bNtB6_1S3new",
    "_RNvXCs1_1aNtB2_1SNtNtCs2_4core5clone5Clone5clone",
    "_RNvYNtCs1_1a1SNtNtCs2_4core5clone5Clone5clone",
    "_RNSNvCs1_1a3foo6vtable",
    "_RNSNvCs1_1a3foo0",
    "_RNvCs1_1au7caf_dma",
    "_RNvCs1_1a1b.llvm.123",
    "_RNvCs1_1a1bCs2_1c",
    "_RINvCs1_1a1bINtB2_3VecmEE",
    "_RINvCs1_1a1bTEE",
    "_RINvCs1_1a1bB0_E",
    "_RNvNCNvCs1_1a4main0s0_1x",
    "_RNvNfCs1_1a1b1c",
    "_RNvCs1_1a2_0",
    # invalid: LLVM leaves these alone, and so must we
    "_R",
    "_RX",
    "_RNvC1a",
    "_RNvCs1_1a1bX",
    "_RINvCs1_1a1bB9_E",
    "_RINvCs1_1a1bKj04_E",
    "_RINvCs1_1a1bKbf_E",
    "_RINvCs1_1a1bRL0_lE",
    "_RNvCs1_1a3b",
    "_RNvCs1_1au3$$$",
]

LEGACY_NAMES = [
    "_ZN3std2rt10lang_start17h0123456789abcdefE",
    "_ZN4core3fmt3num52_$LT$impl$u20$core..fmt..Debug$u20$for$u20$usize$GT$3fmt17h2f1e8a4fc6a8d9c1E",
    "_ZN5alloc7raw_vec19RawVec$LT$T$C$A$GT$11allocate_in28_$u7b$$u7b$closure$u7d$$u7d$17hff0e6aa8c42c3a0eE",
    "_ZN3foo3bar17h05af221e174051e9E.llvm.8374",
    "_ZN12_GLOBAL__N_13foo17h05af221e174051e9E",
]


def markup_symbols(names: list[str]) -> list[str]:
    """What llvm-symbolizer-19 --filter-markup prints for {{{symbol:NAME}}}."""
    text = "".join(f"{{{{{{symbol:{n}}}}}}}\n" for n in names)
    out = subprocess.run(
        [require_tool("llvm-symbolizer-19"), "--filter-markup"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.splitlines()


def test_v0_names_match_llvm_cxxfilt() -> None:
    expected = cxxfilt(V0_NAMES)
    assert [demangle_symbol(n) for n in V0_NAMES] == expected
    valid = [n for n, e in zip(V0_NAMES, expected, strict=True) if e != n]
    assert len(valid) >= 28, "the constructed names should mostly be valid v0"


def test_v0_names_match_llvm_symbolizer_markup() -> None:
    assert [demangle(n) for n in V0_NAMES] == markup_symbols(V0_NAMES)


def test_legacy_names_match_llvm() -> None:
    assert [demangle_symbol(n) for n in LEGACY_NAMES] == cxxfilt(LEGACY_NAMES)
    assert [demangle(n) for n in LEGACY_NAMES] == markup_symbols(LEGACY_NAMES)


def test_legacy_demangler_only_takes_rust_shaped_names() -> None:
    assert demangle_rust_legacy("_ZN3std2rt10lang_start17h0123456789abcdefE") == (
        "std::rt::lang_start::h0123456789abcdef"
    )
    assert demangle_rust_legacy("_ZN3foo3barEv") is None  # a C++ function
    assert demangle_rust_legacy("_ZN3foo3barE") is None  # no hash
    assert demangle_rust_legacy("_ZN17h0123456789abcdefE") is None  # hash alone


@pytest.mark.parametrize("name", ["_RNvCs1_1a1b", "_RNvCs1_1au7caf_dma"])
def test_v0_demangler_entry_point(name: str) -> None:
    assert demangle_rust_v0(name) == cxxfilt([name])[0]
    assert demangle_rust_v0("_ZN1a1bE") is None


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(["_R", "_RNv", "_RIN", "_ZN", "_D", "_Z", "__Z", "___Z", "_Dmain"]),
    st.text(
        alphabet="0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.$@", max_size=40
    ),
)
def test_arbitrary_names_never_raise(prefix: str, rest: str) -> None:
    for name in (prefix + rest, rest):
        assert isinstance(demangle(name), str)
        assert isinstance(demangle_symbol(name), str)
