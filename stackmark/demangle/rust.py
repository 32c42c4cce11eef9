"""Rust symbol names: the v0 scheme (RFC 2603) and the legacy scheme, as LLVM prints them.

v0 names (`_R...`) are decoded here with the output conventions of LLVM's
RustDemangle: crate roots print their name only (no disambiguator hash),
closures and shims as `{closure#N}` / `{shim:NAME#N}`, generic arguments
after `::<` outside types and `<` inside them, `<T as Trait>` impl paths,
`dyn`, `fn`, `for<'a>` binders, and constants (integers in decimal up to
64 bits, else hex; `true`/`false`; quoted chars). A `.suffix` is kept in
parentheses. The instantiating crate at the end is parsed and not shown.

Legacy names (`_ZN...17h<hash>E`) are Itanium nested names; LLVM prints
them with its Itanium demangler as `a::b::h0123456789abcdef`, escapes
such as `$LT$` left as they are. `demangle_rust_legacy` produces exactly
that without going through libstdc++.
"""

from __future__ import annotations

import re

_BASIC_TYPES = {
    "a": "i8",
    "b": "bool",
    "c": "char",
    "d": "f64",
    "e": "str",
    "f": "f32",
    "h": "u8",
    "i": "isize",
    "j": "usize",
    "l": "i32",
    "m": "u32",
    "n": "i128",
    "o": "u128",
    "p": "_",
    "s": "i16",
    "t": "u16",
    "u": "()",
    "v": "...",
    "x": "i64",
    "y": "u64",
    "z": "!",
}
_INTEGER_CONSTS = frozenset("ahstlxnmyoij")
_MAX_DEPTH = 500
_BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_U64 = (1 << 64) - 1


def demangle_rust_legacy(name: str) -> str | None:
    """`_ZN` <length><identifier>... `E` ending in a `h<16 hex digits>` hash, joined with
    `::`, any `.suffix` after the `E` kept in parentheses; None for anything else (the
    Itanium demangler handles other `_ZN` names). Identifiers may contain dots."""
    if not name.startswith("_ZN"):
        return None
    parts: list[str] = []
    pos = 3
    while pos < len(name) and name[pos] != "E":
        digits = pos
        while pos < len(name) and name[pos].isdigit():
            pos += 1
        if digits == pos or name[digits] == "0":
            return None
        length = int(name[digits:pos])
        if pos + length > len(name):
            return None
        parts.append(name[pos : pos + length])
        pos += length
    if pos >= len(name) or len(parts) < 2 or not re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        return None
    suffix = name[pos + 1 :]
    if suffix and not suffix.startswith("."):
        return None
    shown = [
        "(anonymous namespace)" if re.match(r"_GLOBAL_[._$]N", part) else part for part in parts
    ]
    text = "::".join(shown)
    return f"{text} ({suffix})" if suffix else text


def demangle_rust_v0(name: str) -> str | None:
    """A `_R` name demangled as LLVM prints it, or None when it is not valid v0."""
    if not name.startswith("_R"):
        return None
    body = name[2:]
    dot = body.find(".")
    text = body if dot < 0 else body[:dot]
    parser = _V0(text)
    try:
        parser.path(in_type=False)
        if parser.pos != len(text):
            parser.quiet += 1
            parser.path(in_type=False)  # the instantiating crate
            parser.quiet -= 1
        if parser.pos != len(text):
            return None
    except _Invalid:
        return None
    out = "".join(parser.out)
    if dot >= 0:
        out += f" ({body[dot:]})"
    return out


class _Invalid(Exception):
    """The input is not a valid v0 name."""


