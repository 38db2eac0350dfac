"""Usage over time (docs/api.md, "Usage"): the series a seller reads, from the rollup the
runtime calls leave behind (`licore.usage`)."""

from __future__ import annotations

import attrs

from licore.actors import ActingStudio
from licore.services.products import own_product
from licore.storage_ports import Storage
from licore.usage import Series, UsageOf, series


@attrs.frozen
class Usage:
    storage: Storage

    async def series(self, studio: ActingStudio, query: UsageOf) -> Series:
        """One product's series (another studio's product is `not_found`), or the studio's
        with no product named. This process's calls not yet written are written first, so
        a seller reading right after a call sees it (other processes' follow within a few
        seconds)."""
        await self.storage.flush_usage()
        asked = (studio.studio_id, query.product_id, query.first, query.last, query.step)
        async with self.storage.unit_of_work() as uow:
            if query.product_id is not None:
                await own_product(uow, studio, query.product_id)
            calls = await uow.records.usage.calls(*asked)
            reach = await uow.records.usage.reach(*asked)
            events = await uow.records.usage.events(*asked)
        return series(query, calls, reach, events)
