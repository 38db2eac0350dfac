"""Nonces, places and rate counters, and the runtime hot path's facts."""

from __future__ import annotations

from collections.abc import Sequence

from adapters_storage.memory.tables import Repository, Tables, first
from licore.model import Place
from licore.runtime import Facts as RuntimeFacts


class MemoryRuntimeRecords(Repository):
    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        stored = self.t.nonces.get((license_id, nonce))
        if stored is not None and stored > now:
            return False
        self.t.nonces[(license_id, nonce)] = expires_at
        return True

    async def record_place(self, license_id: str, game_id: str, now: int) -> int:
        rank = self.t.places.get((license_id, game_id))
        if rank is None:
            rank = 1 + sum(1 for lic, _ in self.t.places if lic == license_id)
            self.t.places[(license_id, game_id)] = rank
            self.t.place_times[(license_id, game_id)] = now
        return rank

    async def sweep_nonces(self, now: int) -> int:
        gone = [k for k, expires_at in self.t.nonces.items() if expires_at <= now]
        for key in gone:
            del self.t.nonces[key]
        return len(gone)

    async def places(self, license_id: str) -> Sequence[Place]:
        mine = [Place(lic, game, self.t.place_times.get((lic, game), 0), rank)
                for (lic, game), rank in self.t.places.items() if lic == license_id]
        return sorted(mine, key=lambda p: p.place_rank)

    async def reset_places(self, license_id: str) -> int:
        gone = [k for k in self.t.places if k[0] == license_id]
        for key in gone:
            del self.t.places[key]
            self.t.place_times.pop(key, None)
        return len(gone)


class MemoryRateCounters(Repository):
    async def hit(self, buckets: Sequence[str], window_start: int) -> list[int]:
        for bucket in buckets:
            key = (bucket, window_start)
            self.t.counters[key] = self.t.counters.get(key, 0) + 1
        # Like the SQL adapters' single upsert: every mention of a bucket sees its total.
        return [self.t.counters[(b, window_start)] for b in buckets]

    async def count(self, bucket: str, window_start: int) -> int:
        return self.t.counters.get((bucket, window_start), 0)

    async def sweep(self, before: int) -> int:
        # Window 0 marks a counter that never expires (a web session's sign-out, say).
        gone = [k for k in self.t.counters if 0 < k[1] < before]
        for key in gone:
            del self.t.counters[key]
        return len(gone)


def runtime_facts(t: Tables, key_digest: str, user_id: str,
                  game_id: str | None) -> RuntimeFacts:
    lic = first(t.licenses.values(), lambda lic: lic.key_digest == key_digest)
    product = t.products.get(lic.product_id) if lic is not None else None
    studio = t.studios.get(product.studio_id) if product is not None else None
    if lic is None or product is None or studio is None:
        return RuntimeFacts(None, None, 0, False)
    places = sum(1 for owner, _ in t.places if owner == lic.id)
    rank = t.places.get((lic.id, game_id)) if game_id is not None else None
    limit = product.place_limit if product.place_limit is not None else studio.place_limit
    tier = first(t.tiers.get(product.id, ()), lambda tr: tr.name == lic.tier)
    return RuntimeFacts(lic, product, limit, (studio.id, user_id) in t.blacklist, places, rank,
                        tier.unlock_data if tier is not None and lic.tier is not None else None)
