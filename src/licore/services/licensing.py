"""Reading a studio's licenses and alerts (spec 4.3 and 3, contract 3). Every change of a
license is `services.license_lifecycle`'s, the one owner of license transitions."""

from __future__ import annotations

import attrs

from licore.actors import ActingStudio
from licore.commands import ListAlerts, ListLicenses
from licore.errors import InvalidRequest, NotFound
from licore.model import Alert, License, Page
from licore.services.products import own_product
from licore.storage_ports import Storage, UnitOfWork


async def resolve_user(uow: UnitOfWork, user: str, chat_user: str | None = None) -> str:
    """All digits is a platform id; anything else a username from the user directory; or,
    with `chat_user`, the person who linked that chat account (docs/licenses.md)."""
    if chat_user is not None:
        linked = await uow.hooks.linked_to(chat_user)
        if not linked:
            raise NotFound("nobody linked that chat account")
        if len(linked) > 1:
            raise InvalidRequest("more than one person linked that chat account; name the "
                                 "user instead", "chat_user")
        return linked[0]
    if user.isdigit():
        return user
    account = await uow.accounts.by_username(user)
    if account is None:
        raise NotFound("no user with that name")
    return account.platform_id


@attrs.frozen
class Licensing:
    storage: Storage

    async def list(self, studio: ActingStudio, command: ListLicenses) -> Page[License]:
        """The product's licenses a page at a time, or with `user` that user's alone (a page
        of one or none; an unknown username is `not_found`, as wherever `user` is named)."""
        async with self.storage.unit_of_work() as uow:
            await own_product(uow, studio, command.product_id)
            if command.user or command.chat_user is not None:
                found = await uow.licenses.for_user(
                    command.product_id, await resolve_user(uow, command.user or "",
                                                           command.chat_user))
                return Page(() if found is None else (found,), None)
            return await uow.licenses.of_product(command.product_id, command.page.limit,
                                                 command.page.cursor)

    async def alerts(self, studio: ActingStudio, command: ListAlerts) -> Page[Alert]:
        async with self.storage.unit_of_work() as uow:
            if command.product_id is not None:
                await own_product(uow, studio, command.product_id)
            return await uow.abuse.alerts.of_studio(studio.studio_id, command.product_id,
                                                    command.page.limit, command.page.cursor)
