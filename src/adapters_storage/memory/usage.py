"""Usage over time, in memory: the same rollup as the SQL tables, without shards (one
process, so the sum of the shards is the one count)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from adapters_storage.memory.tables import Repository
from licore.usage import CallCount, EventCount, Reach, Tally


class MemoryUsage(Repository):
    def _products(self, studio_id: str, product_id: str | None) -> set[str]:
        if product_id is not None:
            return {product_id}
        return {p.id for p in self.t.products.values() if p.studio_id == studio_id}

    async def add(self, tally: Tally, shard: int = 0) -> None:
        known = self.t.products
        for (product, hour, endpoint, outcome), n in tally.counts.items():
            if product in known:
                key = (product, hour, endpoint, outcome)
                self.t.usage_calls[key] = self.t.usage_calls.get(key, 0) + n
        for seen, into in ((tally.users, self.t.usage_users),
                           (tally.places, self.t.usage_places)):
            into.update((k, 1) for k in seen if k[0] in known)

    async def calls(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[CallCount]:
        mine = self._products(studio_id, product_id)
        summed: Counter[tuple[int, str, str]] = Counter()
        for (product, hour, endpoint, outcome), n in self.t.usage_calls.items():
            if product in mine and start <= hour < end:
                summed[(hour - hour % step, endpoint, outcome)] += n
        return [CallCount(*k, n) for k, n in summed.items()]

    async def reach(self, studio_id: str, product_id: str | None, start: int, end: int,
                    step: int) -> Sequence[Reach]:
        mine = self._products(studio_id, product_id)

        def distinct(seen: dict[tuple[str, int, str], int]) -> Counter[int]:
            points = {(hour - hour % step, v) for product, hour, v in seen
                      if product in mine and start <= hour < end}
            return Counter(t for t, _ in points)

        users, places = distinct(self.t.usage_users), distinct(self.t.usage_places)
        first: dict[tuple[str, str], int] = {}
        for (license_id, game), at in self.t.place_times.items():
            lic = self.t.licenses.get(license_id)
            if lic is not None and lic.product_id in mine:
                key = (lic.product_id, game)
                first[key] = min(at, first.get(key, at))
        new = Counter(f - f % step for f in first.values() if start <= f < end)
        return [Reach(t, users[t], places[t], new[t])
                for t in sorted(users.keys() | places.keys() | new.keys())]

    async def count(self, product_id: str, hour: int, kind: str, subject: str = "") -> None:
        key = (product_id, hour, kind, subject)
        self.t.usage_events[key] = self.t.usage_events.get(key, 0) + 1

    async def events(self, studio_id: str, product_id: str | None, start: int, end: int,
                     step: int) -> Sequence[EventCount]:
        mine = self._products(studio_id, product_id)
        summed: Counter[tuple[int, str, str]] = Counter()
        for (product, hour, kind, subject), n in self.t.usage_events.items():
            if product in mine and start <= hour < end:
                summed[(hour - hour % step, kind, subject)] += n
        return [EventCount(*k, n) for k, n in summed.items()]

    async def sweep(self, before: int) -> int:
        calls = {k: n for k, n in self.t.usage_calls.items() if k[1] >= before}
        users = {k: n for k, n in self.t.usage_users.items() if k[1] >= before}
        places = {k: n for k, n in self.t.usage_places.items() if k[1] >= before}
        events = {k: n for k, n in self.t.usage_events.items() if k[1] >= before}
        gone = (len(self.t.usage_calls) - len(calls) + len(self.t.usage_users) - len(users)
                + len(self.t.usage_places) - len(places)
                + len(self.t.usage_events) - len(events))
        self.t.usage_calls, self.t.usage_users, self.t.usage_places = calls, users, places
        self.t.usage_events = events
        return gone
