"""Product visibility against a simple model, driven by random create and change sequences.

Two studios act (as a studio key or a dashboard seat would); a change acting as the other
studio, or of an id that names no product, is `not_found` and changes nothing (spec 4.2). A
create is a draft whatever it sends (spec 3); a change moves the product to what
`discoverable` says, or leaves it where it is when the field is not sent.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, invariant, rule

from adapters_http.decoding import structure
from licore.actors import ActingStudio
from licore.commands import ChangeProduct, CreateProduct, ListProducts
from licore.errors import NotFound
from licore.model import Product
from licore.services.wiring import UseCases
from tests.core.machine_support import StorageMachine, machine_tests

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
        self.uc = UseCases.of(self.w.deps)
        self.studios: list[ActingStudio] = []
        for n in range(2):
            owner = self.w.run(self.uc.operator.add_account(f"owner{n}", f"{n + 1}", None))
            studio = self.w.run(self.uc.operator.add_studio(f"S{n}", owner.username))
            self.studios.append(ActingStudio(studio.id))
        self.model: dict[str, Model] = {}

    def save(self, studio: int, body: dict[str, object]) -> Product:
        acting = self.studios[studio]
        if "id" in body:
            return self.w.run(self.uc.products.change(acting, structure(body, ChangeProduct)))
        return self.w.run(self.uc.products.create(acting, structure(body, CreateProduct)))

    @rule(target=products, studio=st.integers(0, 1), title=TITLES, sent=SENT)
    def create(self, studio: int, title: str, sent: bool | None) -> str:
        body: dict[str, object] = {"title": title}
        if sent is not None:
            body["discoverable"] = sent
        answer = self.save(studio, body)
        assert answer.discoverable is False  # a create is a draft, whatever it sends
        product_id = answer.id
        assert product_id not in self.model
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
        assert answer.discoverable is held.discoverable

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
        for studio, acting in enumerate(self.studios):
            listed = self.w.run(self.uc.products.list(acting, ListProducts())).items
            seen = {p.id: (p.title, p.discoverable) for p in listed}
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
