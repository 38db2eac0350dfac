"""Usage over time (`licore.usage`): the rollup tables, written with the runtime batch.

`add` is three statements (calls, users, places), each with the batch's rows in one order
(sorted, as `add_hits`: two processes writing the same rows must lock them in the same
order). Rows of a product that does not exist are dropped by the statement itself (a game
may name any product id), so no unknown product ever gets a row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters_storage.sql.common import Executor, Repository, RowSource
from licore.usage import CallCount, EventCount, Reach, Tally


def _scope(product_id: str | None, studio_id: str, column: str) -> tuple[str, list[Any]]:
    """One product (the use case checked the studio owns it), or each of the studio's."""
    if product_id is not None:
        return f"{column} = ?", [product_id]
    return f"{column} IN (SELECT id FROM products WHERE studio_id = ?)", [studio_id]


class SqlUsage(Repository):
    def __init__(self, db: Executor, source: RowSource) -> None:
        super().__init__(db)
        self.source = source

    async def add(self, tally: Tally, shard: int = 0) -> None:
        await add_usage(self.db, self.source, tally, shard)

    async def calls(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[CallCount]:
        where, params = _scope(product_id, studio_id, "product_id")
        rows = await self.db.rows(
            "SELECT hour - hour % ? AS t, endpoint, outcome, SUM(count) FROM usage_calls "
            f"WHERE {where} AND hour >= ? AND hour < ? GROUP BY t, endpoint, outcome",
            [step, *params, start, end])
        return [CallCount(int(t), str(e), str(o), int(n)) for t, e, o, n in rows]

    async def _distinct(self, table: str, column: str, studio_id: str, product_id: str | None,
                        start: int, end: int, step: int) -> dict[int, int]:
        where, params = _scope(product_id, studio_id, "product_id")
        rows = await self.db.rows(
            f"SELECT t, COUNT(DISTINCT v) FROM (SELECT hour - hour % ? AS t, {column} AS v "
            f"FROM {table} WHERE {where} AND hour >= ? AND hour < ?) x GROUP BY t",
            [step, *params, start, end])
        return {int(t): int(n) for t, n in rows}

    async def _new_places(self, studio_id: str, product_id: str | None, start: int, end: int,
                          step: int) -> dict[int, int]:
        """A place is new to a product when the product's first license seen there was
        seen there first (`license_places` keeps each license's first sight)."""
        where, params = _scope(product_id, studio_id, "l.product_id")
        rows = await self.db.rows(
            "SELECT f - f % ? AS t, COUNT(*) FROM (SELECT l.product_id, lp.game_id, "
            "MIN(lp.first_seen_at) AS f FROM license_places lp "
            f"JOIN licenses l ON l.id = lp.license_id WHERE {where} "
            "GROUP BY l.product_id, lp.game_id) x WHERE f >= ? AND f < ? GROUP BY t",
            [step, *params, start, end])
        return {int(t): int(n) for t, n in rows}

    async def reach(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[Reach]:
        asked = (studio_id, product_id, start, end, step)
        users = await self._distinct("usage_users", "user_id", *asked)
        places = await self._distinct("usage_places", "game_id", *asked)
        new = await self._new_places(*asked)
        return [Reach(t, users.get(t, 0), places.get(t, 0), new.get(t, 0))
                for t in sorted(users.keys() | places.keys() | new.keys())]

    async def count(self, product_id: str, hour: int, kind: str, subject: str = "") -> None:
        await self.db.run(
            "INSERT INTO usage_events (product_id, hour, kind, subject, count) "
            "VALUES (?, ?, ?, ?, 1) ON CONFLICT (product_id, hour, kind, subject) "
            "DO UPDATE SET count = usage_events.count + 1", [product_id, hour, kind, subject])

    async def events(self, studio_id: str, product_id: str | None, start: int, end: int,
                     step: int) -> Sequence[EventCount]:
        where, params = _scope(product_id, studio_id, "product_id")
        rows = await self.db.rows(
            "SELECT hour - hour % ? AS t, kind, subject, SUM(count) FROM usage_events "
            f"WHERE {where} AND hour >= ? AND hour < ? GROUP BY t, kind, subject",
            [step, *params, start, end])
        return [EventCount(int(t), str(k), str(s), int(n)) for t, k, s, n in rows]

    async def sweep(self, before: int) -> int:
        gone = 0
        for table in ("usage_calls", "usage_users", "usage_places", "usage_events"):
            gone += await self.db.run(f"DELETE FROM {table} WHERE hour < ?", [before])
        return gone


async def add_usage(db: Executor, source: RowSource, tally: Tally, shard: int) -> None:
    """Add a batch's rollup: counts into this process's shard (summed when read), users
    and places once per product and hour."""
    if tally.counts:
        rows_sql, params = source(
            ("TEXT", "BIGINT", "TEXT", "TEXT", "INTEGER", "BIGINT"),
            [(*k, shard, tally.counts[k]) for k in sorted(tally.counts)])
        await db.run(
            f"WITH r (p, h, e, o, s, n) AS ({rows_sql}) "
            "INSERT INTO usage_calls (product_id, hour, endpoint, outcome, shard, count) "
            "SELECT r.p, r.h, r.e, r.o, r.s, r.n FROM r JOIN products ON products.id = r.p "
            "WHERE true ON CONFLICT (product_id, hour, endpoint, outcome, shard) DO UPDATE "
            "SET count = usage_calls.count + excluded.count", params)
    for table, column, seen in (("usage_users", "user_id", tally.users),
                                ("usage_places", "game_id", tally.places)):
        if not seen:
            continue
        rows_sql, params = source(("TEXT", "BIGINT", "TEXT"), sorted(seen))
        await db.run(
            f"WITH r (p, h, v) AS ({rows_sql}) "
            f"INSERT INTO {table} (product_id, hour, {column}) "
            "SELECT r.p, r.h, r.v FROM r JOIN products ON products.id = r.p "
            "WHERE true ON CONFLICT DO NOTHING", params)
