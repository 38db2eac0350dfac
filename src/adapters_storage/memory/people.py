"""Accounts, studios and their seats, client apps, device authorizations and API keys."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from adapters_storage.memory.tables import Repository, first, replace_if
from licore.device_flow import DeviceState
from licore.model import Account, ApiKey, Client, DeviceAuthorization, Membership, Studio
from licore.ports import ConnectedApp


class MemoryAccounts(Repository):
    async def add(self, account: Account) -> bool:
        name = account.username.casefold()
        clash = first(self.t.accounts.values(), lambda a: a.id == account.id
                      or a.platform_id == account.platform_id
                      or a.username.casefold() == name)
        if clash is not None:
            return False
        self.t.accounts[account.id] = account
        return True

    async def by_id(self, account_id: str) -> Account | None:
        return self.t.accounts.get(account_id)

    async def by_username(self, username: str) -> Account | None:
        name = username.casefold()
        return first(self.t.accounts.values(), lambda a: a.username.casefold() == name)

    async def by_platform_id(self, platform_id: str) -> Account | None:
        return first(self.t.accounts.values(), lambda a: a.platform_id == platform_id)

    async def all(self) -> Sequence[Account]:
        return sorted(self.t.accounts.values(), key=lambda a: (a.username.casefold(), a.id))

    async def set_password(self, account_id: str, digest: str | None) -> bool:
        account = self.t.accounts.get(account_id)
        if account is None:
            return False
        self.t.accounts[account_id] = attrs.evolve(account, password_digest=digest)
        return True

    async def set_disabled(self, account_id: str, disabled_at: int | None) -> bool:
        account = self.t.accounts.get(account_id)
        if account is None:
            return False
        self.t.accounts[account_id] = attrs.evolve(account, disabled_at=disabled_at)
        return True


class MemoryStudios(Repository):
    async def add(self, studio: Studio) -> bool:
        if first(self.t.studios.values(), lambda s: s.name == studio.name):
            return False
        self.t.studios[studio.id] = studio
        return True

    async def by_id(self, studio_id: str) -> Studio | None:
        return self.t.studios.get(studio_id)

    async def by_name(self, name: str) -> Studio | None:
        return first(self.t.studios.values(), lambda s: s.name == name)

    async def put_membership(self, membership: Membership) -> None:
        self.t.memberships[(membership.studio_id, membership.account_id)] = membership

    async def membership(self, studio_id: str, account_id: str) -> Membership | None:
        return self.t.memberships.get((studio_id, account_id))

    async def remove_membership(self, studio_id: str, account_id: str) -> bool:
        return self.t.memberships.pop((studio_id, account_id), None) is not None

    async def memberships_of(self, account_id: str) -> Sequence[Membership]:
        return sorted((m for m in self.t.memberships.values() if m.account_id == account_id),
                      key=lambda m: m.studio_id)

    async def all(self) -> Sequence[Studio]:
        return sorted(self.t.studios.values(), key=lambda s: (s.name, s.id))

    async def members(self, studio_id: str) -> Sequence[Membership]:
        return sorted((m for m in self.t.memberships.values() if m.studio_id == studio_id),
                      key=lambda m: m.account_id)


class MemoryClients(Repository):
    async def add(self, client: Client) -> bool:
        if client.id in self.t.clients:
            return False
        self.t.clients[client.id] = client
        return True

    async def by_id(self, client_id: str) -> Client | None:
        return self.t.clients.get(client_id)

    async def hold(self, client_id: str) -> Client | None:
        # One unit of work at a time holds the memory store: nothing can change it meanwhile.
        return self.t.clients.get(client_id)

    async def set_disabled(self, client_id: str, disabled: bool) -> bool:
        client = self.t.clients.get(client_id)
        if client is None:
            return False
        self.t.clients[client_id] = attrs.evolve(client, disabled=disabled)
        return True

    async def by_name(self, name: str) -> Client | None:
        wanted = name.lower()
        return first(sorted(self.t.clients.values(), key=lambda c: c.id),
                     lambda c: c.name.lower() == wanted)

    async def all(self) -> Sequence[Client]:
        return sorted(self.t.clients.values(), key=lambda c: (c.name.lower(), c.id))

    async def describe(self, client: Client) -> bool:
        current = self.t.clients.get(client.id)
        if current is None:
            return False
        self.t.clients[client.id] = attrs.evolve(current, name=client.name,
                                                 description=client.description,
                                                 scopes=client.scopes)
        return True


class MemoryDeviceAuthorizations(Repository):
    async def add(self, device: DeviceAuthorization) -> bool:
        if first(self.t.devices.values(), lambda d: d.user_code == device.user_code):
            return False
        self.t.devices[device.id] = device
        return True

    async def by_code_digest(self, digest: str) -> DeviceAuthorization | None:
        return first(self.t.devices.values(), lambda d: d.device_code_digest == digest)

    async def by_user_code(self, user_code: str) -> DeviceAuthorization | None:
        return first(self.t.devices.values(), lambda d: d.user_code == user_code)

    async def replace(self, device: DeviceAuthorization, expected: DeviceState) -> bool:
        return replace_if(self.t.devices, device, expected)


class MemoryApiKeys(Repository):
    async def add(self, key: ApiKey) -> None:
        self.t.api_keys[key.id] = key

    async def by_digest(self, digest: str) -> ApiKey | None:
        return first(self.t.api_keys.values(), lambda k: k.digest == digest)

    async def by_id(self, key_id: str) -> ApiKey | None:
        return self.t.api_keys.get(key_id)

    async def touch(self, key_id: str, now: int) -> None:
        key = self.t.api_keys.get(key_id)
        if key is not None and key.last_used_at < now:
            self.t.api_keys[key_id] = attrs.evolve(key, last_used_at=now)

    async def revoke(self, key_id: str, now: int) -> bool:
        key = self.t.api_keys.get(key_id)
        if key is None or key.revoked_at is not None:
            return False
        self.t.api_keys[key_id] = attrs.evolve(key, revoked_at=now)
        return True

    async def revoke_all_of_client(self, client_id: str, now: int) -> int:
        active = [k for k in self.t.api_keys.values()
                  if k.client_id == client_id and k.revoked_at is None]
        for key in active:
            self.t.api_keys[key.id] = attrs.evolve(key, revoked_at=now)
        return len(active)

    async def revoke_all_of_account(self, account_id: str, now: int,
                                    studio_id: str | None = None) -> int:
        active = [k for k in self.t.api_keys.values()
                  if k.account_id == account_id and k.revoked_at is None
                  and (studio_id is None or k.studio_id == studio_id)]
        for key in active:
            self.t.api_keys[key.id] = attrs.evolve(key, revoked_at=now)
        return len(active)

    async def connected_apps(self, *, studio_id: str | None = None,
                             account_id: str | None = None) -> Sequence[ConnectedApp]:
        if studio_id is not None:
            mine = [k for k in self.t.api_keys.values() if k.studio_id == studio_id]
        else:
            mine = [k for k in self.t.api_keys.values()
                    if k.account_id == (account_id or "") and k.studio_id is None]
        return [ConnectedApp(k, self.t.clients[k.client_id].name)
                for k in sorted(mine, key=lambda k: k.id)
                if k.revoked_at is None and k.client_id in self.t.clients]
