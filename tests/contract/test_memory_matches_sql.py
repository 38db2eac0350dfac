"""The in-memory storage against the SQL one: random sequences of port calls, the same on
both, must give the same answers. The fixed contract tests check chosen cases; this looks for
the cases nobody chose (pages cut at odd places, repeated buckets, nonces reused after
expiry, alerts just outside their window, rolled-back units of work, and the outbox's claims
among leases, retries, slots and breakers)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from adapters_storage import MemoryStorage, SqliteStorage
from licore.events import Message, MessageKind, MessageState, WebhookBody
from licore.lanes import Breaker, BreakerState
from licore.licenses import LicenseState
from licore.model import Alert
from licore.storage_ports import Storage, UnitOfWork
from tests.support.records import account, key, license, seed

USERNAMES = ("al", "AL", "bo", "Bo", "cy")
PLATFORMS = ("1", "2", "3", "4")
PRODUCTS = ("prd_1", "prd_2")
BUCKETS = ("a", "b", "c")
WINDOWS = (0, 60, 120)
TARGETS = ("whk_a", "whk_b", "whk_c", "whk_d")
STUDIOS = ("std_1", "std_2")


class Rollback(Exception):
    """Raised inside a unit of work to roll it back."""


class _BothStores(RuleBasedStateMachine):
    """The memory store and SQLite, set up alike; `same` runs a call on both."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.stores: tuple[Storage, Storage] = (MemoryStorage(),
                                                SqliteStorage(":memory:", pool_size=1))
        self.now = 100
        self.alerts = 0
        self.alert_now = 100

        async def setup(uow: UnitOfWork) -> None:
            await seed(uow)
            await uow.products.add(attrs.evolve(
                await uow.products.by_id("prd_1") or _never(), id="prd_2"), "q")
        for store in self.stores:
            self.loop.run_until_complete(store.migrate())
        self.same(setup)

    def teardown(self) -> None:
        for store in self.stores:
            self.loop.run_until_complete(store.close())
        self.loop.close()

    def same(self, action: Callable[[UnitOfWork], Awaitable[Any]],
             roll_back: bool = False) -> Any:
        """Run `action` in a unit of work on each store; both must answer alike."""
        answers = []
        for store in self.stores:
            async def run(store: Storage = store) -> Any:
                async with store.unit_of_work() as uow:
                    answer = await action(uow)
                    if roll_back:
                        raise Rollback
                    return answer
            try:
                answers.append(self.loop.run_until_complete(run()))
            except Rollback:
                answers.append(None)
        assert answers[0] == answers[1]
        return answers[0]

    def tick(self, seconds: int) -> int:
        self.now += seconds
        return self.now


