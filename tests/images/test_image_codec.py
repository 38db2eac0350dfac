"""The image codec (adapters_formats/images.py): what a seller uploads is decoded within
limits and encoded again; anything else is refused with a 400 or 413 naming why."""

from __future__ import annotations

import io
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters_formats.images import PNG_SIGNATURE, PillowImages
from licore.errors import InvalidRequest, LicoreError, PayloadTooLarge
from licore.images import MAX_IMAGE_BYTES, MAX_SIDE, STORED_SIDE, ImageKind

CODEC = PillowImages()


def made(kind: str, size: tuple[int, int] = (40, 30), mode: str = "RGB", **save: object
         ) -> bytes:
    image = Image.new(mode, size, (200, 40, 90) if mode == "RGB" else None)
    out = io.BytesIO()
    image.save(out, kind, **save)
    return out.getvalue()


def exif_bytes() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = "SpyCam Maker"  # Make
    exif[0x0131] = "secret-software"  # Software
    exif[0x0112] = 6  # Orientation: rotate 90 degrees to show
    return exif.tobytes()


def chunk(name: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + name + data + struct.pack(
        ">I", zlib.crc32(name + data) & 0xFFFFFFFF)


def test_a_png_and_a_jpeg_made_by_pillow_pass_as_what_they_are() -> None:
    png = CODEC.clean(made("PNG"), ImageKind.PNG)
    jpeg = CODEC.clean(made("JPEG"), None)
    assert (png.kind, png.width, png.height) == (ImageKind.PNG, 40, 30)
    assert (jpeg.kind, jpeg.width, jpeg.height) == (ImageKind.JPEG, 40, 30)
    assert Image.open(io.BytesIO(png.data)).format == "PNG"
    assert Image.open(io.BytesIO(jpeg.data)).format == "JPEG"


@pytest.mark.parametrize("options", [{"progressive": True}, {"optimize": True},
                                     {"restart_marker_blocks": 1}, {"subsampling": 0}])
def test_jpegs_of_every_common_layout_pass(options: dict[str, Any]) -> None:
    # Progressive scans, restart markers: the outline walk follows each to the end marker.
    clean = CODEC.clean(made("JPEG", (300, 200), **options), ImageKind.JPEG)
    assert (clean.width, clean.height) == (300, 200)


def test_exif_is_stripped_after_turning_the_picture_upright() -> None:
    sent = made("JPEG", (40, 30), exif=exif_bytes())
    assert b"SpyCam Maker" in sent
    clean = CODEC.clean(sent, ImageKind.JPEG)
    assert b"SpyCam Maker" not in clean.data and b"secret-software" not in clean.data
    stored = Image.open(io.BytesIO(clean.data))
    assert not stored.getexif() and "exif" not in stored.info
    assert (clean.width, clean.height) == (30, 40)  # orientation 6 applied, then dropped


def test_a_pngs_text_chunks_and_profile_are_not_kept() -> None:
    from PIL import PngImagePlugin
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "<script>alert(1)</script>")
    sent = made("PNG", pnginfo=info)
    clean = CODEC.clean(sent, ImageKind.PNG)
    assert b"<script>" in sent and b"<script>" not in clean.data
    assert b"tEXt" not in clean.data and b"iCCP" not in clean.data


def test_transparency_survives_in_a_png() -> None:
    clean = CODEC.clean(made("PNG", mode="RGBA"), ImageKind.PNG)
    assert Image.open(io.BytesIO(clean.data)).mode == "RGBA"


def test_a_large_picture_is_scaled_down_to_the_stored_side() -> None:
    clean = CODEC.clean(made("PNG", (STORED_SIDE * 2, STORED_SIDE)), None)
    assert (clean.width, clean.height) == (STORED_SIDE, STORED_SIDE // 2)


def refusal(data: bytes, declared: ImageKind | None = None) -> LicoreError:
    with pytest.raises(LicoreError) as caught:
        CODEC.clean(data, declared)
    return caught.value


def test_bytes_after_a_pngs_end_are_refused_as_a_possible_polyglot() -> None:
    error = refusal(made("PNG") + b"PK\x03\x04<html><script>alert(1)</script>")
    assert (error.status, error.code) == (400, "invalid_request")
    assert "after its end" in error.description


def test_bytes_after_a_jpegs_end_are_refused() -> None:
    error = refusal(made("JPEG") + b"<?php echo 1; ?>")
    assert error.status == 400 and "end marker" in error.description


def test_other_formats_and_a_wrong_declared_type_are_refused() -> None:
    for other in ("GIF", "BMP", "WEBP"):
        assert "not a PNG or JPEG" in refusal(made(other)).description
    assert "not a PNG or JPEG" in refusal(b"<svg onload=alert(1)>").description
    error = refusal(made("PNG"), ImageKind.JPEG)
    assert "sent as image/jpeg but is image/png" in error.description


def test_too_many_pixels_are_refused_before_decoding() -> None:
    # A header claiming 50,000 x 50,000 pixels over a few bytes of data: refused from the
    # header, before a decoder would allocate 7.5 GB.
    ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 50_000, 50_000, 8, 2, 0, 0, 0))
    bomb = PNG_SIGNATURE + ihdr + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(
        b"IEND", b"")
    error = refusal(bomb)
    assert error.status == 400 and "at most 4096 x 4096" in error.description
    wide = made("PNG", (MAX_SIDE + 1, 2))
    assert "at most 4096 x 4096" in refusal(wide).description


def test_an_upload_over_the_size_limit_is_refused_before_anything_reads_it() -> None:
    error = refusal(PNG_SIGNATURE + b"\0" * MAX_IMAGE_BYTES)
    assert isinstance(error, PayloadTooLarge) and error.status == 413


def test_a_cut_short_image_is_refused() -> None:
    png, jpeg = made("PNG"), made("JPEG")
    assert refusal(png[: len(png) // 2]).status == 400
    assert refusal(jpeg[: len(jpeg) // 2]).status == 400


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from([b"", PNG_SIGNATURE, b"\xff\xd8\xff"]))
def test_random_bytes_never_crash_the_codec(tail: bytes, head: bytes) -> None:
    try:
        clean = CODEC.clean(head + tail, None)
    except InvalidRequest:
        return
    Image.open(io.BytesIO(clean.data)).verify()  # whatever passes is a real image


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_damaged_real_images_never_crash_the_codec(data: st.DataObject) -> None:
    image = bytearray(made(data.draw(st.sampled_from(["PNG", "JPEG"]))))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(image) - 1))
        image[at] = data.draw(st.integers(0, 255))
    try:
        clean = CODEC.clean(bytes(image), None)
    except InvalidRequest:
        return
    Image.open(io.BytesIO(clean.data)).verify()
