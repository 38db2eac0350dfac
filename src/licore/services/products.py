"""A studio's products (spec 4.2 and 3, contract 3). Every query is scoped to the acting
studio; another studio's product is `not_found`, never 403."""

from __future__ import annotations

from typing import assert_never

import attrs

from licore import products as prod
from licore.actors import ActingStudio
from licore.commands import ChangeProduct, CreateProduct, ListProducts
from licore.errors import NotFound
from licore.events import Topic
from licore.model import Page, Product
from licore.ports import Clock
from licore.services.announce import Announcer, product_data
from licore.services.ids import Ids
from licore.storage_ports import Storage, UnitOfWork


async def own_product(uow: UnitOfWork, studio: ActingStudio, product_id: str) -> Product:
    """The studio's product `product_id`, or `not_found` (also when it is another's)."""
    return _owned(await uow.products.by_id(product_id), studio)


async def held_product(uow: UnitOfWork, studio: ActingStudio, product_id: str) -> Product:
    """`own_product` for a unit of work that saves the product: its row held until the unit
    ends (`Products.hold`), so two changes at once are made one after the other."""
    return _owned(await uow.products.hold(product_id), studio)


def _owned(product: Product | None, studio: ActingStudio) -> Product:
    if product is None or product.studio_id != studio.studio_id:
        raise NotFound("no such product")
    return product


@attrs.frozen
class Products:
    storage: Storage
    clock: Clock
    ids: Ids
    announce: Announcer

    async def list(self, studio: ActingStudio, command: ListProducts) -> Page[Product]:
        async with self.storage.unit_of_work() as uow:
            return await uow.products.of_studio(studio.studio_id, command.page.limit,
                                                command.page.cursor)

    async def create(self, studio: ActingStudio, command: CreateProduct) -> Product:
        """A new draft, whatever `discoverable` said (spec 3), with a de-duplicated slug."""
        now = self.clock.now()
        created = prod.transition(prod.Visibility.NONE, prod.VisibilityEvent.CREATE)
        draft = Product(
            id=self.ids.new("prd"), studio_id=studio.studio_id, slug="", title=command.title,
            tagline=command.tagline or "", description=command.description or "",
            price_credit=command.price_credit or 0,
            discoverable=created.next is prod.Visibility.LISTED,
            licensing_enabled=True, created_at=now, updated_at=now)
        slug = ""
        for effect in created.effects:
            match effect:
                case prod.ProductEffect.GENERATE_SLUG:
                    slug = prod.slug_base(command.title)
                case _:
                    assert_never(effect)
        async with self.storage.unit_of_work() as uow:
            return await uow.products.add(draft, slug)

    async def change(self, studio: ActingStudio, command: ChangeProduct) -> Product:
        """Only the fields sent change; visibility moves by the table in `licore.products`.
        The slug stays as it was (contract 3)."""
        sent = {name: value for name, value in attrs.asdict(command).items()
                if value is not None and name not in ("id", "discoverable")}
        async with self.storage.unit_of_work() as uow:
            found = await uow.products.hold(command.id)
            current = found if found is not None and found.studio_id == studio.studio_id else None
            state = (prod.Visibility.NONE if current is None
                     else prod.visibility(current.discoverable))
            outcome = prod.transition(state, prod.change_event(command.discoverable))
            assert current is not None  # the table refuses a change of no product
            assert not outcome.effects  # a change generates no slug
            product = attrs.evolve(current, **sent,
                                   discoverable=outcome.next is prod.Visibility.LISTED,
                                   updated_at=self.clock.now())
            await uow.products.save(product)
            changed = [*sent, *(["discoverable"] if command.discoverable is not None else [])]
            await self.announce.event(uow, studio.studio_id, Topic.PRODUCT_CHANGED,
                                      product_data(product, changed))
        return product