class _V0:
    """A recursive-descent reader of the v0 grammar that prints as it goes."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.out: list[str] = []
        self.quiet = 0  # > 0: parse without printing (impl paths, instantiating crate)
        self.depth = 0
        self.bound_lifetimes = 0

    # -- primitives ---------------------------------------------------------------

    def emit(self, s: str) -> None:
        if not self.quiet:
            self.out.append(s)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        if self.pos >= len(self.text):
            raise _Invalid("unexpected end")
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def eat(self, ch: str) -> bool:
        if self.pos < len(self.text) and self.text[self.pos] == ch:
            self.pos += 1
            return True
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth >= _MAX_DEPTH:
            raise _Invalid("too deep")

    def base62(self) -> int:
        """<base-62-number>: digits then '_', offset by one ('_' is 0)."""
        if self.eat("_"):
            return 0
        value = 0
        while True:
            ch = self.take()
            if ch == "_":
                break
            digit = _BASE62.find(ch)
            if digit < 0:
                raise _Invalid("bad base-62 digit")
            value = value * 62 + digit
            if value > _U64:
                raise _Invalid("overflow")
        if value + 1 > _U64:
            raise _Invalid("overflow")
        return value + 1

    def optional_base62(self, tag: str) -> int:
        """0 when `tag` is absent, else the number after it plus one."""
        if not self.eat(tag):
            return 0
        value = self.base62() + 1
        if value > _U64:
            raise _Invalid("overflow")
        return value

    def decimal(self) -> int:
        ch = self.peek()
        if not ch.isdigit() or not ch.isascii():
            raise _Invalid("expected a number")
        if ch == "0":
            self.pos += 1
            return 0
        start = self.pos
        while self.peek().isdigit() and self.peek().isascii():
            self.pos += 1
        value = int(self.text[start : self.pos])
        if value > _U64:
            raise _Invalid("overflow")
        return value

    def identifier(self) -> tuple[str, bool]:
        """<undisambiguated-identifier>: (bytes, is punycode)."""
        punycode = self.eat("u")
        length = self.decimal()
        self.eat("_")
        if length > len(self.text) - self.pos:
            raise _Invalid("identifier runs past the end")
        ident = self.text[self.pos : self.pos + length]
        self.pos += length
        if not all(c.isascii() and (c.isalnum() or c == "_") for c in ident):
            raise _Invalid("bad identifier character")
        return ident, punycode

    def emit_identifier(self, ident: str, punycode: bool) -> None:
        if self.quiet:
            return
        self.emit(_punycode(ident) if punycode else ident)

    def backref(self) -> int:
        """The position a back reference points to (checked to lie before it)."""
        target = self.base62()
        if target >= self.pos:
            raise _Invalid("forward back reference")
        return target

    def follow(self, target: int, parse: str, *args: object) -> object:
        if self.quiet:
            return False
        saved = self.pos
        self.pos = target
        try:
            return getattr(self, parse)(*args)
        finally:
            self.pos = saved

    # -- grammar ----------------------------------------------------------------------

    def path(self, in_type: bool, leave_open: bool = False) -> bool:
        """<path>; returns True when generic arguments were left open (dyn traits)."""
        self.enter()
        try:
            tag = self.take()
            if tag == "C":
                self.optional_base62("s")
                self.emit_identifier(*self.identifier())
            elif tag == "M":
                self.impl_path(in_type)
                self.emit("<")
                self.type()
                self.emit(">")
            elif tag == "X":
                self.impl_path(in_type)
                self.emit("<")
                self.type()
                self.emit(" as ")
                self.path(in_type=True)
                self.emit(">")
            elif tag == "Y":
                self.emit("<")
                self.type()
                self.emit(" as ")
                self.path(in_type=True)
                self.emit(">")
            elif tag == "N":
                namespace = self.take()
                if not (namespace.isascii() and namespace.isalpha()):
                    raise _Invalid("bad namespace")
                self.path(in_type)
                disambiguator = self.optional_base62("s")
                ident, punycode = self.identifier()
                if namespace.isupper():
                    kind = {"C": "closure", "S": "shim"}.get(namespace, namespace)
                    self.emit("::{" + kind)
                    if ident:
                        self.emit(":")
                        self.emit_identifier(ident, punycode)
                    self.emit(f"#{disambiguator}}}")
                elif ident:
                    self.emit("::")
                    self.emit_identifier(ident, punycode)
            elif tag == "I":
                self.path(in_type)
                if not in_type:
                    self.emit("::")
                self.emit("<")
                first = True
                while not self.eat("E"):
                    if not first:
                        self.emit(", ")
                    first = False
                    self.generic_arg()
                if leave_open:
                    return True
                self.emit(">")
            elif tag == "B":
                target = self.backref()
                return bool(self.follow(target, "path", in_type, leave_open))
            else:
                raise _Invalid("bad path")
            return False
        finally:
            self.depth -= 1

    def impl_path(self, in_type: bool) -> None:
        self.quiet += 1
        try:
            self.optional_base62("s")
            self.path(in_type)
        finally:
            self.quiet -= 1

    def generic_arg(self) -> None:
        if self.eat("L"):
            self.lifetime(self.base62())
        elif self.eat("K"):
            self.const()
        else:
            self.type()

    def lifetime(self, index: int) -> None:
        if index == 0:
            self.emit("'_")
            return
        if index - 1 >= self.bound_lifetimes:
            raise _Invalid("unbound lifetime")
        depth = self.bound_lifetimes - index
        self.emit("'" + (chr(ord("a") + depth) if depth < 26 else f"z{depth - 26 + 1}"))

    def type(self) -> None:
        self.enter()
        try:
            start = self.pos
            tag = self.take()
            basic = _BASIC_TYPES.get(tag)
            if basic is not None:
                self.emit(basic)
            elif tag == "A":
                self.emit("[")
                self.type()
                self.emit("; ")
                self.const()
                self.emit("]")
            elif tag == "S":
                self.emit("[")
                self.type()
                self.emit("]")
            elif tag == "T":
                self.emit("(")
                count = 0
                while not self.eat("E"):
                    if count:
                        self.emit(", ")
                    self.type()
                    count += 1
                if count == 1:
                    self.emit(",")
                self.emit(")")
            elif tag in "RQ":
                self.emit("&")
                if self.eat("L"):
                    index = self.base62()
                    if index:
                        self.lifetime(index)
                        self.emit(" ")
                if tag == "Q":
                    self.emit("mut ")
                self.type()
            elif tag == "P":
                self.emit("*const ")
                self.type()
            elif tag == "O":
                self.emit("*mut ")
                self.type()
            elif tag == "F":
                self.fn_sig()
            elif tag == "D":
                self.dyn_bounds()
                if not self.eat("L"):
                    raise _Invalid("dyn without lifetime")
                index = self.base62()
                if index:
                    self.emit(" + ")
                    self.lifetime(index)
            elif tag == "B":
                self.follow(self.backref(), "type")
            else:
                self.pos = start
                self.path(in_type=True)
        finally:
            self.depth -= 1

    def binder(self) -> None:
        count = self.optional_base62("G")
        if count == 0:
            return
        if count >= len(self.text) - self.bound_lifetimes:
            raise _Invalid("too many bound lifetimes")
        self.emit("for<")
        for i in range(count):
            self.bound_lifetimes += 1
            if i:
                self.emit(", ")
            self.lifetime(1)
        self.emit("> ")

    def fn_sig(self) -> None:
        saved = self.bound_lifetimes
        try:
            self.binder()
            if self.eat("U"):
                self.emit("unsafe ")
            if self.eat("K"):
                self.emit('extern "')
                if self.eat("C"):
                    self.emit("C")
                else:
                    ident, punycode = self.identifier()
                    if punycode:
                        raise _Invalid("punycode ABI")
                    self.emit(ident.replace("_", "-"))
                self.emit('" ')
            self.emit("fn(")
            first = True
            while not self.eat("E"):
                if not first:
                    self.emit(", ")
                first = False
                self.type()
            self.emit(")")
            if not self.eat("u"):
                self.emit(" -> ")
                self.type()
        finally:
            self.bound_lifetimes = saved

    def dyn_bounds(self) -> None:
        saved = self.bound_lifetimes
        try:
            self.emit("dyn ")
            self.binder()
            first = True
            while not self.eat("E"):
                if not first:
                    self.emit(" + ")
                first = False
                self.dyn_trait()
        finally:
            self.bound_lifetimes = saved

    def dyn_trait(self) -> None:
        open_ = self.path(in_type=True, leave_open=True)
        while self.eat("p"):
            self.emit(", " if open_ else "<")
            open_ = True
            self.emit(self.identifier()[0])
            self.emit(" = ")
            self.type()
        if open_:
            self.emit(">")

    def const(self) -> None:
        self.enter()
        try:
            tag = self.take()
            if tag in _INTEGER_CONSTS:
                if self.eat("n"):
                    self.emit("-")
                digits, value = self.hex_number()
                self.emit(str(value) if len(digits) <= 16 else "0x" + digits)
            elif tag == "b":
                digits, _ = self.hex_number()
                if digits not in ("0", "1"):
                    raise _Invalid("bad bool constant")
                self.emit("true" if digits == "1" else "false")
            elif tag == "c":
                digits, value = self.hex_number()
                if len(digits) > 6:
                    raise _Invalid("bad char constant")
                self.emit(_char_literal(value, digits))
            elif tag == "p":
                self.emit("_")
            elif tag == "B":
                self.follow(self.backref(), "const")
            else:
                raise _Invalid("bad constant")
        finally:
            self.depth -= 1

    def hex_number(self) -> tuple[str, int]:
        """<hex-number>: '0_' or lower-case hex digits (no leading zero) then '_'."""
        start = self.pos
        first = self.peek()
        if not first or first not in "0123456789abcdef":
            raise _Invalid("expected hex digits")
        if self.eat("0"):
            if not self.eat("_"):
                raise _Invalid("leading zero")
            return "0", 0
        while not self.eat("_"):
            ch = self.take()
            if ch not in "0123456789abcdef":
                raise _Invalid("bad hex digit")
        digits = self.text[start : self.pos - 1]
        return digits, int(digits, 16) & _U64


def _char_literal(code: int, digits: str) -> str:
    escapes = {0x09: "\\t", 0x0D: "\\r", 0x0A: "\\n", 0x5C: "\\\\", 0x22: '"', 0x27: "\\'"}
    if code in escapes:
        body = escapes[code]
    elif 0x20 <= code <= 0x7E:
        body = chr(code)
    else:
        body = "\\u{" + digits + "}"
    return "'" + body + "'"


def _punycode(ident: str) -> str:
    """Decode a Rust punycode identifier (RFC 3492, '_' as the delimiter)."""
    cut = ident.rfind("_")
    basic = list(ident[:cut]) if cut >= 0 else []
    rest = ident[cut + 1 :] if cut >= 0 else ident
    if any(not (c.isascii() and (c.isalnum() or c == "_")) for c in basic):
        raise _Invalid("bad punycode basic code point")
    out = basic
    base, tmin, tmax, skew = 36, 1, 26, 38
    bias, damp, n, i, pos = 72, 700, 0x80, 0, 0
    while pos < len(rest):
        old_i, weight, k = i, 1, base
        while True:
            if pos >= len(rest):
                raise _Invalid("truncated punycode")
            ch = rest[pos]
            pos += 1
            if "a" <= ch <= "z":
                digit = ord(ch) - ord("a")
            elif "0" <= ch <= "9":
                digit = 26 + ord(ch) - ord("0")
            else:
                raise _Invalid("bad punycode digit")
            i += digit * weight
            t = tmin if k <= bias else tmax if k >= bias + tmax else k - bias
            if digit < t:
                break
            weight *= base - t
            k += base
            if i > _U64 or weight > _U64:
                raise _Invalid("punycode overflow")
        points = len(out) + 1
        delta = (i - old_i) // damp
        damp = 2
        delta += delta // points
        k = 0
        while delta > ((base - tmin) * tmax) // 2:
            delta //= base - tmin
            k += base
        bias = k + ((base - tmin + 1) * delta) // (delta + skew)
        n += i // points
        i %= points
        if 0xD800 <= n <= 0xDFFF or n > 0x10FFFF:
            raise _Invalid("bad code point")
        out.insert(i, chr(n))
        i += 1
    return "".join(out)
