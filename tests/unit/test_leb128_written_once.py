"""LEB128 is decoded and encoded in one module, stackmark/binary.py.

The test reads every module of the package and looks for the shapes a
LEB128 coder has; the compiled kernels in stackmark/_native are C and keep
their own differential tests (tests/unit/test_native*.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "stackmark"


def _is_seven_bit_mask(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.BitAnd)
        and isinstance(node.right, ast.Constant)
        and node.right.value == 0x7F
    )


def _codes_leb128(function: ast.AST) -> bool:
    """The shapes of every LEB128 decoder and encoder: seven bits shifted
    into place by a computed amount (`(byte & 0x7F) << shift`), or a value
    consumed seven bits at a time (`value >>= 7`, `value >> 7 * i`) beside a
    `& 0x7F`. A big-endian base-128 varint (the image map's) shifts its
    accumulator by a constant 7 and walks its shift downwards: not matched."""
    masks = shifts_out = False
    for node in ast.walk(function):
        if _is_seven_bit_mask(node):
            masks = True
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.LShift)
            and _is_seven_bit_mask(node.left)
            and not isinstance(node.right, ast.Constant)
        ):
            return True  # a decoder
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.RShift)
            and isinstance(node.value, ast.Constant)
            and node.value.value == 7
        ) or (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.RShift)
            and isinstance(node.right, ast.BinOp)
            and isinstance(node.right.op, ast.Mult)
            and isinstance(node.right.left, ast.Constant)
            and node.right.left.value == 7
        ):
            shifts_out = True
    return masks and shifts_out  # an encoder


def leb128_coders(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _codes_leb128(node):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def test_the_leb128_detector_finds_a_decoder(tmp_path: Path) -> None:
    package = tmp_path / "stackmark"
    package.mkdir()
    (package / "stray.py").write_text(
        "def decode(data, pos):\n"
        "    value = shift = 0\n"
        "    while True:\n"
        "        byte = data[pos]\n"
        "        pos += 1\n"
        "        value |= (byte & 0x7F) << shift\n"
        "        shift += 7\n"
        "        if byte < 0x80:\n"
        "            return value, pos\n"
    )
    (package / "encode.py").write_text(
        "def encode(value, out):\n"
        "    while value >= 0x80:\n"
        "        out.append(value & 0x7F | 0x80)\n"
        "        value >>= 7\n"
        "    out.append(value)\n"
    )
    (package / "varint.py").write_text(
        "def big_endian(data):\n"
        "    value = 0\n"
        "    for byte in data:\n"
        "        value = (value << 7) | (byte & 0x7F)\n"
        "    return value\n"
    )
    assert leb128_coders(package) == ["stackmark/encode.py:1 encode", "stackmark/stray.py:1 decode"]


def test_leb128_is_coded_only_in_stackmark_binary() -> None:
    found = leb128_coders(PACKAGE)
    assert [entry for entry in found if not entry.startswith("stackmark/binary.py:")] == []
    assert len(found) >= 8  # the detector still sees binary.py's own
