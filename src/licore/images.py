"""Product images (docs/web.md, "Product images"): the limits, the stored value and the
seller's commands. Decoding and re-encoding is an adapter's (`licore.ports.ImageCodec`);
the core only ever stores what the codec made, never the bytes the seller sent."""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from licore import bounds
from licore.errors import InvalidRequest

MAX_IMAGE_BYTES = 2 * 1024 * 1024  # an upload, checked before anything decodes it
MAX_SIDE = 4096  # the width and the height of an upload, each
MAX_PIXELS = MAX_SIDE * MAX_SIDE  # read from the header, before the pixels are decoded
STORED_SIDE = 1600  # a larger image is scaled down to fit a square of this side
MAX_IMAGES = 8  # per product
ALT = bounds.Text(max_len=200)  # empty: pages use the product's title


class ImageKind(enum.Enum):
    """The two formats taken; each is stored and served in the format it came in, so a
    transparent PNG stays transparent and a photo stays small."""

    PNG = "image/png"
    JPEG = "image/jpeg"

    @property
    def suffix(self) -> str:
        return "png" if self is ImageKind.PNG else "jpg"


@attrs.frozen
class CleanImage:
    """An upload once decoded and encoded again by the codec: the only bytes stored."""

    kind: ImageKind
    width: int
    height: int
    data: bytes = attrs.field(repr=False)


@attrs.frozen
class ProductImage:
    """One image of a product, in the order the store shows them (position 0 first). Its
    file is named by `sha256`, the digest of the stored bytes, so its address never serves
    other bytes and may be cached for good."""

    id: str
    product_id: str
    position: int
    sha256: str
    content_type: str
    width: int
    height: int
    size_bytes: int
    alt: str
    created_at: int

    @property
    def file_name(self) -> str:
        return f"{self.sha256}.{ImageKind(self.content_type).suffix}"


@attrs.frozen
class ImageFile:
    """What the image's address serves."""

    sha256: str
    content_type: str
    data: bytes = attrs.field(repr=False)


def _declared(instance: object, attribute: attrs.Attribute[str | None],
              value: str | None) -> None:
    if value is not None and value not in {k.value for k in ImageKind}:
        raise InvalidRequest("an image must be sent as image/png or image/jpeg",
                             "content_type")


@attrs.frozen
class AddImage:
    """A new image at the end of the product's list. `content_type` is what the sender
    said it is (None: not said); the bytes must then be of that format."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    data: bytes = attrs.field(repr=False)
    alt: str = attrs.field(default="", validator=ALT)
    content_type: str | None = attrs.field(default=None, validator=_declared)


@attrs.frozen
class ImagesOf:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)


@attrs.frozen
class RemoveImage:
    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    id: str = attrs.field(validator=bounds.IDENTIFIER)


@attrs.frozen
class DescribeImage:
    """A new text for people who cannot see the image (empty: the product's title)."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    id: str = attrs.field(validator=bounds.IDENTIFIER)
    alt: str = attrs.field(validator=ALT)


def _order(instance: object, attribute: attrs.Attribute[tuple[str, ...]],
           value: tuple[str, ...]) -> None:
    if len(value) > MAX_IMAGES or len(set(value)) != len(value):
        raise InvalidRequest(f"image_ids must name each of the product's images once "
                             f"(at most {MAX_IMAGES})", "image_ids")
    for image_id in value:
        bounds.IDENTIFIER.check("image_ids", image_id)


@attrs.frozen
class OrderImages:
    """The product's images in their new order: every one of them, each once."""

    product_id: str = attrs.field(validator=bounds.IDENTIFIER)
    image_ids: tuple[str, ...] = attrs.field(validator=_order)


def check_order(images: Sequence[ProductImage], order: Sequence[str]) -> None:
    """Refused unless `order` names exactly the product's images."""
    if sorted(order) != sorted(image.id for image in images):
        raise InvalidRequest("image_ids must name each of the product's images once",
                             "image_ids")


def reordered(images: Sequence[ProductImage],
              order: Sequence[str]) -> tuple[ProductImage, ...]:
    """The images named in `order` first, in that order (names of none skipped), then the
    rest as they were; positions renumbered from 0. What every store's `set_order` does."""
    by_id = {image.id: image for image in images}
    first = [by_id[i] for i in order if i in by_id]
    rest = [image for image in sorted(images, key=lambda i: i.position)
            if image.id not in set(order)]
    return tuple(attrs.evolve(image, position=n) for n, image in enumerate([*first, *rest]))


def moved(images: tuple[ProductImage, ...], image_id: str, step: int) -> tuple[str, ...]:
    """The ids in order once `image_id` moved `step` places (-1: earlier), as far as the
    ends allow: what the dashboard's arrows send."""
    ids = [image.id for image in images]
    if image_id not in ids:
        return tuple(ids)
    at = ids.index(image_id)
    to = min(max(at + step, 0), len(ids) - 1)
    ids.insert(to, ids.pop(at))
    return tuple(ids)
