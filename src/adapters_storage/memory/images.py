"""Product images, as the SQL adapter keeps them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from adapters_storage.memory.tables import Repository
from licore.images import ImageFile, ProductImage, reordered
from licore.storage_ports import ImageRefused


class MemoryImages(Repository):
    def _of(self, product_id: str) -> list[ProductImage]:
        return sorted((i for i, _ in self.t.images.values() if i.product_id == product_id),
                      key=lambda i: i.position)

    async def add(self, image: ProductImage, data: bytes,
                  most: int) -> ProductImage | ImageRefused:
        mine = self._of(image.product_id)
        if any(i.sha256 == image.sha256 for i in mine):
            return ImageRefused.TAKEN
        if len(mine) >= most:
            return ImageRefused.FULL
        stored = attrs.evolve(image, position=len(mine))
        self.t.images[image.id] = (stored, bytes(data))
        return stored

    async def of_product(self, product_id: str) -> Sequence[ProductImage]:
        return self._of(product_id)

    async def firsts(self, product_ids: Sequence[str]) -> Mapping[str, ProductImage]:
        wanted = set(product_ids)
        return {i.product_id: i for i, _ in self.t.images.values()
                if i.position == 0 and i.product_id in wanted}

    async def file(self, sha256: str) -> ImageFile | None:
        for image, data in self.t.images.values():
            if image.sha256 == sha256:
                return ImageFile(sha256, image.content_type, data)
        return None

    async def remove(self, product_id: str, image_id: str) -> bool:
        found = self.t.images.get(image_id)
        if found is None or found[0].product_id != product_id:
            return False
        del self.t.images[image_id]
        for image in self._of(product_id):
            if image.position > found[0].position:
                self.t.images[image.id] = (attrs.evolve(image, position=image.position - 1),
                                           self.t.images[image.id][1])
        return True

    async def set_alt(self, product_id: str, image_id: str, alt: str) -> ProductImage | None:
        found = self.t.images.get(image_id)
        if found is None or found[0].product_id != product_id:
            return None
        described = attrs.evolve(found[0], alt=alt)
        self.t.images[image_id] = (described, found[1])
        return described

    async def set_order(self, product_id: str,
                        image_ids: Sequence[str]) -> Sequence[ProductImage]:
        placed = reordered(self._of(product_id), image_ids)
        for image in placed:
            self.t.images[image.id] = (image, self.t.images[image.id][1])
        return placed
