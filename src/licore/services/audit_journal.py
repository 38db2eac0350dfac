"""Writing one audit entry into the unit of work of the change it tells (docs/audit.md): who
acts and the request id come from the call's context (`licore.audit`), the time and the id
from the clock."""

from __future__ import annotations

import attrs

from licore.audit import REQUEST_ID, AuditEntry, Change, current_actor
from licore.services.ids import Ids
from licore.storage_ports import UnitOfWork


@attrs.define
class Journal:
    uow: UnitOfWork  # the storage's own: the audited layers read through it
    ids: Ids
    _studios: dict[str, str | None] = attrs.Factory(dict)  # product id -> studio id

    async def add(self, studio_id: str | None, action: str, subject_type: str,
                  subject_id: str, changes: tuple[Change, ...] = ()) -> None:
        await self.uow.audit.add(AuditEntry(
            id=self.ids.new("aud"), studio_id=studio_id, at=self.ids.clock.now(),
            actor=current_actor(), request_id=REQUEST_ID.get(), action=action,
            subject_type=subject_type, subject_id=subject_id, changes=changes))

    def owner_is(self, product_id: str, studio_id: str) -> None:
        self._studios[product_id] = studio_id

    async def of_product(self, product_id: str, action: str, subject_type: str,
                         subject_id: str, changes: tuple[Change, ...] = ()) -> None:
        """An entry of the studio that owns the product."""
        if product_id not in self._studios:
            product = await self.uow.products.by_id(product_id)
            self._studios[product_id] = None if product is None else product.studio_id
        await self.add(self._studios[product_id], action, subject_type, subject_id, changes)

    async def of_license(self, license_id: str, action: str, subject_type: str,
                         subject_id: str, changes: tuple[Change, ...] = ()) -> None:
        found = await self.uow.licenses.by_id(license_id)
        if found is not None:
            await self.of_product(found.product_id, action, subject_type, subject_id, changes)
