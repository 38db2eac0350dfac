"""A product's images (docs/web.md, "Product images"): the seller adds, removes and orders
them (acting for the studio: another studio's product is `not_found`), and the store shows
them. What is stored is what the codec made of the upload, never the upload itself."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import attrs

from licore import images as im
from licore.actors import ActingStudio
from licore.errors import AlreadyExists, InvalidRequest, NotFound, PayloadTooLarge
from licore.ports import Clock, ImageCodec, Offload
from licore.services.ids import Ids
from licore.services.products import own_product
from licore.storage_ports import ImageRefused, Storage

# Inside the stored file's name and the served address: only a digest's characters.
_HEX = frozenset("0123456789abcdef")


class NoImages:
    """The codec of an install that takes no product images."""

    def clean(self, data: bytes, declared: im.ImageKind | None) -> im.CleanImage:
        raise InvalidRequest("this server takes no product images", "file")


@attrs.frozen
class ProductImages:
    storage: Storage
    clock: Clock
    ids: Ids
    codec: ImageCodec
    offload: Offload

    async def list(self, studio: ActingStudio,
                   command: im.ImagesOf) -> tuple[im.ProductImage, ...]:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            return tuple(await uow.images.of_product(command.product_id))

    async def add(self, studio: ActingStudio, command: im.AddImage) -> im.ProductImage:
        """Checked and re-encoded before the unit of work opens; stored last in the order,
        or not at all."""
        if len(command.data) > im.MAX_IMAGE_BYTES:  # before anything decodes it
            raise PayloadTooLarge(f"an image may be at most "
                                  f"{im.MAX_IMAGE_BYTES // (1024 * 1024)} MiB")
        if not command.data:
            raise InvalidRequest("choose an image file (PNG or JPEG) to upload", "file")
        declared = im.ImageKind(command.content_type) if command.content_type else None
        clean = await self.offload(lambda: self.codec.clean(command.data, declared))
        image = im.ProductImage(
            id=self.ids.new("img"), product_id=command.product_id, position=0,
            sha256=hashlib.sha256(clean.data).hexdigest(), content_type=clean.kind.value,
            width=clean.width, height=clean.height, size_bytes=len(clean.data),
            alt=command.alt.strip(), created_at=self.clock.now())
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            stored = await uow.images.add(image, clean.data, im.MAX_IMAGES)
        if stored is ImageRefused.TAKEN:
            raise AlreadyExists("the product already has this image")
        if stored is ImageRefused.FULL:
            raise InvalidRequest(f"a product may have at most {im.MAX_IMAGES} images; "
                                 "remove one first", "file")
        return stored

    async def remove(self, studio: ActingStudio, command: im.RemoveImage) -> None:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            if not await uow.images.remove(command.product_id, command.id):
                raise NotFound("the product has no such image")

    async def describe(self, studio: ActingStudio,
                       command: im.DescribeImage) -> im.ProductImage:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            described = await uow.images.set_alt(command.product_id, command.id,
                                                 command.alt.strip())
        if described is None:
            raise NotFound("the product has no such image")
        return described

    async def order(self, studio: ActingStudio,
                    command: im.OrderImages) -> tuple[im.ProductImage, ...]:
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            im.check_order(await uow.images.of_product(command.product_id),
                           command.image_ids)
            return tuple(await uow.images.set_order(command.product_id, command.image_ids))

    async def shown(self, product_id: str) -> tuple[im.ProductImage, ...]:
        """A product's images for its store page (the page checks it is listed)."""
        async with self.storage.unit_of_work() as uow:
            return tuple(await uow.images.of_product(product_id))

    async def covers(self, product_ids: Sequence[str]) -> Mapping[str, im.ProductImage]:
        """Each product's first image, for the store's cards."""
        async with self.storage.unit_of_work() as uow:
            return await uow.images.firsts(product_ids)

    async def file(self, name: str) -> im.ImageFile:
        """The file an image's address names (`<sha256>.<suffix>`); anything else is
        `not_found`."""
        sha256, _, suffix = name.partition(".")
        if len(sha256) != 64 or not _HEX.issuperset(sha256):
            raise NotFound("no such image")
        async with self.storage.unit_of_work() as uow:
            found = await uow.images.file(sha256)
        if found is None or im.ImageKind(found.content_type).suffix != suffix:
            raise NotFound("no such image")
        return found
