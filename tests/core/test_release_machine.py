"""Release channels against a simple model, driven by random publish and withdraw sequences.

Four uploaded versions of one product; each step publishes one to stable or beta, or
withdraws one. The model keeps each version's standing and the two pointers (live, beta) by
the rules of docs/api.md ("Release channels"); after every step the product, the runtime's
answers (with and without a channel, for a buyer following beta) and the buyer's library
must agree with it."""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from adapters_formats.codec import RobloxModelCodec
from licore import commands as c
from licore.actors import ActingPerson, ActingStudio
from licore.errors import InvalidRequest
from licore.licenses import LicenseEvent
from licore.model import Product
from licore.services.wiring import UseCases
from tests.core.machine_support import StorageMachine, machine_tests
from tests.support.models import product_model

LABELS = ("1", "2", "3", "4")
VERSIONS = st.integers(0, len(LABELS) - 1)
CHANNELS = st.sampled_from(["stable", "beta"])
BUYER = "2002"


class ReleaseMachine(StorageMachine):
    def __init__(self) -> None:
        super().__init__()
        self.uc = UseCases.of(self.w.deps)
        run, op = self.w.run, self.uc.operator
        owner = run(op.add_account("owner", "1001", None))
        buyer = run(op.add_account("buyer", BUYER, None))
        self.studio = ActingStudio(run(op.add_studio("S", owner.username)).id)
        self.person = ActingPerson(buyer.id)
        self.product = run(self.uc.products.create(self.studio, c.CreateProduct("Kit"))).id
        data = RobloxModelCodec().write(product_model())
        self.ids = [run(self.uc.packages.upload(self.studio, c.UploadVersion(
            self.product, label, data))).version.id for label in LABELS]
        run(self.uc.lifecycle.change(self.studio, c.ChangeLicense(
            c.LicenseTarget(self.product, BUYER), LicenseEvent.GRANT)))
        run(self.uc.library.follow(self.person, c.FollowChannel(self.product, "beta")))
        self.key = self.w.run(self._key())
        self.standing = ["draft"] * len(LABELS)
        self.live: int | None = None
        self.beta: int | None = None

    async def _key(self) -> str:
        async with self.w.deps.storage.unit_of_work() as uow:
            held = await uow.licenses.for_user(self.product, BUYER)
        assert held is not None and held.key_ciphertext is not None
        return self.w.deps.vault.decrypt(held.key_ciphertext, held.id)

    @rule(n=VERSIONS, channel=CHANNELS)
    def publish(self, n: int, channel: str) -> None:
        refused = self.standing[n] == "withdrawn" or (
            channel == "beta" and self.standing[n] == "stable")
        try:
            self.w.run(self.uc.packages.publish(self.studio, c.PublishVersion(
                self.product, self.ids[n], channel)))
        except InvalidRequest:
            assert refused
            return
        assert not refused
        self.standing[n] = channel
        if channel == "stable":
            self.live, self.beta = n, None
        else:
            self.beta = n

    @rule(n=VERSIONS)
    def withdraw(self, n: int) -> None:
        try:
            self.w.run(self.uc.packages.withdraw(self.studio, c.WithdrawVersion(
                self.product, self.ids[n])))
        except InvalidRequest:
            assert self.standing[n] == "draft"
            return
        assert self.standing[n] != "draft"
        self.standing[n] = "withdrawn"
        if self.live == n:
            stable = [i for i, s in enumerate(self.standing) if s == "stable"]
            self.live = max(stable) if stable else None
        if self.beta == n:
            self.beta = None

    def _label(self, n: int | None) -> str:
        return "" if n is None else LABELS[n]

    @invariant()
    def the_product_points_where_the_model_does(self) -> None:
        async def read() -> Product | None:
            async with self.w.deps.storage.unit_of_work() as uow:
                return await uow.products.by_id(self.product)

        product = self.w.run(read())
        assert product is not None
        assert product.current_version_id == (None if self.live is None else self.ids[self.live])
        assert product.beta_version_id == (None if self.beta is None else self.ids[self.beta])

    @invariant()
    def the_runtime_offers_what_the_model_says(self) -> None:
        def latest(channel: str | None) -> str:
            got = self.w.run(self.uc.runtime.version(c.AskVersion(
                c.NumberOrText(BUYER), self.product, self.key, channel=channel), "127.0.0.1"))
            assert got is not None
            return got.latest

        assert latest(None) == self._label(self.live)
        assert latest("beta") == self._label(self.beta if self.beta is not None
                                             else self.live)

    @invariant()
    def the_library_lists_the_downloadable_builds(self) -> None:
        found = self.w.run(self.uc.library.versions(self.person,
                                                    c.ListLibraryVersions(self.product)))
        assert [v.label for v in found.page.items] == [
            LABELS[i] for i, s in enumerate(self.standing) if s in ("stable", "beta")]


TestReleases, TestReleasesInMemory = machine_tests(ReleaseMachine, max_examples=15,
                                                   steps=15)
