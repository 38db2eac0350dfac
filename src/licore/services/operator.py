"""The operator's verbs (contract 2): accounts, studios, collaborators, clients."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from licore import bounds
from licore import scopes as sc
from licore.actors import ActingStudio
from licore.audit import AuditEntry
from licore.commands import ListAudit
from licore.errors import AlreadyExists, InvalidRequest, NotFound
from licore.model import Account, Client, Membership, Page, Studio
from licore.ports import Clock, PasswordHasher
from licore.scopes import Permission
from licore.services.audit import AuditTrail
from licore.services.ids import Ids
from licore.storage_ports import Storage, UnitOfWork

DEFAULT_PLACE_LIMIT = 3
# There is no sign-up: how an empty install's operator makes the first account, in the first
# log line of `licore serve` and on the home page alike.
FIRST_ACCOUNT_COMMAND = "licore account add NAME --platform-id YOUR_ROBLOX_USER_ID"


@attrs.frozen
class Operator:
    """What the operator does from the command line; also how tests set up a world."""

    storage: Storage
    clock: Clock
    ids: Ids
    passwords: PasswordHasher

    async def add_account(self, username: str, platform_id: str,
                          password: str | None) -> Account:
        if not username or len(username) > 64:
            raise InvalidRequest("username must be 1 to 64 characters", "username")
        if not platform_id.isdigit() or len(platform_id) > 20:
            raise InvalidRequest("platform id must be a number", "platform_id")
        if username.isdigit():
            # A username of digits would be read as a platform id by POST /licenses.
            raise InvalidRequest("username must not be all digits", "username")
        if password is not None:
            bounds.PASSWORD.check("password", password)
        digest = self.passwords.hash(password) if password else None
        account = Account(self.ids.new("acc"), platform_id, username, digest, self.clock.now())
        async with self.storage.unit_of_work() as uow:
            if not await uow.accounts.add(account):
                raise AlreadyExists("an account with that username or platform id exists")
        return account


    async def add_studio(self, name: str, owner_username: str) -> Studio:
        if not name or len(name) > 80:
            raise InvalidRequest("studio name must be 1 to 80 characters", "name")
        async with self.storage.unit_of_work() as uow:
            owner = await uow.accounts.by_username(owner_username)
            if owner is None:
                raise NotFound(f"no account named {owner_username}")
            studio = Studio(self.ids.new("std"), name, owner.id, DEFAULT_PLACE_LIMIT,
                            self.clock.now())
            if not await uow.studios.add(studio):
                raise AlreadyExists("a studio with that name exists")
            await uow.studios.put_membership(Membership(studio.id, owner.id, frozenset(Permission)))
        return studio


    async def set_collaborator(self, studio_name: str, username: str,
                               permissions: frozenset[Permission]) -> Membership:
        async with self.storage.unit_of_work() as uow:
            studio = await uow.studios.by_name(studio_name)
            account = await uow.accounts.by_username(username)
            if studio is None or account is None:
                raise NotFound("no such studio or account")
            membership = Membership(studio.id, account.id, permissions)
            await uow.studios.put_membership(membership)
        return membership


    async def add_client(self, name: str, description: str, scope_text: str) -> Client:
        client = Client(self.ids.new("app"), name, description,
                        _registered_scopes(scope_text), False, self.clock.now())
        _check_client(client)
        async with self.storage.unit_of_work() as uow:
            await _refuse_taken_name(uow, client)
            await uow.clients.add(client)
        return client

    async def change_client(self, client_id: str, *, name: str | None = None,
                            description: str | None = None,
                            scope_text: str | None = None) -> Client:
        """A new name, description or registered scopes. Keys already issued keep the scopes
        they were granted; new device flows may ask only for the new registration."""
        async with self.storage.unit_of_work() as uow:
            current = await uow.clients.by_id(client_id)
            if current is None:
                raise NotFound("no such client")
            changed = attrs.evolve(
                current, name=current.name if name is None else name,
                description=current.description if description is None else description,
                scopes=current.scopes if scope_text is None else _registered_scopes(scope_text))
            _check_client(changed)
            await _refuse_taken_name(uow, changed)
            await uow.clients.describe(changed)
        return changed

    async def set_password(self, username: str, password: str | None) -> Account:
        """Set or reset a local account's password; None leaves it without one (no sign-in)."""
        if password is not None:
            bounds.PASSWORD.check("password", password)
        digest = self.passwords.hash(password) if password is not None else None
        async with self.storage.unit_of_work() as uow:
            account = await uow.accounts.by_username(username)
            if account is None:
                raise NotFound(f"no account named {username}")
            await uow.accounts.set_password(account.id, digest)
        return attrs.evolve(account, password_digest=digest)

    async def set_account_disabled(self, username: str, disabled: bool) -> int:
        """A disabled account cannot sign in, its web sessions end at their next request,
        it approves nothing, and every key it approved is revoked, in one unit of work.
        Enabling it again brings no key back. Returns how many keys were revoked."""
        now = self.clock.now()
        async with self.storage.unit_of_work() as uow:
            account = await uow.accounts.by_username(username)
            if account is None:
                raise NotFound(f"no account named {username}")
            if disabled and account.disabled_at is not None:
                return 0
            await uow.accounts.set_disabled(account.id, now if disabled else None)
            if not disabled:
                return 0
            return await uow.api_keys.revoke_all_of_account(account.id, now)

    async def remove_collaborator(self, studio_name: str, username: str) -> int:
        """Take a collaborator out of a studio and revoke the studio keys they approved for
        it (a key keeps the scopes it was granted, so it must go with the membership).
        Returns how many keys were revoked."""
        async with self.storage.unit_of_work() as uow:
            studio = await uow.studios.by_name(studio_name)
            if studio is None:
                raise NotFound(f"no studio named {studio_name}")
            account = await uow.accounts.by_username(username)
            if account is None:
                raise NotFound(f"no account named {username}")
            if account.id == studio.owner_account_id:
                raise InvalidRequest(f"{account.username} owns {studio.name} and cannot be "
                                     f"removed from it", "username")
            if not await uow.studios.remove_membership(studio.id, account.id):
                raise NotFound(f"{account.username} is not a collaborator of {studio.name}")
            return await uow.api_keys.revoke_all_of_account(account.id, self.clock.now(),
                                                             studio.id)

    async def accounts(self) -> Sequence[Account]:
        async with self.storage.unit_of_work() as uow:
            return await uow.accounts.all()

    async def studios(self) -> Sequence[tuple[Studio, Sequence[tuple[Account, Membership]]]]:
        """Every studio with its members (the owner among them) and their permissions."""
        async with self.storage.unit_of_work() as uow:
            out = []
            for studio in await uow.studios.all():
                members = []
                for membership in await uow.studios.members(studio.id):
                    account = await uow.accounts.by_id(membership.account_id)
                    if account is not None:
                        members.append((account, membership))
                out.append((studio, members))
            return out

    async def clients(self) -> Sequence[Client]:
        async with self.storage.unit_of_work() as uow:
            return await uow.clients.all()

    async def audit(self, studio_name: str | None, command: ListAudit) -> Page[AuditEntry]:
        """The audit trail: one studio's (by name), or everything (docs/audit.md)."""
        trail = AuditTrail(self.storage)
        if studio_name is None:
            return await trail.everywhere(command)
        async with self.storage.unit_of_work() as uow:
            studio = await uow.studios.by_name(studio_name)
        if studio is None:
            raise NotFound(f"no studio named {studio_name!r}")
        return await trail.list(ActingStudio(studio.id), command)


    async def set_client_disabled(self, client_id: str, disabled: bool) -> int:
        """Disabling an app refuses its new device flows and revokes every key it holds, in one
        unit of work (an operator disables an app to stop it, not only its new sign-ups).
        Enabling it again brings no key back. Returns how many keys were revoked."""
        async with self.storage.unit_of_work() as uow:
            if not await uow.clients.set_disabled(client_id, disabled):
                raise NotFound("no such client")
            if not disabled:
                return 0
            return await uow.api_keys.revoke_all_of_client(client_id, self.clock.now())


