"""Product images with Pillow (`licore.ports.ImageCodec`): a seller's upload is checked
before it is decoded, decoded within limits, and encoded again, so what is stored and
served holds its pixels and nothing else of the upload (docs/web.md, "Product images").

The order matters: the size is checked first (no decoder sees more than 2 MiB), then the
signature and the file's outline (a PNG's chunks must end at IEND, a JPEG at its end
marker: bytes appended after an image, the usual polyglot, are refused), then the
header's dimensions (before a single pixel is decoded: a 50,000 x 50,000 PNG compresses
to a few kilobytes), and only then the pixels."""

from __future__ import annotations

import io
import struct
import warnings

from PIL import Image, ImageOps

from licore.errors import InvalidRequest, PayloadTooLarge
from licore.images import MAX_IMAGE_BYTES, MAX_PIXELS, MAX_SIDE, STORED_SIDE, CleanImage, ImageKind

# Pillow's own guard (a warning past it, an error past twice it), set to ours so that a
# header read by a path other than the check below still stops there.
Image.MAX_IMAGE_PIXELS = MAX_PIXELS

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_START = b"\xff\xd8\xff"
JPEG_END = b"\xff\xd9"
JPEG_QUALITY = 88
_FORMATS = {ImageKind.PNG: {"PNG"}, ImageKind.JPEG: {"JPEG", "MPO"}}  # MPO: phone JPEGs


def kind_of(data: bytes) -> ImageKind:
    if data.startswith(PNG_SIGNATURE):
        return ImageKind.PNG
    if data.startswith(JPEG_START):
        return ImageKind.JPEG
    raise InvalidRequest("the file is not a PNG or JPEG image", "file")


def png_outline(data: bytes) -> None:
    """Walk the chunks: each must fit, and IEND must be the last bytes of the file."""
    at = len(PNG_SIGNATURE)
    while at + 12 <= len(data):
        length, name = struct.unpack(">I4s", data[at:at + 8])
        end = at + 12 + length
        if end > len(data) or not name.isalpha():
            break
        if name == b"IEND":
            if end != len(data):
                raise InvalidRequest("the PNG has bytes after its end (IEND): not taken, "
                                     "since they may be another file hidden in it", "file")
            return
        at = end
    raise InvalidRequest("the PNG is damaged or cut short", "file")


def jpeg_outline(data: bytes) -> None:
    """Walk the segments from the start marker: each header segment by its length (an EXIF
    thumbnail's own end marker inside one is skipped with it), each scan's coded data to
    the next marker; the end marker reached this way must be the last bytes of the file."""
    at = len(JPEG_START) - 1
    while at + 2 <= len(data) and data[at] == 0xFF:
        marker = data[at + 1]
        if marker == 0xD9:  # the image's end
            if at + 2 != len(data):
                raise InvalidRequest("the JPEG has bytes after its end marker: not taken, "
                                     "since they may be another file hidden in it", "file")
            return
        if marker == 0xFF or 0xD0 <= marker <= 0xD7 or marker == 0x01:
            at += 1 if marker == 0xFF else 2  # a fill byte, or a marker without a length
            continue
        length = int.from_bytes(data[at + 2:at + 4], "big")
        if length < 2 or at + 4 > len(data):
            break
        at += 2 + length
        if marker == 0xDA:  # a scan: its coded data runs to the next marker
            at = _scan_end(data, at)
    raise InvalidRequest("the JPEG is damaged or cut short", "file")


def _scan_end(data: bytes, at: int) -> int:
    """Where a scan's coded data ends: the first 0xFF that is neither a stuffed zero nor a
    restart marker."""
    while True:
        at = data.find(b"\xff", at)
        if at < 0 or at + 1 >= len(data):
            return len(data)
        following = data[at + 1]
        if following == 0x00 or 0xD0 <= following <= 0xD7:
            at += 2
        elif following == 0xFF:
            at += 1
        else:
            return at


def _check_dimensions(width: int, height: int) -> None:
    if width > MAX_SIDE or height > MAX_SIDE or width * height > MAX_PIXELS:
        raise InvalidRequest(f"the image is {width} x {height} pixels; at most {MAX_SIDE} x "
                             f"{MAX_SIDE} are taken", "file")
    if width < 1 or height < 1:
        raise InvalidRequest("the image has no pixels", "file")


def _decoded(data: bytes, kind: ImageKind) -> Image.Image:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data), formats=sorted(_FORMATS[kind]))
            if image.format not in _FORMATS[kind]:
                raise InvalidRequest("the file is not a PNG or JPEG image", "file")
            _check_dimensions(*image.size)
            image.load()
            # The pixels as the camera meant them to be seen, before the EXIF goes.
            return ImageOps.exif_transpose(image)
        except InvalidRequest:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            # Pillow's own check of the header's dimensions, before our look at them.
            raise InvalidRequest(f"the image has more than {MAX_PIXELS:,} pixels; at most "
                                 f"{MAX_SIDE} x {MAX_SIDE} are taken", "file") from None
        except Exception:
            raise InvalidRequest(f"the file is not a valid {kind.suffix.upper()} image "
                                 "(damaged, cut short or too large to decode)",
                                 "file") from None


def _encoded(image: Image.Image, kind: ImageKind) -> bytes:
    alpha = kind is ImageKind.PNG and (image.mode in {"RGBA", "LA", "PA"}
                                       or "transparency" in image.info)
    mode = "RGBA" if alpha else "RGB"
    pixels = image if image.mode == mode else image.convert(mode)
    # A box reduction by a whole factor first, then Lanczos for the rest: a 4096-pixel
    # side takes about a third of the time of Lanczos alone, with no difference to see.
    pixels.thumbnail((STORED_SIDE, STORED_SIDE), Image.Resampling.LANCZOS, reducing_gap=1.0)
    # A new image of the pixels alone: no EXIF, ICC profile, text chunks or comments
    # of the upload can ride along into the saved file.
    bare = Image.frombytes(pixels.mode, pixels.size, pixels.tobytes())
    out = io.BytesIO()
    if kind is ImageKind.PNG:
        # zlib's default level, not `optimize`: on a detailed picture that is four times
        # the time for a fifth less size (bench/images.py).
        bare.save(out, "PNG")
    else:
        bare.save(out, "JPEG", quality=JPEG_QUALITY, optimize=True)
    return out.getvalue()


class PillowImages:
    """`licore.ports.ImageCodec` with Pillow."""

    def clean(self, data: bytes, declared: ImageKind | None) -> CleanImage:
        if len(data) > MAX_IMAGE_BYTES:
            raise PayloadTooLarge(f"an image may be at most {MAX_IMAGE_BYTES // 1024 // 1024} "
                                  "MiB")
        kind = kind_of(data)
        if declared is not None and declared is not kind:
            raise InvalidRequest(f"the file was sent as {declared.value} but is "
                                 f"{kind.value}", "file")
        if kind is ImageKind.PNG:
            png_outline(data)
        else:
            jpeg_outline(data)
        image = _decoded(data, kind)
        encoded = _encoded(image, kind)
        width, height = Image.open(io.BytesIO(encoded)).size
        return CleanImage(kind, width, height, encoded)
