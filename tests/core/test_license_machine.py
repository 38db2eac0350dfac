"""Licenses against a simple model, driven by random event sequences: the specification's
events and licore's lifecycle (transfer, expiry as time passes, renewal, trials, tiers,
re-keying)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from licore import license_commands as lc
from licore.actors import ActingPerson, ActingStudio
from licore.commands import (
    AddWebhook,
    ChangeLicense,
    Check,
    JsonValue,
    LicenseTarget,
    ListDeliveries,
    NumberOrText,
)
from licore.errors import AlreadyOwned, InvalidRequest, LicoreError, NotFound
from licore.events import MessageKind, WebhookBody
from licore.licenses import LicenseEvent, LicenseState, Source, passes_runtime
from licore.model import License, Product
from licore.services.license_lifecycle import DAY, LicenseLifecycle
from licore.services.wiring import UseCases
from tests.core.machine_support import StorageMachine, machine_tests

USERS = ("11", "12", "13")
E = LicenseEvent


class LicenseMachine(StorageMachine):
    def __init__(self) -> None:
        super().__init__()
        d = self.w.deps
        self.uc = UseCases.of(d)
        self.w.run(UseCases.of(d).operator.add_account("owner", "1", None))
        self.studio = self.w.run(UseCases.of(d).operator.add_studio("S", "owner"))
        self.products: list[str] = []
        for title in ("A", "B"):
            draft = Product(id=d.new_id("prd"), studio_id=self.studio.id, slug="",
                            title=title, tagline="", description="", price_credit=0,
                            discoverable=title == "A", licensing_enabled=True, created_at=0,
                            updated_at=0)
            self.products.append(self.w.run(self._add(draft)).id)
        self.model: dict[tuple[str, str], LicenseState] = {}
        # The buyers have accounts, so a person may take a listed product's trial too.
        self.accounts = {u: self.w.run(self.uc.operator.add_account(f"p{u}", u, None)).id
                         for u in USERS}
        self.old_digests: set[str] = set()
        self.life = LicenseLifecycle.of(d.storage, d.clock, d.random, d.vault)
        # Product A offers a two-day trial and a "pro" tier; product B neither.
        self.w.run(self.life.set_policy(ActingStudio(self.studio.id), lc.SetLicensePolicy(
            self.products[0], trial_days=2,
            tiers=(lc.TierSpec("pro", JsonValue({"pro": True})),))))
        self.ends: dict[tuple[str, str], int | None] = {}
        self.sources: dict[tuple[str, str], Source] = {}
        # Purchase-pass licenses the seller revoked: only the seller's grant restores them.
        self.revoked_passes: set[tuple[str, str]] = set()
        self.trials: dict[tuple[str, str], int] = {}
        # Every key that was rotated, cleared or transferred away, in plain text, with the
        # license's product and holder: none may ever pass a runtime check again.
        self.dead_keys: set[tuple[str, str, str]] = set()
        # The seller's webhook sees every grant, so the trials told can be counted.
        self.w.run(self.uc.webhooks.add(ActingStudio(self.studio.id), AddWebhook(
            "https://example.com/hook", ("license.granted",))))

    async def _add(self, draft: Product) -> Product:
        async with self.w.deps.storage.unit_of_work() as uow:
            return await uow.products.add(draft, "p")

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS),
          event=st.sampled_from([e for e in LicenseEvent if e is not E.RECORDED_SALE]))
    def act(self, product: int, user: str, event: LicenseEvent) -> None:
        pid = self.products[product]
        state = self.model.get((pid, user), LicenseState.NONE)
        before = self._stored(pid, user)
        source = Source.PURCHASE_PASS if event is E.PURCHASE_PASS else Source.GRANT
        try:
            self.w.run(self.uc.lifecycle.change(ActingStudio(self.studio.id), ChangeLicense(
                LicenseTarget(pid, user), event, source)))
        except AlreadyOwned:
            assert event is E.GRANT and state in (LicenseState.ACTIVE, LicenseState.PAUSED)
            return
        except NotFound:
            assert state is LicenseState.NONE and event in (E.REVOKE, E.PAUSE, E.RESUME)
            return
        except InvalidRequest:
            assert state is LicenseState.INACTIVE and event in (E.PAUSE, E.RESUME)
            return
        expected = {
            E.GRANT: LicenseState.ACTIVE,
            E.PURCHASE_PASS: LicenseState.ACTIVE if state is LicenseState.NONE else state,
            E.REVOKE: LicenseState.INACTIVE,
            E.PAUSE: LicenseState.PAUSED,
            E.RESUME: LicenseState.ACTIVE,
        }[event]
        self.model[(pid, user)] = expected
        if event is E.GRANT or (event is E.PURCHASE_PASS and state is LicenseState.NONE):
            self.ends[(pid, user)] = None  # a grant starts afresh
            self.sources[(pid, user)] = source
        if event is E.GRANT:
            self.revoked_passes.discard((pid, user))
        if (event is E.REVOKE and state is not LicenseState.INACTIVE
                and self.sources.get((pid, user)) is Source.PURCHASE_PASS):
            self.revoked_passes.add((pid, user))
        after = self._stored(pid, user)
        assert after is not None and after.state is expected
        if before is not None and before.key_digest and before.key_digest != after.key_digest:
            self._retire(before)

    # --- licore's lifecycle ------------------------------------------------------------

    def _standing(self, key: tuple[str, str]) -> str:
        state = self.model.get(key, LicenseState.NONE)
        end = self.ends.get(key)
        if state is LicenseState.ACTIVE and end is not None and self.w.clock.now() >= end:
            return "expired"
        return state.value

    def _try(self, call: Coroutine[Any, Any, Any],
             refused: type[LicoreError] | None) -> Any:
        """Run `call`; it must raise `refused` (and change nothing), or succeed if None."""
        before = {k: self._stored(*k) for k in self.model}
        if refused is None:
            return self.w.run(call)
        try:
            self.w.run(call)
        except refused:
            assert {k: self._stored(*k) for k in self.model} == before
            return None
        raise AssertionError(f"expected {refused.__name__}")

    @rule(seconds=st.integers(0, 3 * DAY))
    def time_passes(self, seconds: int) -> None:
        self.w.clock.advance(seconds)

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS),
          days=st.none() | st.integers(1, 3))
    def grant_with_an_end(self, product: int, user: str, days: int | None) -> None:
        key = (self.products[product], user)
        state = self.model.get(key, LicenseState.NONE)
        held = state in (LicenseState.ACTIVE, LicenseState.PAUSED)
        before = self._stored(*key)
        done = self._try(self.life.grant(ActingStudio(self.studio.id), lc.GrantLicense(
            LicenseTarget(*key), lc.Terms(duration_days=days))),
            AlreadyOwned if held else None)
        if done is None:
            return
        self.model[key], self.sources[key] = LicenseState.ACTIVE, Source.GRANT
        self.ends[key] = None if days is None else self.w.clock.now() + days * DAY
        self.revoked_passes.discard(key)
        assert done.expires_at == self.ends[key]
        if before is not None and before.key_digest:
            self._retire(before)

    @rule(product=st.just(0), user=st.sampled_from(USERS), days=st.integers(1, 3),
          absolute=st.booleans())
    def renew(self, product: int, user: str, days: int, absolute: bool) -> None:
        key = (self.products[product], user)
        standing, end, now = self._standing(key), self.ends.get(key), self.w.clock.now()
        terms = (lc.Terms(expires_at=now + days * DAY) if absolute
                 else lc.Terms(duration_days=days))
        refused: type[LicoreError] | None = None
        if standing == "none":
            refused = NotFound
        elif standing == "inactive" or (end is None and not absolute) or (
                absolute and end is not None and now + days * DAY <= end):
            refused = InvalidRequest
        done = self._try(self.life.renew(ActingStudio(self.studio.id), lc.RenewLicense(
            LicenseTarget(*key), terms)), refused)
        if done is None:
            return
        self.ends[key] = now + days * DAY if absolute else max(now, end or now) + days * DAY
        assert done.expires_at == self.ends[key] and done.state is self.model[key]
        assert key not in self.revoked_passes  # a renewal never restores a revoked pass

    # Transfers and renewals act on product A only: sequences that reach their rarer rows
    # (a transfer to someone whose license was revoked) come up far more often.
    @rule(product=st.just(0), giver=st.sampled_from(USERS), taker=st.sampled_from(USERS))
    def transfer(self, product: int, giver: str, taker: str) -> None:
        pid = self.products[product]
        source, target = giver, taker
        old_key, new_key = (pid, source), (pid, target)
        refused: type[LicoreError] | None = None
        target_standing = self._standing(new_key)
        if source == target:
            refused = InvalidRequest
        elif self._standing(old_key) == "none":
            refused = NotFound
        elif self._standing(old_key) != "active":
            refused = InvalidRequest
        elif target_standing == "inactive":
            refused = InvalidRequest  # a transfer never restores a revoked license
        elif target_standing != "none":
            refused = AlreadyOwned
        before = self._stored(*old_key)
        done = self._try(self.life.transfer(ActingStudio(self.studio.id), lc.TransferLicense(
            pid, source, target)), refused)
        if done is None:
            return
        assert before is not None and before.key_digest is not None
        self._retire(before)
        self.model[old_key], self.model[new_key] = LicenseState.INACTIVE, LicenseState.ACTIVE
        self.ends[new_key] = self.ends.get(old_key)
        self.sources[new_key] = self.sources[old_key]
        assert done.old.transferred_to == target and done.new.source is self.sources[old_key]
        # Exactly one of the two holds it now.
        assert [self._in_force(*old_key), self._in_force(*new_key)] == [False, True]

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS), by_person=st.booleans())
    def trial(self, product: int, user: str, by_person: bool) -> None:
        """The seller starts it, or the person takes it on the store (product A is listed,
        B is a draft, which a person cannot find)."""
        key = (self.products[product], user)
        refused: type[LicoreError] | None = None
        if product == 1:
            refused = NotFound if by_person else InvalidRequest  # no trial offered
        elif self._standing(key) != "none" or self.trials.get(key):
            refused = AlreadyOwned
        call = (self.life.take_trial(ActingPerson(self.accounts[user]), lc.TakeTrial(key[0]))
                if by_person else
                self.life.start_trial(ActingStudio(self.studio.id), LicenseTarget(*key)))
        done = self._try(call, refused)
        if done is None:
            return
        self.trials[key] = self.trials.get(key, 0) + 1
        self.model[key], self.sources[key] = LicenseState.ACTIVE, Source.TRIAL
        assert done.source is Source.TRIAL
        self.ends[key] = self.w.clock.now() + 2 * DAY
        assert done.expires_at == self.ends[key]

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS))
    def rekey(self, product: int, user: str) -> None:
        key = (self.products[product], user)
        standing = self._standing(key)
        refused = {"none": NotFound, "inactive": InvalidRequest}.get(standing)
        before = self._stored(*key)
        done = self._try(self.life.rekey(ActingStudio(self.studio.id), LicenseTarget(*key)),
                         refused)
        if done is None:
            return
        assert before is not None and before.key_digest is not None
        assert done.key_digest != before.key_digest
        self._retire(before)

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS),
          tier=st.sampled_from([None, "pro", "gold"]))
    def change_tier(self, product: int, user: str, tier: str | None) -> None:
        key = (self.products[product], user)
        standing = self._standing(key)
        refused = {"none": NotFound, "inactive": InvalidRequest}.get(standing)
        if refused is None and tier is not None and (tier == "gold" or product == 1):
            refused = InvalidRequest
        done = self._try(self.life.set_tier(ActingStudio(self.studio.id), lc.SetTier(
            LicenseTarget(*key), tier)), refused)
        assert done is None or done.tier == tier

    @rule()
    def sweep(self) -> None:
        self.w.run(self.life.sweep_expiries())

    def _plain(self, license: License) -> str:
        assert license.key_ciphertext is not None
        return self.w.deps.vault.decrypt(license.key_ciphertext, license.id)

    def _retire(self, before: License) -> None:
        """`before`'s key was replaced or cleared: it is dead from now on."""
        assert before.key_digest is not None
        self.old_digests.add(before.key_digest)
        self.dead_keys.add((before.product_id, before.platform_id, self._plain(before)))

    def _passes(self, pid: str, user: str, key: str) -> bool:
        return self.w.run(self.uc.runtime.check(Check(NumberOrText(user), pid, key),
                                                "127.0.0.1"))

    def _in_force(self, pid: str, user: str) -> bool:
        stored = self._stored(pid, user)
        if stored is None or stored.key_ciphertext is None:
            return False
        return self._passes(pid, user, self._plain(stored))

    @invariant()
    def expiry_is_stored_as_modelled(self) -> None:
        for key, end in self.ends.items():
            stored = self._stored(*key)
            assert stored is not None and stored.expires_at == end

    @invariant()
    def a_revoked_purchase_pass_license_stays_revoked(self) -> None:
        for key in self.revoked_passes:
            stored = self._stored(*key)
            assert stored is not None and stored.state is LicenseState.INACTIVE

    @invariant()
    def a_trial_is_granted_at_most_once_per_person_and_product(self) -> None:
        # Counted from what the seller was told, not from the model: every trial granted
        # writes one `license.granted` marked `trial`, whichever door it came through.
        told = self.w.run(self.uc.webhooks.deliveries(ActingStudio(self.studio.id),
                                                      MessageKind.WEBHOOK, ListDeliveries()))
        bodies = [m.payload for m in told.items]
        assert all(isinstance(b, WebhookBody) for b in bodies)
        trials = Counter((d["product_id"], d["platform_id"])
                         for d in (json.loads(b.text)["data"] for b in bodies
                                   if isinstance(b, WebhookBody))
                         if d.get("trial"))
        assert all(n == 1 for n in trials.values())
        assert set(trials) == {k for k, n in self.trials.items() if n}

    @invariant()
    def a_rotated_cleared_or_transferred_key_never_authenticates_again(self) -> None:
        for pid, user, key in self.dead_keys:
            assert not self._passes(pid, user, key)

    def _stored(self, pid: str, user: str) -> License | None:
        async def read() -> License | None:
            async with self.w.deps.storage.unit_of_work() as uow:
                return await uow.licenses.for_user(pid, user)

        return self.w.run(read())

    @invariant()
    def stored_state_matches_the_model(self) -> None:
        for (pid, user), state in self.model.items():
            stored = self._stored(pid, user)
            assert stored is not None and stored.state is state
            has_key = stored.key_digest is not None and stored.key_ciphertext is not None
            assert has_key == (state is not LicenseState.INACTIVE)
            assert passes_runtime(stored.state) == (state is LicenseState.ACTIVE)

    @invariant()
    def only_an_active_unexpired_license_passes_the_runtime_check(self) -> None:
        for pid, user in self.model:
            # Never in force past its end, nor once transferred away (then inactive).
            assert self._in_force(pid, user) is (self._standing((pid, user)) == "active")

    @invariant()
    def a_replaced_or_cleared_key_finds_no_license(self) -> None:
        async def find(digest: str) -> License | None:
            async with self.w.deps.storage.unit_of_work() as uow:
                return await uow.licenses.by_key_digest(digest)

        for digest in self.old_digests:
            assert self.w.run(find(digest)) is None


TestLicenses, TestLicensesInMemory = machine_tests(LicenseMachine, max_examples=60, steps=30)
