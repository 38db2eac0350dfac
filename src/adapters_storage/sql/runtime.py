"""Nonces, places and rate counters, plus the batched statements of the runtime hot path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters_storage.batching import Answer, NonceRequest, RuntimeRequest
from adapters_storage.records import column_list, columns, from_row
from adapters_storage.sql.common import Executor, Repository, RowSource
from licore.model import License, Place, Product, UnlockData
from licore.runtime import Facts as RuntimeFacts


class SqlRuntimeRecords(Repository):
    def __init__(self, db: Executor, source: RowSource) -> None:
        super().__init__(db)
        self.source = source

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        request = NonceRequest(license_id, nonce, expires_at)
        return (await use_nonces(self.db, self.source, now, [request]))[0]

    async def record_place(self, license_id: str, game_id: str, now: int) -> int:
        await self.db.run(
            "INSERT INTO license_places (license_id, game_id, first_seen_at, place_rank) "
            "SELECT ?, ?, ?, COUNT(*) + 1 FROM license_places WHERE license_id = ? "
            "ON CONFLICT DO NOTHING", [license_id, game_id, now, license_id])
        rows = await self.db.rows("SELECT place_rank FROM license_places WHERE license_id = ? "
                                  "AND game_id = ?", [license_id, game_id])
        return int(rows[0][0])

    async def sweep_nonces(self, now: int) -> int:
        return await self.db.run("DELETE FROM nonces WHERE expires_at <= ?", [now])

    async def places(self, license_id: str) -> Sequence[Place]:
        rows = await self.db.rows(
            f"SELECT {column_list(Place)} FROM license_places WHERE license_id = ? "
            "ORDER BY place_rank", [license_id])
        return [from_row(Place, r) for r in rows]

    async def reset_places(self, license_id: str) -> int:
        return await self.db.run("DELETE FROM license_places WHERE license_id = ?",
                                 [license_id])


class SqlRateCounters(Repository):
    def __init__(self, db: Executor, source: RowSource, shard: int | None = None) -> None:
        """`shard`: see `add_hits`."""
        super().__init__(db)
        self.source = source
        self.shard = shard

    async def hit(self, buckets: Sequence[str], window_start: int) -> list[int]:
        increments: dict[str, int] = {}
        for bucket in buckets:
            increments[bucket] = increments.get(bucket, 0) + 1
        totals = await add_hits(self.db, self.source, increments, window_start, self.shard)
        return [totals[b] for b in buckets]

    async def count(self, bucket: str, window_start: int) -> int:
        rows = await self.db.rows("SELECT SUM(count) FROM rate_counters WHERE bucket = ? "
                                  "AND window_start = ?", [bucket, window_start])
        return int(rows[0][0] or 0)

    async def sweep(self, before: int) -> int:
        # Window 0 marks a counter that never expires (a web session's sign-out, say).
        return await self.db.run(
            "DELETE FROM rate_counters WHERE window_start < ? AND window_start > 0", [before])


# The batched statements below take their rows from `source` (see RowSource): the same
# statements on both databases, with the rows spelled out (SQLite) or as arrays (PostgreSQL).


def _upsert(source: RowSource, increments: dict[str, int], window_start: int,
            shard: int | None) -> tuple[str, list[Any]]:
    """`add_hits`'s upsert (see there), returning `bucket, count`: this shard's count."""
    rows_sql, params = source(("TEXT", "BIGINT", "INTEGER", "INTEGER"),
                              [(b, window_start, shard or 0, increments[b])
                               for b in sorted(increments)])
    return (f"INSERT INTO rate_counters (bucket, window_start, shard, count) {rows_sql} "
            "ON CONFLICT (bucket, window_start, shard) DO UPDATE "
            "SET count = rate_counters.count + excluded.count RETURNING bucket, count",
            params)


# With a shard, the total of each bucket in `mine` (the upsert's rows): the outer SELECT
# reads the snapshot the statement began with, so the other shards as committed then, and
# not this shard's update, which `mine` carries. Parameters: the window, the shard.
_WITH_OTHERS = ("SELECT mine.bucket, mine.count + COALESCE(("
                "SELECT SUM(o.count) FROM rate_counters o WHERE o.bucket = mine.bucket "
                "AND o.window_start = ? AND o.shard <> ?), 0) FROM mine")


async def add_hits(db: Executor, source: RowSource, increments: dict[str, int],
                   window_start: int, shard: int | None = None) -> dict[str, int]:
    """Add each bucket's increment and return its new count. One statement for every bucket:
    on the hot path each statement is a round trip.

    `shard` None: one writer at a time (SQLite's lock is the file's), every count is in shard
    0 and the row's count is the total. A number (PostgreSQL): this process's own row, the
    one it adds to, so no process waits on another's row lock; the total is that row plus the
    other shards as the statement's snapshot saw them (docs/runtime.md states what that
    costs a limit: the other processes' increments in flight at that moment).

    Rows go in one order, by bucket, whoever sends them: two statements locking the same
    rows in opposite orders would deadlock. A row may appear once per statement, hence the
    increments; RETURNING order is unspecified, hence the bucket comes back too.
    """
    if not increments:
        return {}  # `VALUES` with no rows is not SQL
    upsert, params = _upsert(source, increments, window_start, shard)
    if shard is None:
        rows = await db.rows(upsert, params)
    else:
        rows = await db.rows(f"WITH mine AS ({upsert}) {_WITH_OTHERS}",
                             [*params, window_start, shard])
    return {r[0]: int(r[1]) for r in rows}


async def use_nonces(db: Executor, source: RowSource, now: int,
                     requests: Sequence[NonceRequest]) -> list[bool]:
    """Record each nonce; True where it was fresh. One statement for the whole batch.

    An expired row may be reused; otherwise a second use of a nonce is refused, also within
    one batch (a statement may not touch one row twice, so repeats never reach it).
    """
    first: dict[tuple[str, str], int] = {}
    for i, r in enumerate(requests):
        first.setdefault((r.license_id, r.nonce), i)
    # In one order whoever sends them, as `add_hits`: a replayed nonce sent by two
    # processes at once must not lock two rows in opposite orders.
    unique = [requests[first[k]] for k in sorted(first)]
    rows_sql, params = source(("TEXT", "TEXT", "BIGINT"),
                              [(r.license_id, r.nonce, r.expires_at) for r in unique])
    rows = await db.rows(
        f"INSERT INTO nonces (license_id, nonce, expires_at) {rows_sql} "
        "ON CONFLICT (license_id, nonce) DO UPDATE SET expires_at = excluded.expires_at "
        "WHERE nonces.expires_at <= ? RETURNING license_id, nonce", [*params, now])
    fresh = {(str(a), str(b)) for a, b in rows}
    return [(r.license_id, r.nonce) in fresh and first[(r.license_id, r.nonce)] == i
            for i, r in enumerate(requests)]


# What the runtime look-up reads for each request `req` (i, digest, user_id, game_id) whose
# key digest names a license: the license, its product, and the few facts beside them.
_FACTS = (
    f"{column_list(License, 'l.')}, {column_list(Product, 'p.')}, "
    "COALESCE(p.place_limit, s.place_limit), "
    # Not EXISTS: under a generic plan (the hot path's, see the PostgreSQL adapter) that is
    # a hashed subplan reading the whole blacklist on every run; a row's own index look-up
    # is what a batch of a few needs.
    "(SELECT 1 FROM blacklist b WHERE b.studio_id = p.studio_id "
    "AND b.platform_id = req.user_id LIMIT 1) IS NOT NULL, "
    "(SELECT COUNT(*) FROM license_places lp WHERE lp.license_id = l.id), "
    "(SELECT lp.place_rank FROM license_places lp WHERE lp.license_id = l.id "
    "AND lp.game_id = req.game_id), "
    "(SELECT t.unlock_data FROM product_tiers t WHERE t.product_id = l.product_id "
    "AND t.name = l.tier)")
_JOINED = ("JOIN licenses l ON l.key_digest = req.digest "
           "JOIN products p ON p.id = l.product_id JOIN studios s ON s.id = p.studio_id")
_LEFT_JOINED = _JOINED.replace("JOIN", "LEFT JOIN")


def _facts(row: Sequence[Any]) -> RuntimeFacts:
    """A request's facts from `_FACTS`'s columns (the license's id None: no license)."""
    nl, np_ = len(columns(License)), len(columns(Product))
    if row[0] is None:
        return RuntimeFacts(None, None, 0, False)
    n = nl + np_
    return RuntimeFacts(
        from_row(License, row[:nl]), from_row(Product, row[nl:n]),
        int(row[n]), bool(row[n + 1]), int(row[n + 2]),
        None if row[n + 3] is None else int(row[n + 3]),
        None if row[n + 4] is None else UnlockData(row[n + 4]))


def _counts(requests: Sequence[RuntimeRequest], increments: dict[str, int],
            totals: dict[str, int]) -> list[list[int]]:
    """Each request's counts as they stood when it arrived in the batch."""
    seen: dict[str, int] = {}
    counts: list[list[int]] = []
    for r in requests:
        mine = []
        for bucket in r.buckets:
            seen[bucket] = seen.get(bucket, 0) + 1
            mine.append(totals[bucket] - increments[bucket] + seen[bucket])
        counts.append(mine)
    return counts


async def runtime_batch(db: Executor, source: RowSource, window_start: int,
                        requests: Sequence[RuntimeRequest],
                        shard: int | None = None) -> list[Answer]:
    """Count every request (in `shard`, see `add_hits`) and load every request's facts: two
    statements on SQLite (cheap there: no round trip), one on PostgreSQL (`shard` given),
    where each statement is a trip to the server and back, a lone caller's largest wait."""
    increments: dict[str, int] = {}
    for r in requests:
        for bucket in r.buckets:
            increments[bucket] = increments.get(bucket, 0) + 1
    req_sql, req_params = source(("INTEGER", "TEXT", "TEXT", "TEXT"),
                                 [(i, r.key_digest, r.user_id, r.game_id)
                                  for i, r in enumerate(requests)])
    facts = [RuntimeFacts(None, None, 0, False) for _ in requests]
    if shard is not None and increments:
        # The count rides the look-up as a data-modifying CTE, its totals as two arrays in
        # bucket order on every row; a request whose key names no license still gets its row
        # (LEFT JOIN: a license always has its product and studio), so the totals always
        # come back.
        upsert, params = _upsert(source, increments, window_start, shard)
        rows = await db.rows(
            f"WITH mine AS ({upsert}), hits (bucket, total) AS ({_WITH_OTHERS}), "
            f"req (i, digest, user_id, game_id) AS ({req_sql}) "
            "SELECT req.i, (SELECT array_agg(bucket ORDER BY bucket) FROM hits), "
            f"(SELECT array_agg(total ORDER BY bucket) FROM hits), {_FACTS} "
            f"FROM req {_LEFT_JOINED}",
            [*params, window_start, shard, *req_params])
        totals = dict(zip(rows[0][1], map(int, rows[0][2]), strict=True))
        for row in rows:
            facts[int(row[0])] = _facts(row[3:])
        return list(zip(_counts(requests, increments, totals), facts, strict=True))
    totals = await add_hits(db, source, increments, window_start, shard)
    rows = await db.rows(
        f"WITH req (i, digest, user_id, game_id) AS ({req_sql}) "
        f"SELECT req.i, {_FACTS} FROM req {_JOINED}",
        req_params)
    for row in rows:
        facts[int(row[0])] = _facts(row[1:])
    return list(zip(_counts(requests, increments, totals), facts, strict=True))
