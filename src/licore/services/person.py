"""A person's own pages: what they own, the apps acting for them, and the storefront."""

from __future__ import annotations

import attrs

from licore.actors import ActingPerson
from licore.commands import DownloadCopy, ListLibrary
from licore.errors import NotFound
from licore.model import Account, Product
from licore.ports import Clock, ConnectedApp, LibraryEntry
from licore.services import device
from licore.services.announce import Announcer
from licore.services.builds import Download
from licore.services.library import Library
from licore.storage_ports import Storage


async def account(storage: Storage, account_id: str) -> Account:
    async with storage.unit_of_work() as uow:
        found = await uow.accounts.by_id(account_id)
    if found is None:
        raise NotFound("the account is gone")
    return found


@attrs.frozen
class People:
    storage: Storage
    clock: Clock
    library: Library
    announce: Announcer

    async def link_chat(self, person: Account, chat_user_id: str | None) -> None:
        """Link the person's chat account (proved by the chat service's OAuth sign-in), and
        queue the roles every product they hold earns; unlinking takes nothing away."""
        async with self.storage.unit_of_work() as uow:
            await uow.hooks.link_chat(person.platform_id, chat_user_id, self.clock.now())
            if chat_user_id is None:
                return
            owned = await uow.licenses.library_of(person.platform_id, None, None)
            for entry in owned.items:
                await self.announce.chat_roles(uow, entry.product.studio_id, entry.license,
                                               True)

    async def chat_user(self, person: Account) -> str | None:
        async with self.storage.unit_of_work() as uow:
            return await uow.hooks.chat_user(person.platform_id)

    async def owned(self, person: Account) -> tuple[LibraryEntry, ...]:
        """Products the person holds an active license for: what they can download."""
        return (await self.library.list(ActingPerson(person.id), ListLibrary())).items

    async def own_apps(self, person: Account) -> list[ConnectedApp]:
        """Library keys acting for the person."""
        return await device.connected_apps(self.storage, self.clock, account_id=person.id)

    async def revoke_own_app(self, person: Account, key_id: str) -> None:
        await device.revoke_connected_app(self.storage, self.clock, key_id,
                                          account_id=person.id)

    async def storefront(self) -> list[tuple[Product, str]]:
        """Listed products with their studio's name; drafts never appear."""
        async with self.storage.unit_of_work() as uow:
            return list(await uow.products.listed())

    async def download(self, person: Account, command: DownloadCopy) -> Download:
        """The person's own copy of a product they hold: the library's download, acting for
        the person as an app holding their library key would."""
        return await self.library.download(ActingPerson(person.id), command)
