"""Compact Image Map vectors (worked out by hand from the Swift
encoder's rules, CompactImageMap.swift), edge cases, rejections and round trips."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stackmark.errors import FormatError
from stackmark.formats.imagemap import (
    Image,
    ImageMap,
    ImageMapError,
    _varint,
    decode_image_map,
    encode_image_map,
)
from stackmark.model import Module, Segment


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def s(text: str) -> str:
    return text.encode().hex()


LINUX_TWO = ImageMap(
    "linux",
    [
        Image("libswiftCore.so", "/usr/lib/swift/linux/libswiftCore.so", h("deadbeef"),
              0x555555554000, 0x555555558000),
        Image("libFoundation.so", "/usr/lib/swift/linux/libFoundation.so", None,
              0x7FFFF7A00000, 0x7FFFF7A01000),
    ],
)  # fmt: skip
VECTORS = [
    ("no images", ImageMap("", []), "02 00 00"),
    (
        "prefixes: fixed /usr/lib, defined /swift/linux, and /lib inside a name",
        LINUX_TWO,
        "02 05" + s("linux") + "02"
        "29 55 55 55 55 40 00 40 00 04 de ad be ef 81 1c" + s("/swift/linux/libswiftCore.so") + "00"
        "29 7f ff f7 a0 00 00 10 00 00 81 a1 80 0d" + s("Foundation.so") + "00",
    ),
    (
        "framework, with no end byte",
        ImageMap("macOS", [Image("AppKit", "/System/Library/Frameworks/AppKit.framework/"
                                 "Versions/C/AppKit", None, 0x18A000000, 0x18A800000)]),
        "02 05 6d 61 63 4f 53 01 23 01 8a 00 00 00 00 80 00 00 00 84 45 43" + s("AppKit"),
    ),
    (
        "32-bit, sign-extended lengths, no path",
        ImageMap("linux", [Image(None, None, None, 0x8000, 0x9000),
                           Image("libc.so.6", "/lib/libc.so.6", None, 0xF7F00000, 0xF7F10000)], 32),
        "01 05" + s("linux") + "02 11 00 80 00 10 00 00 00 1a f7 f0 00 00 01 00 00 00 80 80 06"
        + s("c.so.6") + "00",
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("image_map", "data"), [v[1:] for v in VECTORS], ids=[v[0] for v in VECTORS]
)
def test_vectors_both_ways(image_map: ImageMap, data: str) -> None:
    assert encode_image_map(image_map).hex(" ") == h(data).hex(" ")
    decoded = decode_image_map(h(data))
    assert decoded.images == image_map.images
    assert decoded.platform == image_map.platform
    assert decoded.word_bits == image_map.word_bits
    assert decoded.warnings == []


@pytest.mark.parametrize(
    ("value", "data"),
    [(0, "00"), (64, "80 40"), (127, "80 7f"), (128, "81 00"), (700, "85 3c"),
     (16383, "80 ff 7f"), (16384, "81 80 00"), (65535, "83 ff 7f")],
)  # fmt: skip
def test_swift_varint_quirk(value: int, data: str) -> None:
    assert _varint(value) == h(data)


def test_decoder_accepts_the_documented_varint_too() -> None:
    """The doc's table writes 127 as 7f: 127 images with no paths."""
    body = "00 00 01 00 00" * 127
    decoded = decode_image_map(h("02 00 7f" + body))
    assert len(decoded.images) == 127


def test_long_paths_are_split_into_63_byte_strings() -> None:
    name = "x" * 100
    path = "/" + name
    data = encode_image_map(ImageMap("", [Image(name, path, None, 0x1000, 0x2000)]))
    assert data.endswith(h("3f") + path[:63].encode() + h("26") + path[63:].encode() + h("00"))
    assert decode_image_map(data).images[0].path == path


def test_windows_paths_define_prefixes_at_backslashes() -> None:
    images = [
        Image("a.dll", "C:\\Program Files\\App\\bin\\a.dll", None, 0x10000, 0x20000),
        Image("b.dll", "C:\\Program Files\\App\\bin\\b.dll", None, 0x30000, 0x40000),
    ]
    data = encode_image_map(ImageMap("windows", images))
    # Second path: fixed code 11, then code 33 ("\\App\\bin" of the first path's str data).
    assert h("8b a1 06") + b"\\b.dll" + h("00") in data
    assert decode_image_map(data).images == images


def test_prefix_codes_past_63_use_the_extended_form() -> None:
    deep = "/" + "/".join(f"d{i:02}" for i in range(40))
    images = [
        Image("one", deep + "/one", None, 0x10000, 0x20000),
        Image("two", deep + "/two", None, 0x30000, 0x40000),
    ]
    data = encode_image_map(ImageMap("", images))
    # 40 prefixes were defined (codes 32..71); the longest is code 71 = 64 + 7.
    assert h("c0 07 04") + b"/two" + h("00") in data
    assert decode_image_map(data).images == images


def test_shallow_framework_version_byte() -> None:
    data = h("02 00 01 00 00 01 00 42 01") + b"Foo"
    assert decode_image_map(data).images[0].path == "/Foo.framework/Foo"


def test_addresses_are_masked_to_the_word_size() -> None:
    """Swift's decoder leaves sign-extension bits set in 16/32-bit maps; we do not."""
    data = h("01 00 01 18 f7 f0 00 00 10 00 00")
    image = decode_image_map(data).images[0]
    assert (image.base, image.end_of_text) == (0xF7F00000, 0xF7F00010)