def _registered_scopes(scope_text: str) -> tuple[str, ...]:
    requested = sc.parse_scope_string(scope_text)
    unknown = [s for s in requested if s not in sc.SCOPES]
    if unknown:
        raise InvalidRequest(f"unknown scope: {unknown[0]}", "scopes")
    # A client may register both families; each request must still pick one (rule 1).
    return requested


def _check_client(client: Client) -> None:
    if not client.name or len(client.name) > 80:
        raise InvalidRequest("client name must be 1 to 80 characters", "name")
    if len(client.description) > 200 or "\n" in client.description:
        raise InvalidRequest("description must be one line of at most 200 characters",
                             "description")


async def _refuse_taken_name(uow: UnitOfWork, client: Client) -> None:
    """Two apps of one name would look the same on the consent page a person trusts."""
    same = await uow.clients.by_name(client.name)
    if same is not None and same.id != client.id:
        raise AlreadyExists(f"an app named {same.name} exists ({same.id})")


async def set_blacklisted(storage: Storage, clock: Clock, studio_id: str, platform_id: str,
                          on: bool) -> None:
    """A studio's blacklist: a listed user fails every runtime call for its products."""
    if not platform_id.isdigit():
        raise InvalidRequest("platform id must be a number", "platform_id")
    async with storage.unit_of_work() as uow:
        if await uow.studios.by_id(studio_id) is None:
            raise NotFound("no such studio")
        await uow.abuse.blacklist.set(studio_id, platform_id, on, clock.now())
