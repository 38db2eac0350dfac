"""The outbox and where its messages go (webhook endpoints, chat roles, chat links).

Claiming is one query (`licore.lanes.plan` in SQL) and the lease updates, inside the caller's
transaction. Claims take turns: on SQLite the unit of work already holds the database's write
lock (`BEGIN IMMEDIATE`); on PostgreSQL a transaction-scoped advisory lock, held for the few
milliseconds a claim takes. Either way the lease (`claimed_until`) is what keeps a message,
and so its lane, away from other workers while it is being sent, after the claiming
transaction has committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from adapters_storage.payloads import message_of, message_row
from adapters_storage.records import column_list, from_row, to_row
from adapters_storage.sql.common import Executor, Repository, insert
from licore.events import ChatRole, Message, MessageKind, MessageState, WebhookEndpoint
from licore.lanes import STUDIO_SLOTS, Breaker, BreakerState
from licore.model import License, Page

_PENDING = MessageState.PENDING.value


class SqlOutbox(Repository):
    def __init__(self, db: Executor, dialect: str) -> None:
        super().__init__(db)
        self.dialect = dialect

    async def add(self, messages: Sequence[Message]) -> None:
        for message in messages:
            await self.db.run(insert("outbox", Message), message_row(message))

    async def claim(self, now: int, worker: str, lease_until: int, limit: int,
                    per_studio: int = STUDIO_SLOTS) -> Sequence[Message]:
        if self.dialect == "postgresql":
            # Claims take turns, so two never count a studio's leases, or a lane's head,
            # before the other's lease is written (the one statement below cannot lock its
            # rows: PostgreSQL refuses FOR UPDATE with a window function).
            await self.db.run(f"SELECT pg_advisory_xact_lock({CLAIM_LOCK})")
        rows = await self.db.rows(_CLAIM, [now, _PENDING, now, now, now, per_studio, limit])
        taken = [message_of(r) for r in rows]
        if taken:
            marks = ", ".join("?" for _ in taken)
            await self.db.run(f"UPDATE outbox SET claimed_by = ?, claimed_until = ? "
                              f"WHERE id IN ({marks})",
                              [worker, lease_until, *(m.id for m in taken)])
        return [attrs.evolve(m, claimed_by=worker, claimed_until=lease_until) for m in taken]

    async def breakers(self, lanes: Sequence[str]) -> Mapping[str, Breaker]:
        if not lanes:
            return {}
        marks = ", ".join("?" for _ in lanes)
        rows = await self.db.rows("SELECT lane, state, failures, opened, open_until FROM "
                                  f"outbox_lanes WHERE lane IN ({marks})", list(lanes))
        return {str(r[0]): Breaker(BreakerState(r[1]), int(r[2]), int(r[3]), int(r[4]))
                for r in rows}

    async def save_breaker(self, lane: str, breaker: Breaker) -> None:
        await self.db.run("DELETE FROM outbox_lanes WHERE lane = ?", [lane])
        if breaker != Breaker():
            await self.db.run("INSERT INTO outbox_lanes (lane, state, failures, opened, "
                              "open_until) VALUES (?, ?, ?, ?, ?)",
                              [lane, breaker.state.value, breaker.failures, breaker.opened,
                               breaker.open_until])

    async def save(self, message: Message, worker: str) -> bool:
        row = message_row(message)
        sets = ", ".join(f"{c} = ?" for c in _COLUMNS[1:])
        done = await self.db.run(f"UPDATE outbox SET {sets} WHERE id = ? AND claimed_by = ?",
                                 [*row[1:], message.id, worker])
        return done > 0

    async def by_id(self, message_id: str) -> Message | None:
        rows = await self.db.rows(f"SELECT {column_list(Message)} FROM outbox WHERE id = ?",
                                  [message_id])
        return message_of(rows[0]) if rows else None

    async def of_studio(self, studio_id: str, kind: MessageKind, limit: int | None,
                        cursor: str | None) -> Page[Message]:
        sql = (f"SELECT {column_list(Message)} FROM outbox WHERE studio_id = ? AND kind = ?")
        params: list[Any] = [studio_id, kind.value]
        if cursor is not None:
            sql += " AND id < ?"
            params.append(cursor)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)
        found = [message_of(r) for r in await self.db.rows(sql, params)]
        if limit is not None and len(found) > limit:
            found = found[:limit]
            return Page(tuple(found), found[-1].id)
        return Page(tuple(found), None)

    async def requeue(self, message_id: str, now: int) -> bool:
        done = await self.db.run(
            "UPDATE outbox SET state = ?, next_attempt_at = ?, claimed_by = NULL, "
            "claimed_until = NULL WHERE id = ?", [_PENDING, now, message_id])
        return done > 0

    async def backlog(self, now: int) -> int:
        rows = await self.db.rows("SELECT COUNT(*) FROM outbox WHERE state = ? "
                                  "AND next_attempt_at <= ?", [_PENDING, now])
        return int(rows[0][0])


_COLUMNS = tuple(c.strip() for c in column_list(Message).split(","))
CLAIM_LOCK = 0x11C0B  # any constant; the advisory lock makes claims take turns

# `licore.lanes.plan` in one statement: `busy` counts each studio's leased messages; `heads`
# are the due, unleased messages that are the oldest pending of their lane (one pass over the
# pending rows: a "no earlier one" test per row is quadratic in a long lane) and whose lane's
# breaker is not open, numbered within their studio by due time (`turn`); a studio gets
# turns up to its free slots, and turns go round the studios before any gets a second.
_CLAIM = f"""WITH busy AS (
    SELECT studio_id, COUNT(*) AS n FROM outbox
    WHERE state = 'pending' AND claimed_until >= ? GROUP BY studio_id),
