"""Product visibility against a simple model, driven by random create and change sequences.

Two studios each hold a studio key; a change through the other studio's key, or of an id
that names no product, is `not_found` and changes nothing (spec 4.2). A create is a draft
whatever it sends (spec 3); a change moves the product to what `discoverable` says, or leaves
it where it is when the field is not sent.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, invariant, rule

from licore.errors import NotFound
from licore.model import ApiKey
from licore.services import device, operator, partner
from tests.core.machine_support import StorageMachine, machine_tests
from tests.support.scenario import obtain_key

TITLES = st.sampled_from(["Sword", "Über Sword", "Sword", "Tom's Gun", "!!!"])
SENT = st.sampled_from([None, True, False])


@attrs.define
class Model:
    studio: int
    title: str
    discoverable: bool


class ProductVisibilityMachine(StorageMachine):
    products = Bundle("products")

    def __init__(self) -> None:
        super().__init__()
        d = self.w.deps
        client = self.w.run(operator.add_client(d, "App", "d", "products:read products:write"))
        self.keys: list[ApiKey] = []
        for n in range(2):
            owner = self.w.run(operator.add_account(d, f"owner{n}", f"{n + 1}", None))
            studio = self.w.run(operator.add_studio(d, f"S{n}", owner.username))
            plain = self.w.run(obtain_key(d, client, "products:read products:write", owner,
                                          studio.id))
            self.keys.append(self.w.run(device.authenticate(d, plain)))
        self.model: dict[str, Model] = {}

    def save(self, studio: int, body: dict[str, object]) -> dict[str, object]:
        return self.w.run(partner.save_product(self.w.deps, self.keys[studio], body))

    @rule(target=products, studio=st.integers(0, 1), title=TITLES, sent=SENT)
    def create(self, studio: int, title: str, sent: bool | None) -> str:
        body: dict[str, object] = {"title": title}
        if sent is not None:
            body["discoverable"] = sent
        answer = self.save(studio, body)
        assert answer["discoverable"] is False  # a create is a draft, whatever it sends
        product_id = answer["id"]
        assert isinstance(product_id, str) and product_id not in self.model
        self.model[product_id] = Model(studio, title, False)
        return product_id

    @rule(product=products, through=st.integers(0, 1), sent=SENT,
          title=st.none() | TITLES)
    def change(self, product: str, through: int, sent: bool | None,
               title: str | None) -> None:
        body: dict[str, object] = {"id": product}
        if sent is not None:
            body["discoverable"] = sent
        if title is not None:
            body["title"] = title
        held = self.model[product]
        if through != held.studio:
            try:
                self.save(through, body)
            except NotFound:
                return  # the invariants check nothing changed
            raise AssertionError("another studio's key changed a product")
        answer = self.save(through, body)
        if sent is not None:
            held.discoverable = sent
        if title is not None:
            held.title = title
        assert answer["discoverable"] is held.discoverable

    @rule(studio=st.integers(0, 1), sent=SENT)
    def change_no_product(self, studio: int, sent: bool | None) -> None:
        body: dict[str, object] = {"id": "prd_none"}
        if sent is not None:
            body["discoverable"] = sent
        try:
            self.save(studio, body)
        except NotFound:
            return
        raise AssertionError("a change of no product succeeded")

    @invariant()
    def each_studio_lists_its_products_as_the_model_has_them(self) -> None:
        for studio, key in enumerate(self.keys):
            listed = self.w.run(partner.list_products(self.w.deps, key, {}))["products"]
            seen = {p["id"]: (p["title"], p["discoverable"]) for p in listed}
            assert seen == {pid: (m.title, m.discoverable)
                            for pid, m in self.model.items() if m.studio == studio}

    @invariant()
    def the_public_catalogue_is_exactly_the_listed_products(self) -> None:
        async def listed() -> set[str]:
            async with self.w.deps.storage.unit_of_work() as uow:
                return {p.id for p, _ in await uow.products.listed()}

        assert self.w.run(listed()) == {pid for pid, m in self.model.items() if m.discoverable}


TestProductVisibility, TestProductVisibilityInMemory = machine_tests(
    ProductVisibilityMachine, max_examples=30, steps=20)
