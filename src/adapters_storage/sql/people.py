"""Accounts, studios and their seats, client apps, device authorizations and API keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters_storage.records import column_list, columns, from_row, to_row
from adapters_storage.sql.common import (
    Executor,
    Repository,
    insert,
    row_lock,
    update,
    without_id,
)
from licore.device_flow import DeviceState
from licore.model import Account, ApiKey, Client, DeviceAuthorization, Membership, Studio
from licore.ports import ConnectedApp
from licore.scopes import Permission


class SqlAccounts(Repository):
    async def add(self, account: Account) -> bool:
        cols = column_list(Account)
        rows = await self.db.rows(
            f"INSERT INTO accounts ({cols}, username_key) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING id",
            [*to_row(account), account.username.casefold()],
        )
        return bool(rows)

    async def by_id(self, account_id: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE id = ?", [account_id])

    async def by_username(self, username: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE username_key = ?", [username.casefold()])

    async def by_platform_id(self, platform_id: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE platform_id = ?", [platform_id])

    async def all(self) -> Sequence[Account]:
        rows = await self.db.rows(f"SELECT {column_list(Account)} FROM accounts "
                                  "ORDER BY username_key, id")
        return [from_row(Account, r) for r in rows]

    async def set_password(self, account_id: str, digest: str | None) -> bool:
        return await self.db.run("UPDATE accounts SET password_digest = ? WHERE id = ?",
                                 [digest, account_id]) > 0

    async def set_disabled(self, account_id: str, disabled_at: int | None) -> bool:
        return await self.db.run("UPDATE accounts SET disabled_at = ? WHERE id = ?",
                                 [disabled_at, account_id]) > 0


def _membership(row: tuple[Any, ...]) -> Membership:
    perms = {perm for perm, on in ((Permission.MANAGE_PRODUCTS, row[2]),
                                   (Permission.MANAGE_LICENSES, row[3])) if on}
    return Membership(row[0], row[1], frozenset(perms))


class SqlStudios(Repository):
    async def add(self, studio: Studio) -> bool:
        return bool(await self.db.rows(insert("studios", Studio, "(name)"), to_row(studio)))

    async def by_id(self, studio_id: str) -> Studio | None:
        return await self._one(Studio, f"SELECT {column_list(Studio)} FROM studios "
                               "WHERE id = ?", [studio_id])

    async def by_name(self, name: str) -> Studio | None:
        return await self._one(Studio, f"SELECT {column_list(Studio)} FROM studios "
                               "WHERE name = ?", [name])

    async def put_membership(self, membership: Membership) -> None:
        p = membership.permissions
        await self.db.run(
            "INSERT INTO memberships (studio_id, account_id, manage_products, manage_licenses) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (studio_id, account_id) DO UPDATE SET "
            "manage_products = excluded.manage_products, "
            "manage_licenses = excluded.manage_licenses",
            [membership.studio_id, membership.account_id,
             Permission.MANAGE_PRODUCTS in p, Permission.MANAGE_LICENSES in p],
        )

    async def membership(self, studio_id: str, account_id: str) -> Membership | None:
        rows = await self.db.rows(
            "SELECT studio_id, account_id, manage_products, manage_licenses FROM memberships "
            "WHERE studio_id = ? AND account_id = ?", [studio_id, account_id])
        return _membership(rows[0]) if rows else None

    async def remove_membership(self, studio_id: str, account_id: str) -> bool:
        return await self.db.run("DELETE FROM memberships WHERE studio_id = ? AND "
                                 "account_id = ?", [studio_id, account_id]) > 0

    async def memberships_of(self, account_id: str) -> Sequence[Membership]:
        rows = await self.db.rows(
            "SELECT studio_id, account_id, manage_products, manage_licenses FROM memberships "
            "WHERE account_id = ? ORDER BY studio_id", [account_id])
        return [_membership(r) for r in rows]

    async def all(self) -> Sequence[Studio]:
        rows = await self.db.rows(f"SELECT {column_list(Studio)} FROM studios "
                                  "ORDER BY name, id")
        return [from_row(Studio, r) for r in rows]

    async def members(self, studio_id: str) -> Sequence[Membership]:
        rows = await self.db.rows(
            "SELECT studio_id, account_id, manage_products, manage_licenses FROM memberships "
            "WHERE studio_id = ? ORDER BY account_id", [studio_id])
        return [_membership(r) for r in rows]


class SqlClients(Repository):
    def __init__(self, db: Executor, dialect: str) -> None:
        super().__init__(db)
        self.dialect = dialect

    async def add(self, client: Client) -> bool:
        return bool(await self.db.rows(insert("clients", Client, "(id)"), to_row(client)))

    async def by_id(self, client_id: str) -> Client | None:
        return await self._one(Client, f"SELECT {column_list(Client)} FROM clients "
                               "WHERE id = ?", [client_id])

    async def hold(self, client_id: str) -> Client | None:
        # Shared: a concurrent disable waits for this unit (and this unit for it).
        return await self._one(Client, f"SELECT {column_list(Client)} FROM clients "
                               f"WHERE id = ?{row_lock(self.dialect, 'SHARE')}", [client_id])

    async def set_disabled(self, client_id: str, disabled: bool) -> bool:
        return await self.db.run("UPDATE clients SET disabled = ? WHERE id = ?",
                                 [disabled, client_id]) > 0

    async def by_name(self, name: str) -> Client | None:
        return await self._one(Client, f"SELECT {column_list(Client)} FROM clients "
                               "WHERE lower(name) = lower(?) ORDER BY id", [name])

    async def all(self) -> Sequence[Client]:
        rows = await self.db.rows(f"SELECT {column_list(Client)} FROM clients "
                                  "ORDER BY lower(name), id")
        return [from_row(Client, r) for r in rows]

    async def describe(self, client: Client) -> bool:
        row = dict(zip(columns(Client), to_row(client), strict=True))
        return await self.db.run(
            "UPDATE clients SET name = ?, description = ?, scopes = ? WHERE id = ?",
            [row["name"], row["description"], row["scopes"], client.id]) > 0


class SqlDeviceAuthorizations(Repository):
    async def add(self, device: DeviceAuthorization) -> bool:
        sql = insert("device_authorizations", DeviceAuthorization, "(user_code)")
        return bool(await self.db.rows(sql, to_row(device)))

    async def by_code_digest(self, digest: str) -> DeviceAuthorization | None:
        return await self._one(DeviceAuthorization,
                               f"SELECT {column_list(DeviceAuthorization)} FROM "
                               "device_authorizations WHERE device_code_digest = ?", [digest])

    async def by_user_code(self, user_code: str) -> DeviceAuthorization | None:
        return await self._one(DeviceAuthorization,
                               f"SELECT {column_list(DeviceAuthorization)} FROM "
                               "device_authorizations WHERE user_code = ?", [user_code])

    async def replace(self, device: DeviceAuthorization, expected: DeviceState) -> bool:
        sql = update("device_authorizations", DeviceAuthorization, "id = ? AND state = ?")
        return await self.db.run(sql, [*without_id(device), device.id, expected.value]) == 1


class SqlApiKeys(Repository):
    async def add(self, key: ApiKey) -> None:
        await self.db.run(insert("api_keys", ApiKey), to_row(key))

    async def by_digest(self, digest: str) -> ApiKey | None:
        return await self._one(ApiKey, f"SELECT {column_list(ApiKey)} FROM api_keys "
                               "WHERE digest = ?", [digest])

    async def by_id(self, key_id: str) -> ApiKey | None:
        return await self._one(ApiKey, f"SELECT {column_list(ApiKey)} FROM api_keys "
                               "WHERE id = ?", [key_id])

    async def touch(self, key_id: str, now: int) -> None:
        await self.db.run("UPDATE api_keys SET last_used_at = ? WHERE id = ? "
                          "AND last_used_at < ?", [now, key_id, now])

    async def revoke(self, key_id: str, now: int) -> bool:
        return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? "
                                 "AND revoked_at IS NULL", [now, key_id]) == 1

    async def revoke_all_of_client(self, client_id: str, now: int) -> int:
        return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE client_id = ? "
                                 "AND revoked_at IS NULL", [now, client_id])

    async def revoke_all_of_account(self, account_id: str, now: int,
                                    studio_id: str | None = None) -> int:
        if studio_id is None:
            return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE account_id = ? "
                                     "AND revoked_at IS NULL", [now, account_id])
        return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE account_id = ? "
                                 "AND studio_id = ? AND revoked_at IS NULL",
                                 [now, account_id, studio_id])

    async def connected_apps(self, *, studio_id: str | None = None,
                             account_id: str | None = None) -> Sequence[ConnectedApp]:
        if studio_id is not None:
            where, param = "k.studio_id = ?", studio_id
        else:
            where, param = "k.account_id = ? AND k.studio_id IS NULL", account_id or ""
        rows = await self.db.rows(
            f"SELECT {column_list(ApiKey, 'k.')}, c.name FROM api_keys k "
            f"JOIN clients c ON c.id = k.client_id WHERE {where} AND k.revoked_at IS NULL "
            "ORDER BY k.id", [param])
        n = len(columns(ApiKey))
        return [ConnectedApp(from_row(ApiKey, r[:n]), r[n]) for r in rows]
