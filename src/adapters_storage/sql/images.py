"""Product images: their facts and their re-encoded files in one table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from adapters_storage.records import column_list, columns, from_row, to_row
from adapters_storage.sql.common import Executor, Repository, row_lock
from licore.images import ImageFile, ProductImage, reordered
from licore.storage_ports import ImageRefused

_COLUMNS = column_list(ProductImage)
_SLICE = 500


class SqlImages(Repository):
    def __init__(self, db: Executor, dialect: str = "sqlite") -> None:
        super().__init__(db)
        self.dialect = dialect

    async def _hold(self, product_id: str) -> None:
        """Changes of one product's images queue on the product's row (PostgreSQL; SQLite's
        unit of work holds the write lock), so each sees the positions the one before it
        left: an add never counts past the limit, nor takes a place a removal just
        freed."""
        if lock := row_lock(self.dialect):
            await self.db.rows(f"SELECT id FROM products WHERE id = ?{lock}", [product_id])

    async def add(self, image: ProductImage, data: bytes,
                  most: int) -> ProductImage | ImageRefused:
        await self._hold(image.product_id)
        rows = await self.db.rows(
            "SELECT sha256 FROM product_images WHERE product_id = ?", [image.product_id])
        if any(r[0] == image.sha256 for r in rows):
            return ImageRefused.TAKEN
        if len(rows) >= most:
            return ImageRefused.FULL
        stored = attrs.evolve(image, position=len(rows))
        marks = ", ".join("?" for _ in range(len(columns(ProductImage)) + 1))
        await self.db.run(f"INSERT INTO product_images ({_COLUMNS}, data) VALUES ({marks})",
                          [*to_row(stored), data])
        return stored

    async def of_product(self, product_id: str) -> Sequence[ProductImage]:
        rows = await self.db.rows(f"SELECT {_COLUMNS} FROM product_images "
                                  "WHERE product_id = ? ORDER BY position", [product_id])
        return [from_row(ProductImage, r) for r in rows]

    async def firsts(self, product_ids: Sequence[str]) -> Mapping[str, ProductImage]:
        found: dict[str, ProductImage] = {}
        # In slices: a statement takes a bounded number of parameters (SQLite's default
        # was 999), and the store may list more products than that.
        for start in range(0, len(product_ids), _SLICE):
            some = list(product_ids[start:start + _SLICE])
            marks = ", ".join("?" for _ in some)
            rows = await self.db.rows(f"SELECT {_COLUMNS} FROM product_images "
                                      f"WHERE position = 0 AND product_id IN ({marks})", some)
            found.update((r[1], from_row(ProductImage, r)) for r in rows)
        return found

    async def file(self, sha256: str) -> ImageFile | None:
        rows = await self.db.rows("SELECT content_type, data FROM product_images "
                                  "WHERE sha256 = ? LIMIT 1", [sha256])
        return ImageFile(sha256, rows[0][0], bytes(rows[0][1])) if rows else None

    async def remove(self, product_id: str, image_id: str) -> bool:
        await self._hold(product_id)
        gone = await self.db.rows("DELETE FROM product_images WHERE product_id = ? AND id = ? "
                                  "RETURNING position", [product_id, image_id])
        if not gone:
            return False
        await self.db.run("UPDATE product_images SET position = position - 1 "
                          "WHERE product_id = ? AND position > ?", [product_id, gone[0][0]])
        return True

    async def set_alt(self, product_id: str, image_id: str, alt: str) -> ProductImage | None:
        rows = await self.db.rows(f"UPDATE product_images SET alt = ? WHERE product_id = ? "
                                  f"AND id = ? RETURNING {_COLUMNS}", [alt, product_id, image_id])
        return from_row(ProductImage, rows[0]) if rows else None

    async def set_order(self, product_id: str,
                        image_ids: Sequence[str]) -> Sequence[ProductImage]:
        await self._hold(product_id)
        placed = reordered(await self.of_product(product_id), image_ids)
        for image in placed:
            await self.db.run("UPDATE product_images SET position = ? WHERE id = ?",
                              [image.position, image.id])
        return placed