class MemoryMatchesSql(_BothStores):
    @rule(n=st.integers(0, 4), username=st.sampled_from(USERNAMES),
          platform=st.sampled_from(PLATFORMS))
    def add_account(self, n: int, username: str, platform: str) -> None:
        record = attrs.evolve(account(10 + n, username), platform_id=platform)
        self.same(lambda uow: uow.accounts.add(record))

    @rule(username=st.sampled_from(USERNAMES), platform=st.sampled_from(PLATFORMS))
    def find_account(self, username: str, platform: str) -> None:
        self.same(lambda uow: uow.accounts.by_username(username))
        self.same(lambda uow: uow.accounts.by_platform_id(platform))

    @rule(n=st.integers(0, 6), product=st.sampled_from(PRODUCTS),
          platform=st.sampled_from(PLATFORMS), active=st.booleans())
    def add_license(self, n: int, product: str, platform: str, active: bool) -> None:
        state = LicenseState.ACTIVE if active else LicenseState.INACTIVE

        async def add(uow: UnitOfWork) -> bool | None:
            # A second record with a taken id or key digest is a caller's bug, not a
            # conflict the port answers (the databases raise), so the machine never makes one.
            if await uow.licenses.by_id(f"lic_{n}") is not None:
                return None
            return await uow.licenses.add(license(n, product, platform, state))
        self.same(add)

    @rule(n=st.integers(0, 6), active=st.booleans(), expect_active=st.booleans())
    def replace_license(self, n: int, active: bool, expect_active: bool) -> None:
        async def replace(uow: UnitOfWork) -> bool | None:
            stored = await uow.licenses.by_id(f"lic_{n}")
            if stored is None:
                return None
            state = LicenseState.ACTIVE if active else LicenseState.INACTIVE
            expected = LicenseState.ACTIVE if expect_active else LicenseState.INACTIVE
            return await uow.licenses.replace(
                attrs.evolve(stored, state=state, key_generation=stored.key_generation + 1),
                expected)
        self.same(replace)

    @rule(product=st.sampled_from(PRODUCTS), platform=st.sampled_from(PLATFORMS),
          limit=st.none() | st.integers(1, 3))
    def list_licenses(self, product: str, platform: str, limit: int | None) -> None:
        async def walk(uow: UnitOfWork) -> list[Any]:
            pages: list[Any] = []
            cursor = None
            while True:
                page = await uow.licenses.of_product(product, limit, cursor)
                pages.append(page)
                pages.append(await uow.licenses.library_of(platform, limit, cursor))
                if page.next_cursor is None:
                    return pages
                cursor = page.next_cursor
        self.same(walk)
        self.same(lambda uow: uow.licenses.for_user(product, platform))

    @rule(buckets=st.lists(st.sampled_from(BUCKETS), min_size=1, max_size=4),
          window=st.sampled_from(WINDOWS))
    def hit(self, buckets: list[str], window: int) -> None:
        self.same(lambda uow: uow.records.counters.hit(buckets, window))

    @rule(buckets=st.lists(st.sampled_from(BUCKETS), min_size=1, max_size=3),
          window=st.sampled_from(WINDOWS), key_digest=st.sampled_from(("digest1", "x")),
          user=st.sampled_from(PLATFORMS), game=st.none() | st.sampled_from(("g1", "g2")))
    def runtime_read(self, buckets: list[str], window: int, key_digest: str, user: str,
                     game: str | None) -> None:
        answers = [self.loop.run_until_complete(
            s.runtime_read(buckets, window, key_digest, user, game)) for s in self.stores]
        assert answers[0] == answers[1]

    @rule(bucket=st.sampled_from(BUCKETS), window=st.sampled_from(WINDOWS),
          before=st.sampled_from((0, 61, 121, 500)))
    def count_and_sweep(self, bucket: str, window: int, before: int) -> None:
        self.same(lambda uow: uow.records.counters.count(bucket, window))
        self.same(lambda uow: uow.records.counters.sweep(before))

    @rule(lic=st.sampled_from(("lic_1", "lic_2")), nonce=st.sampled_from(("n", "m")),
          life=st.integers(1, 30), wait=st.integers(0, 20), direct=st.booleans())
    def use_nonce(self, lic: str, nonce: str, life: int, wait: int, direct: bool) -> None:
        now = self.tick(wait)
        if direct:
            answers = [self.loop.run_until_complete(s.use_nonce(lic, nonce, now + life, now))
                       for s in self.stores]
            assert answers[0] == answers[1]
        else:
            self.same(lambda uow: uow.records.runtime.use_nonce(lic, nonce, now + life, now))

    @rule()
    def sweep_nonces(self) -> None:
        self.same(lambda uow: uow.records.runtime.sweep_nonces(self.now))

    @rule(lic=st.sampled_from(("lic_1", "lic_2")), game=st.sampled_from(("g1", "g2", "g3")))
    def record_place(self, lic: str, game: str) -> None:
        self.same(lambda uow: uow.records.runtime.record_place(lic, game, self.now))

    @rule(platform=st.sampled_from(PLATFORMS), on=st.booleans(), wait=st.integers(0, 3))
    def blacklist(self, platform: str, on: bool, wait: int) -> None:
        now = self.tick(wait)
        self.same(lambda uow: uow.abuse.blacklist.set("std_1", platform, on, now))
        self.same(lambda uow: uow.abuse.blacklist.contains("std_1", platform))
        self.same(lambda uow: uow.abuse.blacklist.of_studio("std_1"))

    @rule(kind=st.sampled_from(("k1", "k2")), lic=st.none() | st.just("lic_1"),
          game=st.none() | st.just("g1"), wait=st.sampled_from((0, 1, 9, 10, 11, 30)),
          window=st.sampled_from((10, 30)), limit=st.none() | st.integers(1, 2))
    def alert(self, kind: str, lic: str | None, game: str | None, wait: int, window: int,
              limit: int | None) -> None:
        # Alerts keep a clock of their own, so waits land exactly on a window's edge.
        self.alert_now += wait
        now = self.alert_now
        self.alerts += 1
        record = Alert(f"alr_{self.alerts:04}", "std_1", kind, "prd_1", lic, None, None, game,
                       None, 1, now, now)
        self.same(lambda uow: uow.abuse.alerts.record(record, window))
        self.same(lambda uow: uow.abuse.alerts.of_studio("std_1", None, limit, None))

    @rule(n=st.integers(0, 4), library=st.booleans())
    def add_key(self, n: int, library: bool) -> None:
        record = key(n, studio_id=None, account_id="acc_2") if library else key(n)

        async def add(uow: UnitOfWork) -> None:
            if await uow.api_keys.by_id(record.id) is None:
                await uow.api_keys.add(record)
        self.same(add)

    @rule(n=st.integers(0, 4), wait=st.integers(-5, 5), revoke=st.booleans())
    def use_key(self, n: int, wait: int, revoke: bool) -> None:
        now = self.tick(max(wait, 0)) + min(wait, 0)
        if revoke:
            self.same(lambda uow: uow.api_keys.revoke(f"key_{n}", now))
        else:
            self.same(lambda uow: uow.api_keys.touch(f"key_{n}", now))
        self.same(lambda uow: uow.api_keys.by_id(f"key_{n}"))
        self.same(lambda uow: uow.api_keys.connected_apps(studio_id="std_1"))
        self.same(lambda uow: uow.api_keys.connected_apps(account_id="acc_2"))

    @rule(n=st.integers(0, 6), buckets=st.lists(st.sampled_from(BUCKETS), max_size=2))
    def rolled_back(self, n: int, buckets: list[str]) -> None:
        async def change(uow: UnitOfWork) -> None:
            await uow.licenses.add(license(50 + n, "prd_2", "9"))
            await uow.records.counters.hit(buckets, 60)
            await uow.api_keys.revoke_all_of_client("cli_1", self.now)
        self.same(change, roll_back=True)
        self.same(lambda uow: uow.licenses.for_user("prd_2", "9"))


