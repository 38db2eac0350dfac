"""Alerts and the blacklist: what a studio sees and decides about misuse."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from adapters_storage.memory.tables import Repository, page
from licore.model import Alert, Page


class MemoryAlerts(Repository):
    async def record(self, alert: Alert, window: int) -> Alert:
        same = [a for a in self.t.alerts.values()
                if (a.kind, a.studio_id, a.product_id, a.license_id, a.game_id)
                == (alert.kind, alert.studio_id, alert.product_id, alert.license_id,
                    alert.game_id)
                and a.last_seen_at >= alert.last_seen_at - window]
        if not same:
            self.t.alerts[alert.id] = alert
            return alert
        latest = max(same, key=lambda a: a.last_seen_at)
        bumped = attrs.evolve(latest, count=latest.count + alert.count,
                              last_seen_at=alert.last_seen_at)
        self.t.alerts[latest.id] = bumped
        return bumped

    async def of_studio(self, studio_id: str, product_id: str | None,
                        limit: int | None, cursor: str | None) -> Page[Alert]:
        mine = (a for a in self.t.alerts.values() if a.studio_id == studio_id
                and (product_id is None or a.product_id == product_id))
        return page(mine, lambda a: a.id, limit, cursor)

    async def by_id(self, studio_id: str, alert_id: str) -> Alert | None:
        found = self.t.alerts.get(alert_id)
        return found if found is not None and found.studio_id == studio_id else None


class MemoryBlacklist(Repository):
    async def set(self, studio_id: str, platform_id: str, on: bool, now: int) -> None:
        if on:
            self.t.blacklist.setdefault((studio_id, platform_id), now)
        else:
            self.t.blacklist.pop((studio_id, platform_id), None)

    async def contains(self, studio_id: str, platform_id: str) -> bool:
        return (studio_id, platform_id) in self.t.blacklist

    async def of_studio(self, studio_id: str) -> Sequence[tuple[str, int]]:
        return sorted(((user, at) for (studio, user), at in self.t.blacklist.items()
                       if studio == studio_id), key=lambda e: (e[1], e[0]))