heads AS (
    SELECT o.*, ROW_NUMBER() OVER (PARTITION BY o.studio_id
                                   ORDER BY o.next_attempt_at, o.id) AS turn
    FROM outbox o
    JOIN (SELECT MIN(id) AS id FROM outbox WHERE state = ? GROUP BY lane) f ON f.id = o.id
    WHERE o.next_attempt_at <= ? AND (o.claimed_until IS NULL OR o.claimed_until < ?)
    AND NOT EXISTS (SELECT 1 FROM outbox_lanes b WHERE b.lane = o.lane
                    AND b.state = 'open' AND b.open_until > ?))
SELECT {column_list(Message, 'h.')} FROM heads h LEFT JOIN busy ON busy.studio_id = h.studio_id
WHERE h.turn + COALESCE(busy.n, 0) <= ?
ORDER BY h.turn, h.next_attempt_at, h.id LIMIT ?"""


class SqlHooks(Repository):
    async def add_endpoint(self, endpoint: WebhookEndpoint) -> None:
        await self.db.run(insert("webhook_endpoints", WebhookEndpoint), to_row(endpoint))

    async def endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        return await self._one(WebhookEndpoint, f"SELECT {column_list(WebhookEndpoint)} "
                               "FROM webhook_endpoints WHERE id = ?", [endpoint_id])

    async def endpoints_of(self, studio_id: str) -> Sequence[WebhookEndpoint]:
        rows = await self.db.rows(f"SELECT {column_list(WebhookEndpoint)} FROM "
                                  "webhook_endpoints WHERE studio_id = ? ORDER BY id",
                                  [studio_id])
        return [from_row(WebhookEndpoint, r) for r in rows]

    async def save_endpoint(self, endpoint: WebhookEndpoint) -> None:
        cols = column_list(WebhookEndpoint).split(", ")[1:]
        sets = ", ".join(f"{c} = ?" for c in cols)
        await self.db.run(f"UPDATE webhook_endpoints SET {sets} WHERE id = ?",
                          [*to_row(endpoint)[1:], endpoint.id])

    async def remove_endpoint(self, endpoint_id: str) -> bool:
        return await self.db.run("DELETE FROM webhook_endpoints WHERE id = ?",
                                 [endpoint_id]) > 0

    async def set_roles(self, product_id: str, roles: Sequence[ChatRole]) -> None:
        await self.db.run("DELETE FROM chat_roles WHERE product_id = ?", [product_id])
        for role in roles:
            await self.db.run("INSERT INTO chat_roles (product_id, guild_id, role_id) "
                              "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                              [product_id, role.guild_id, role.role_id])

    async def roles_of(self, product_id: str) -> Sequence[ChatRole]:
        rows = await self.db.rows("SELECT product_id, guild_id, role_id FROM chat_roles "
                                  "WHERE product_id = ? ORDER BY guild_id, role_id",
                                  [product_id])
        return [ChatRole(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def link_chat(self, platform_id: str, chat_user_id: str | None, now: int) -> None:
        await self.db.run("DELETE FROM chat_links WHERE platform_id = ?", [platform_id])
        if chat_user_id is not None:
            await self.db.run("INSERT INTO chat_links (platform_id, chat_user_id, linked_at) "
                              "VALUES (?, ?, ?)", [platform_id, chat_user_id, now])

    async def linked_to(self, chat_user_id: str) -> Sequence[str]:
        rows = await self.db.rows("SELECT platform_id FROM chat_links WHERE chat_user_id = ? "
                                  "ORDER BY platform_id LIMIT 2", [chat_user_id])
        return [str(r[0]) for r in rows]

    async def chat_user(self, platform_id: str) -> str | None:
        rows = await self.db.rows("SELECT chat_user_id FROM chat_links WHERE platform_id = ?",
                                  [platform_id])
        return str(rows[0][0]) if rows else None

    async def linked_holders(self, product_id: str, after: str | None,
                             limit: int) -> Sequence[License]:
        rows = await self.db.rows(
            f"SELECT {column_list(License, 'l.')} FROM licenses l "
            "JOIN chat_links c ON c.platform_id = l.platform_id "
            "WHERE l.product_id = ? AND l.state = 'active' AND l.id > ? "
            "ORDER BY l.id LIMIT ?", [product_id, after or "", limit])
        return [from_row(License, r) for r in rows]
