"""Idempotency keys and the answers they gave (`licore.services.idempotency`)."""

from __future__ import annotations

from adapters_storage.sql.common import Repository
from licore.model import IdempotencyRecord, KeptAnswer

_COLUMNS = "fingerprint, created_at, expires_at, status, media_type, body"


class SqlIdempotencyKeys(Repository):
    async def claim(self, record: IdempotencyRecord, now: int) -> IdempotencyRecord | None:
        # A retry of an answered call is the common meeting: read first, without a lock, so
        # a crowd of retries does not queue on the row (PostgreSQL's ON CONFLICT DO UPDATE
        # locks the row it meets even when its WHERE leaves it alone).
        live = await self._live(record, now)
        if live is not None:
            return live
        # One statement takes a free key or an expired one. On PostgreSQL a key inserted by
        # a transaction still open makes this statement wait for that transaction: then it
        # conflicts (the other committed) or inserts (it rolled back). The read after it is
        # a statement of its own, so it sees what the other committed.
        taken = await self.db.rows(
            "INSERT INTO idempotency_keys (owner, idem_key, fingerprint, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner, idem_key) DO UPDATE SET "
            "fingerprint = excluded.fingerprint, created_at = excluded.created_at, "
            "expires_at = excluded.expires_at, status = NULL, media_type = NULL, body = NULL "
            "WHERE idempotency_keys.expires_at <= ? RETURNING owner",
            [record.owner, record.key, record.fingerprint, record.created_at,
             record.expires_at, now])
        return None if taken else await self._live(record, now)

    async def _live(self, record: IdempotencyRecord, now: int) -> IdempotencyRecord | None:
        rows = await self.db.rows(f"SELECT {_COLUMNS} FROM idempotency_keys "
                                  "WHERE owner = ? AND idem_key = ? AND expires_at > ?",
                                  [record.owner, record.key, now])
        if not rows:
            return None
        fingerprint, created_at, expires_at, status, media_type, body = rows[0]
        answer = None if status is None else KeptAnswer(int(status), str(media_type),
                                                        bytes(body))
        return IdempotencyRecord(record.owner, record.key, str(fingerprint), int(created_at),
                                 int(expires_at), answer)

    async def keep(self, owner: str, key: str, answer: KeptAnswer) -> None:
        await self.db.run("UPDATE idempotency_keys SET status = ?, media_type = ?, body = ? "
                          "WHERE owner = ? AND idem_key = ?",
                          [answer.status, answer.media_type, answer.body, owner, key])

    async def sweep(self, now: int) -> int:
        return await self.db.run("DELETE FROM idempotency_keys WHERE expires_at <= ?", [now])
