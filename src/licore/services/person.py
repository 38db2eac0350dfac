"""A person's own pages: what they own, the apps acting for them, and the storefront."""

from __future__ import annotations

import attrs

from licore.actors import ActingPerson
from licore.commands import (
    BrowseStore,
    DownloadCopy,
    FollowChannel,
    ListLibrary,
    ListLibraryVersions,
)
from licore.errors import InvalidRequest, NotFound
from licore.licenses import in_force
from licore.model import Account, License, Plan, Product, Version
from licore.ports import ChatService, Clock, ConnectedApp, LibraryEntry
from licore.products import browse
from licore.services.announce import Announcer
from licore.services.builds import Download
from licore.services.keys import Keys
from licore.services.library import Library
from licore.storage_ports import Storage

# How many of a product's published versions its store page names, newest first.
STORE_VERSIONS = 20


@attrs.frozen
class StorePage:
    """What the store shows of one listed product: its studio's name, its published
    versions (newest first) and whether the visitor already holds it."""

    product: Product
    studio: str
    versions: tuple[Version, ...]
    owned: bool
    plans: tuple[Plan, ...] = ()  # how the studio sells it (docs/licenses.md, "Plans")


@attrs.frozen
class Shelf:
    """One product of a person's library with the versions they may download, newest
    first: those `GET /v1/library?versions=1` lists, by the same use case."""

    entry: LibraryEntry
    versions: tuple[Version, ...]


@attrs.frozen
class People:
    storage: Storage
    clock: Clock
    library: Library
    announce: Announcer
    keys: Keys
    chat: ChatService | None = None  # None: no chat service configured

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

    @property
    def chat_enabled(self) -> bool:
        return self.chat is not None

    def chat_sign_in_url(self, state: str, callback: str) -> str:
        """Where the person signs in to the chat service to link their account (OAuth 2.0,
        scope `identify`); `state` ties the answer to their session."""
        if self.chat is None:
            raise InvalidRequest("this server has no chat service configured")
        return self.chat.authorize_url(state, callback)

    async def link_chat_code(self, person: Account, code: str, callback: str) -> bool:
        """Link the chat account the chat service's authorization `code` proves; False when
        it proves none (or no chat service is configured)."""
        user = await self.chat.identify(code, callback) if self.chat is not None else None
        if user is None:
            return False
        await self.link_chat(person, user)
        return True

    async def chat_user(self, person: Account) -> str | None:
        async with self.storage.unit_of_work() as uow:
            return await uow.hooks.chat_user(person.platform_id)

    async def owned(self, person: Account) -> tuple[LibraryEntry, ...]:
        """Products the person holds an active license for: what they can download."""
        return (await self.library.list(ActingPerson(person.id), ListLibrary())).items

    async def shelves(self, person: Account) -> tuple[Shelf, ...]:
        """Each product the person holds, with every version they may download."""
        acting, shelves = ActingPerson(person.id), []
        for entry in await self.owned(person):
            try:
                found = await self.library.versions(acting, ListLibraryVersions(
                    entry.product.id))
            except NotFound:  # paused or ended since the list was read
                continue
            shelves.append(Shelf(entry, tuple(reversed(found.page.items))))
        return tuple(shelves)

    async def own_apps(self, person: Account) -> list[ConnectedApp]:
        """Library keys acting for the person."""
        return await self.keys.connected_apps(account_id=person.id)

    async def revoke_own_app(self, person: Account, key_id: str) -> None:
        await self.keys.revoke_connected_app(key_id, account_id=person.id)

    async def storefront(self, command: BrowseStore) -> list[tuple[Product, str]]:
        """Listed products with their studio's name, found and ordered as the visitor asked;
        drafts never appear."""
        async with self.storage.unit_of_work() as uow:
            listed = await uow.products.listed()
        return browse(listed, command.q, command.sort)

    async def store_page(self, product_id: str, visitor: Account | None) -> StorePage:
        """A listed product's page; a draft, or a product that is not listed, is not found,
        exactly as one that does not exist."""
        async with self.storage.unit_of_work() as uow:
            product = await uow.products.by_id(product_id)
            if product is None or not product.discoverable:
                raise NotFound("no such product in the store")
            studio = await uow.studios.by_id(product.studio_id)
            # Stable releases only: a beta build is for the buyers who opted in to it.
            published = await uow.versions.of_product(product.id, True, None, None, False)
            held = (await uow.licenses.for_user(product.id, visitor.platform_id)
                    if visitor is not None else None)
            plans = tuple(await uow.products.plans(product.id))
        newest = tuple(reversed(published.items))[:STORE_VERSIONS]
        return StorePage(product, studio.name if studio is not None else "", newest,
                         held is not None and in_force(held, self.clock.now(),
                                                       product.grace_days), plans)

    async def download(self, person: Account, command: DownloadCopy) -> Download:
        """The person's own copy of a product they hold: the library's download, acting for
        the person as an app holding their library key would."""
        return await self.library.download(ActingPerson(person.id), command)

    async def follow(self, person: Account, command: FollowChannel) -> License:
        """The release channel the person follows for a product they hold, as
        `POST /library/channel` (docs/api.md, "Release channels")."""
        return await self.library.follow(ActingPerson(person.id), command)
