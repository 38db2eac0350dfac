"""A person's own pages: what they own, the apps acting for them, and the storefront."""

from __future__ import annotations

from licore import scopes as sc
from licore.errors import NotFound
from licore.model import Account, ApiKey, Product
from licore.ports import ConnectedApp, LibraryEntry
from licore.services import builds, device
from licore.services.deps import Deps


async def account(deps: Deps, account_id: str) -> Account:
    async with deps.storage.unit_of_work() as uow:
        found = await uow.accounts.by_id(account_id)
    if found is None:
        raise NotFound("the account is gone")
    return found


async def library(deps: Deps, person: Account) -> tuple[LibraryEntry, ...]:
    """Products the person holds an active license for: what they can download."""
    async with deps.storage.unit_of_work() as uow:
        return (await uow.licenses.library_of(person.platform_id, None, None)).items


async def own_apps(deps: Deps, person: Account) -> list[ConnectedApp]:
    """Library keys acting for the person."""
    return await device.connected_apps(deps, account_id=person.id)


async def revoke_own_app(deps: Deps, person: Account, key_id: str) -> None:
    await device.revoke_connected_app(deps, key_id, account_id=person.id)


async def storefront(deps: Deps) -> list[tuple[Product, str]]:
    """Listed products with their studio's name; drafts never appear."""
    async with deps.storage.unit_of_work() as uow:
        return list(await uow.products.listed())


async def download(deps: Deps, person: Account, product_id: str,
                   version_id: str | None = None) -> builds.Download:
    """The person's own copy of a product they hold, as `GET /library/download` gives an app
    acting for them: the same rules, through an acting identity that is never stored."""
    now = deps.clock.now()
    acting = ApiKey(id="web", digest="", kind=sc.KeyKind.LIBRARY,
                    scopes=("library:read", "library:download"), client_id="web",
                    account_id=person.id, studio_id=None, created_at=now, last_used_at=now)
    query = {"product_id": product_id}
    if version_id is not None:
        query["version_id"] = version_id
    return await builds.download(deps, acting, query)
