"""Idempotency keys and the answers they gave (`licore.services.idempotency`). The store's
one lock is the write lock: a unit of work that claimed a key holds it until it ends, so a
second claim of the key meets the first one's record, answered."""

from __future__ import annotations

import attrs

from adapters_storage.memory.tables import Repository
from licore.model import IdempotencyRecord, KeptAnswer


class MemoryIdempotencyKeys(Repository):
    async def claim(self, record: IdempotencyRecord, now: int) -> IdempotencyRecord | None:
        stored = self.t.idempotency.get((record.owner, record.key))
        if stored is not None and stored.expires_at > now:
            return stored
        self.t.idempotency[(record.owner, record.key)] = attrs.evolve(record, answer=None)
        return None

    async def keep(self, owner: str, key: str, answer: KeptAnswer) -> None:
        stored = self.t.idempotency.get((owner, key))
        if stored is not None:
            self.t.idempotency[(owner, key)] = attrs.evolve(stored, answer=answer)

    async def sweep(self, now: int) -> int:
        gone = [k for k, r in self.t.idempotency.items() if r.expires_at <= now]
        for k in gone:
            del self.t.idempotency[k]
        return len(gone)
