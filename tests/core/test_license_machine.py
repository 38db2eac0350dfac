"""Licenses against a simple model, driven by random event sequences."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from licore.errors import AlreadyOwned, InvalidRequest, NotFound
from licore.licenses import LicenseEvent, LicenseState, Source, passes_runtime
from licore.model import License, Product
from licore.services import operator, partner, runtime
from tests.core.machine_support import StorageMachine, machine_tests

USERS = ("11", "12", "13")
E = LicenseEvent


class LicenseMachine(StorageMachine):
    def __init__(self) -> None:
        super().__init__()
        d = self.w.deps
        self.w.run(operator.add_account(d, "owner", "1", None))
        self.studio = self.w.run(operator.add_studio(d, "S", "owner"))
        self.products: list[str] = []
        for title in ("A", "B"):
            draft = Product(id=d.new_id("prd"), studio_id=self.studio.id, slug="",
                            title=title, tagline="", description="", price_credit=0,
                            discoverable=False, licensing_enabled=True, created_at=0,
                            updated_at=0)
            self.products.append(self.w.run(self._add(draft)).id)
        self.model: dict[tuple[str, str], LicenseState] = {}
        self.old_digests: set[str] = set()

    async def _add(self, draft: Product) -> Product:
        async with self.w.deps.storage.unit_of_work() as uow:
            return await uow.products.add(draft, "p")

    @rule(product=st.integers(0, 1), user=st.sampled_from(USERS),
          event=st.sampled_from(list(LicenseEvent)))
    def act(self, product: int, user: str, event: LicenseEvent) -> None:
        pid = self.products[product]
        state = self.model.get((pid, user), LicenseState.NONE)
        before = self._stored(pid, user)
        source = Source.PURCHASE_PASS if event is E.PURCHASE_PASS else Source.GRANT
        try:
            self.w.run(partner.change_license(self.w.deps, self.studio.id, pid, user, event,
                                              source))
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
        after = self._stored(pid, user)
        assert after is not None and after.state is expected
        if before is not None and before.key_digest and before.key_digest != after.key_digest:
            self.old_digests.add(before.key_digest)

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
    def only_an_active_license_passes_the_runtime_check(self) -> None:
        vault = self.w.deps.vault
        for (pid, user), state in self.model.items():
            stored = self._stored(pid, user)
            if stored is None or stored.key_ciphertext is None:
                continue
            key = vault.decrypt(stored.key_ciphertext, stored.id)
            body = {"user_id": user, "product_id": pid, "key": key}
            answer = self.w.run(runtime.check(self.w.deps, body, "127.0.0.1"))
            assert answer == {"success": state is LicenseState.ACTIVE}

    @invariant()
    def a_replaced_or_cleared_key_finds_no_license(self) -> None:
        async def find(digest: str) -> License | None:
            async with self.w.deps.storage.unit_of_work() as uow:
                return await uow.licenses.by_key_digest(digest)

        for digest in self.old_digests:
            assert self.w.run(find(digest)) is None


TestLicenses, TestLicensesInMemory = machine_tests(LicenseMachine, max_examples=60, steps=30)
