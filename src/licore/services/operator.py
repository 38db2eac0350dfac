"""The operator's verbs (contract 2): accounts, studios, collaborators, clients."""

from __future__ import annotations

from licore import scopes as sc
from licore.errors import AlreadyExists, InvalidRequest, NotFound
from licore.model import Account, Client, Membership, Studio
from licore.scopes import Permission
from licore.services.deps import Deps

DEFAULT_PLACE_LIMIT = 3


async def add_account(deps: Deps, username: str, platform_id: str, password: str | None) -> Account:
    if not username or len(username) > 64:
        raise InvalidRequest("username must be 1 to 64 characters", "username")
    if not platform_id.isdigit() or len(platform_id) > 20:
        raise InvalidRequest("platform id must be a number", "platform_id")
    if username.isdigit():
        # A username of digits would be read as a platform id by POST /licenses.
        raise InvalidRequest("username must not be all digits", "username")
    digest = deps.passwords.hash(password) if password else None
    account = Account(deps.new_id("acc"), platform_id, username, digest, deps.clock.now())
    async with deps.storage.unit_of_work() as uow:
        if not await uow.accounts.add(account):
            raise AlreadyExists("an account with that username or platform id exists")
    return account


async def add_studio(deps: Deps, name: str, owner_username: str) -> Studio:
    if not name or len(name) > 80:
        raise InvalidRequest("studio name must be 1 to 80 characters", "name")
    async with deps.storage.unit_of_work() as uow:
        owner = await uow.accounts.by_username(owner_username)
        if owner is None:
            raise NotFound(f"no account named {owner_username}")
        studio = Studio(deps.new_id("std"), name, owner.id, DEFAULT_PLACE_LIMIT, deps.clock.now())
        if not await uow.studios.add(studio):
            raise AlreadyExists("a studio with that name exists")
        await uow.studios.put_membership(Membership(studio.id, owner.id, frozenset(Permission)))
    return studio


async def set_collaborator(deps: Deps, studio_name: str, username: str,
                           permissions: frozenset[Permission]) -> Membership:
    async with deps.storage.unit_of_work() as uow:
        studio = await uow.studios.by_name(studio_name)
        account = await uow.accounts.by_username(username)
        if studio is None or account is None:
            raise NotFound("no such studio or account")
        membership = Membership(studio.id, account.id, permissions)
        await uow.studios.put_membership(membership)
    return membership


async def add_client(deps: Deps, name: str, description: str, scope_text: str) -> Client:
    if not name or len(name) > 80:
        raise InvalidRequest("client name must be 1 to 80 characters", "name")
    if len(description) > 200:
        raise InvalidRequest("description must be one line of at most 200 characters",
                             "description")
    requested = sc.parse_scope_string(scope_text)
    unknown = [s for s in requested if s not in sc.SCOPES]
    if unknown:
        raise InvalidRequest(f"unknown scope: {unknown[0]}", "scopes")
    # A client may register both families; each request must still pick one (rule 1).
    client = Client(deps.new_id("app"), name, description, requested, False, deps.clock.now())
    async with deps.storage.unit_of_work() as uow:
        await uow.clients.add(client)
    return client


async def set_client_disabled(deps: Deps, client_id: str, disabled: bool) -> int:
    """Disabling an app refuses its new device flows and revokes every key it holds, in one
    unit of work (an operator disables an app to stop it, not only its new sign-ups).
    Enabling it again brings no key back. Returns how many keys were revoked."""
    async with deps.storage.unit_of_work() as uow:
        if not await uow.clients.set_disabled(client_id, disabled):
            raise NotFound("no such client")
        if not disabled:
            return 0
        return await uow.api_keys.revoke_all_of_client(client_id, deps.clock.now())


async def set_blacklisted(deps: Deps, studio_id: str, platform_id: str, on: bool) -> None:
    """A studio's blacklist: a listed user fails every runtime call for its products."""
    if not platform_id.isdigit():
        raise InvalidRequest("platform id must be a number", "platform_id")
    async with deps.storage.unit_of_work() as uow:
        if await uow.studios.by_id(studio_id) is None:
            raise NotFound("no such studio")
        await uow.blacklist.set(studio_id, platform_id, on, deps.clock.now())