REJECTED = [
    ("empty", "", "data ends before the info byte"),
    ("version 1", "04 00 00", "unsupported info byte 0x04"),
    ("size 3", "03 00 00", "unsupported info byte 0x03"),
    ("ends after the info byte", "02", "data ends before the platform length"),
    ("short platform", "02 05 6c 69", "data ends inside the platform string"),
    ("platform not UTF-8", "02 02 c3 28 00", "platform string is not valid UTF-8"),
    ("too many images", "02 00 c0 80 81", "image count exceeds 1048576"),
    ("build ID too long", "02 00 01 00 00 01 88 01", "build ID length of image 0 exceeds 1024"),
    ("end of text at the base", "02 00 01 00 10 00 00 00", "end of text is 0 bytes"),
    ("end of text below the base", "02 00 01 00 10 ff 00 00", "end of text is -1 bytes"),
    (
        "fewer images than declared",
        "02 00 02 00 00 01 00 00",
        "data ends before the header of image 1",
    ),
]


@pytest.mark.parametrize(
    ("data", "message"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_rejected_maps(data: str, message: str) -> None:
    with pytest.raises(FormatError) as info:
        decode_image_map(h(data), source="map.cif")
    assert message in str(info.value)
    assert str(info.value).startswith("map.cif: offset 0x")


@pytest.mark.parametrize(
    ("path_bytes", "warning"),
    [
        ("9f 00", "undefined prefix code 31"),
        ("c1 ff ff 00", "undefined prefix code 65599"),
        ("03 2f c3 28 00", "not valid UTF-8"),
        ("05 2f 61", "data ends inside the path string"),
    ],
)
def test_undecodable_path_loses_only_the_path(path_bytes: str, warning: str) -> None:
    data = h("02 00 01 00 10 01 02 ab cd" + path_bytes)
    decoded = decode_image_map(data)
    image = decoded.images[0]
    assert (image.path, image.name, image.base, image.end_of_text, image.build_id) == (
        None, None, 0x10, 0x11, h("ab cd"),
    )  # fmt: skip
    assert len(decoded.warnings) == 1 and warning in decoded.warnings[0]


def test_a_lost_path_keeps_the_next_image_in_step() -> None:
    data = h("02 00 0200 10 01 00 9f 0000 20 01 00 04" + s("/foo") + "00")
    images = decode_image_map(data).images
    assert [(i.path, i.base) for i in images] == [(None, 0x10), ("/foo", 0x20)]


def test_encoder_refuses_impossible_images() -> None:
    with pytest.raises(ImageMapError, match="below its base"):
        encode_image_map(ImageMap("", [Image("a", "/a", None, 0x2000, 0x1000)]))
    with pytest.raises(ImageMapError, match="does not fit in 32 bits"):
        encode_image_map(ImageMap("", [Image("a", "/a", None, 1 << 32, (1 << 32) + 1)], 32))
    with pytest.raises(ImageMapError, match="at most 255"):
        encode_image_map(ImageMap("x" * 256, []))


def test_modules_round_trip_through_images() -> None:
    module = Module(3, "libfoo.so", "0a1b", [Segment(0x7000, 0x1000, "r", 0),
                                               Segment(0x8000, 0x3000, "rx", 0x1000),
                                               Segment(0xB000, 0x1000, "rw", 0x4000)],
                    path="/opt/foo/libfoo.so")  # fmt: skip
    image = Image.from_module(module)
    assert (image.base, image.end_of_text, image.build_id) == (0x7000, 0xB000, h("0a1b"))
    back = image.to_module(3)
    assert back.segments == [Segment(0x7000, 0x4000, "rx", 0)]
    assert (back.name, back.build_id, back.path) == ("libfoo.so", "0a1b", "/opt/foo/libfoo.so")


names = st.text(alphabet="abcXYZ_.-0189", min_size=1, max_size=12)
directories = st.sampled_from(
    [
        "/lib",
        "/usr/lib",
        "/usr/local/lib",
        "/opt/app",
        "/home/u/build",
        "/usr/lib/x86_64-linux-gnu",
        "C:\\Program Files\\X",
        "/libexec",
    ]
)


@st.composite
def image_maps(draw: st.DrawFn) -> ImageMap:
    bits = draw(st.sampled_from((16, 32, 64)))
    top = (1 << bits) - 1
    images = []
    for _ in range(draw(st.integers(0, 6))):
        base = draw(st.integers(0, top - 1))
        end = draw(st.integers(base + 1, min(top, base + (1 << 63) - 1)))
        name = draw(names)
        has_path = draw(st.booleans())
        separator = "\\" if draw(st.booleans()) else "/"
        path = draw(directories) + separator + name if has_path else None
        build_id = draw(st.one_of(st.none(), st.binary(min_size=1, max_size=32)))
        images.append(
            Image(path and path.replace("\\", "/").rsplit("/", 1)[-1], path, build_id, base, end)
        )
    return ImageMap(draw(st.text(max_size=20)), images, bits)


@given(image_maps())
@settings(max_examples=200)
def test_round_trip(image_map: ImageMap) -> None:
    decoded = decode_image_map(encode_image_map(image_map))
    assert decoded.images == image_map.images
    assert (decoded.platform, decoded.word_bits) == (image_map.platform, image_map.word_bits)


@given(st.binary(max_size=80))
@settings(max_examples=300)
def test_decoder_only_raises_format_errors(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        decode_image_map(data)