def _never() -> Any:
    raise AssertionError("the seed has no product")


MemoryMatchesSql.TestCase.settings = settings(max_examples=40, stateful_step_count=30,
                                              deadline=None)
TestMemoryMatchesSql = MemoryMatchesSql.TestCase


class OutboxMatchesSql(_BothStores):
    """Claims among leases, retries, slots and breakers: the SQL statement against
    `licore.lanes.plan`, which the memory store applies as written."""

    @rule(n=st.integers(0, 11), endpoint=st.sampled_from(TARGETS),
          studio=st.sampled_from(STUDIOS), due=st.integers(0, 40))
    def queue_message(self, n: int, endpoint: str, studio: str, due: int) -> None:
        record = Message(f"msg_{n:02}", MessageKind.WEBHOOK, "license.granted", studio,
                         endpoint, "", WebhookBody("{}"), MessageState.PENDING, 0,
                         self.now + due, self.now)

        async def add(uow: UnitOfWork) -> None:
            if await uow.outbox.by_id(record.id) is None:
                await uow.outbox.add([record])
        self.same(add)

    @rule(worker=st.sampled_from(("w1", "w2")), limit=st.integers(1, 5),
          per_studio=st.integers(1, 3), wait=st.integers(0, 40))
    def claim_messages(self, worker: str, limit: int, per_studio: int, wait: int) -> None:
        """The outbox's claims (licore.lanes.plan in memory, one statement in SQL)."""
        now = self.tick(wait)
        self.same(lambda uow: uow.outbox.claim(now, worker, now + 30, limit, per_studio))

    @rule(n=st.integers(0, 11), worker=st.sampled_from(("w1", "w2")),
          state=st.sampled_from((MessageState.DELIVERED, MessageState.PENDING,
                                 MessageState.DEAD)), retry=st.integers(1, 60))
    def settle_message(self, n: int, worker: str, state: MessageState, retry: int) -> None:
        async def settle(uow: UnitOfWork) -> bool | None:
            stored = await uow.outbox.by_id(f"msg_{n:02}")
            if stored is None:
                return None
            return await uow.outbox.save(attrs.evolve(
                stored, state=state, attempts=stored.attempts + 1, claimed_by=None,
                claimed_until=None, next_attempt_at=self.now + retry), worker)
        self.same(settle)

    @rule(endpoint=st.sampled_from(TARGETS), state=st.sampled_from(BreakerState),
          until=st.integers(-10, 60))
    def set_breaker(self, endpoint: str, state: BreakerState, until: int) -> None:
        breaker = (Breaker() if state is BreakerState.CLOSED
                   else Breaker(state, 5, 1, self.now + until))
        self.same(lambda uow: uow.outbox.save_breaker(f"hook:{endpoint}", breaker))
        self.same(lambda uow: uow.outbox.breakers([f"hook:{t}" for t in TARGETS]))



OutboxMatchesSql.TestCase.settings = settings(max_examples=60, stateful_step_count=40,
                                              deadline=None)
TestOutboxMatchesSql = OutboxMatchesSql.TestCase
