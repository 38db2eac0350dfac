"""Alerts and the blacklist: what a studio sees and decides about misuse."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from adapters_storage.records import column_list, from_row, to_row
from adapters_storage.sql.common import Repository, insert
from licore.model import Alert, Page


class SqlAlerts(Repository):
    async def record(self, alert: Alert, window: int) -> Alert:
        same = await self._one(
            Alert,
            f"SELECT {column_list(Alert)} FROM alerts WHERE kind = ? AND studio_id = ? "
            "AND product_id = ? AND license_id IS NOT DISTINCT FROM ? "
            "AND game_id IS NOT DISTINCT FROM ? AND last_seen_at >= ? "
            "ORDER BY last_seen_at DESC LIMIT 1",
            [alert.kind, alert.studio_id, alert.product_id, alert.license_id, alert.game_id,
             alert.last_seen_at - window])
        if same is None:
            await self.db.run(insert("alerts", Alert), to_row(alert))
            return alert
        await self.db.run("UPDATE alerts SET count = count + ?, last_seen_at = ? WHERE id = ?",
                          [alert.count, alert.last_seen_at, same.id])
        bumped = await self._one(Alert, f"SELECT {column_list(Alert)} FROM alerts "
                                 "WHERE id = ?", [same.id])
        assert bumped is not None
        return bumped

    async def of_studio(self, studio_id: str, product_id: str | None,
                        limit: int | None, cursor: str | None) -> Page[Alert]:
        sql = f"SELECT {column_list(Alert)} FROM alerts WHERE studio_id = ?"
        params: list[Any] = [studio_id]
        if product_id is not None:
            sql += " AND product_id = ?"
            params.append(product_id)
        return await self._page(partial(from_row, Alert), sql, params, limit, cursor)

    async def by_id(self, studio_id: str, alert_id: str) -> Alert | None:
        return await self._one(Alert, f"SELECT {column_list(Alert)} FROM alerts "
                               "WHERE id = ? AND studio_id = ?", [alert_id, studio_id])


class SqlBlacklist(Repository):
    async def set(self, studio_id: str, platform_id: str, on: bool, now: int) -> None:
        if on:
            await self.db.run("INSERT INTO blacklist (studio_id, platform_id, created_at) "
                              "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                              [studio_id, platform_id, now])
        else:
            await self.db.run("DELETE FROM blacklist WHERE studio_id = ? AND platform_id = ?",
                              [studio_id, platform_id])

    async def contains(self, studio_id: str, platform_id: str) -> bool:
        return bool(await self.db.rows("SELECT 1 FROM blacklist WHERE studio_id = ? "
                                       "AND platform_id = ?", [studio_id, platform_id]))

    async def of_studio(self, studio_id: str) -> Sequence[tuple[str, int]]:
        rows = await self.db.rows("SELECT platform_id, created_at FROM blacklist "
                                  "WHERE studio_id = ? ORDER BY created_at, platform_id",
                                  [studio_id])
        return [(str(r[0]), int(r[1])) for r in rows]
