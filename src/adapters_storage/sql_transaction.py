"""The storage port's transaction, written once in SQL both SQLite and PostgreSQL accept.

Placeholders are `?`; the PostgreSQL executor rewrites them. Uniqueness conflicts are handled
with `ON CONFLICT ... DO NOTHING RETURNING`, which never aborts a PostgreSQL transaction, so
the caller learns "taken" as a value and carries on in the same unit of work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from adapters_storage.batching import NonceRequest
from adapters_storage.records import column_list, columns, from_row, to_row
from adapters_storage.schema import MIGRATIONS, statements
from licore.device_flow import DeviceState
from licore.licenses import LicenseState
from licore.model import (
    Account,
    Alert,
    ApiKey,
    Client,
    DeviceAuthorization,
    License,
    Membership,
    Page,
    Product,
    Studio,
    Version,
    VersionScript,
)
from licore.ports import ConnectedApp, LibraryEntry
from licore.products import slug_candidate
from licore.runtime import Facts as RuntimeFacts

if TYPE_CHECKING:
    from adapters_storage.batching import RuntimeRequest
from licore.scopes import Permission

T = TypeVar("T")

SLUG_ATTEMPTS = 10_000


class Executor(Protocol):
    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...


async def apply_migrations(db: Executor, dialect: str) -> None:
    """Apply, in the caller's transaction, every migration not yet recorded."""
    await db.run("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    done = {r[0] for r in await db.rows("SELECT version FROM schema_migrations")}
    for version, migration in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        for sql in statements(dialect, migration):
            await db.run(sql)
        await db.run("INSERT INTO schema_migrations (version) VALUES (?)", [version])


def _insert(table: str, cls: type, conflict: str = "") -> str:
    cols = columns(cls)
    marks = ", ".join("?" for _ in cols)
    tail = f" ON CONFLICT {conflict} DO NOTHING RETURNING id" if conflict else ""
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks}){tail}"


def _update(table: str, cls: type, where: str) -> str:
    sets = ", ".join(f"{c} = ?" for c in columns(cls) if c != "id")
    return f"UPDATE {table} SET {sets} WHERE {where}"


def _without_id(record: Any) -> list[Any]:
    row = to_row(record)
    return row[1:]  # every record lists `id` first


class SqlTransaction:
    def __init__(self, db: Executor) -> None:
        self.db = db

    async def _one(self, cls: type[T], sql: str, params: Sequence[Any]) -> T | None:
        rows = await self.db.rows(sql, params)
        return from_row(cls, rows[0]) if rows else None

    async def _page(self, make: Callable[[tuple[Any, ...]], T], sql: str,
                    params: Sequence[Any], limit: int | None, cursor: str | None,
                    id_column: str = "id") -> Page[T]:
        """One page in id order; every row starts with the id the cursor is made of."""
        params = list(params)
        if cursor is not None:
            sql += f" AND {id_column} > ?"
            params.append(cursor)
        sql += f" ORDER BY {id_column}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit + 1)
        rows = await self.db.rows(sql, params)
        if limit is not None and len(rows) > limit:
            rows = rows[:limit]
            return Page(tuple(make(r) for r in rows), str(rows[-1][0]))
        return Page(tuple(make(r) for r in rows), None)

    # accounts, studios, memberships -------------------------------------------------------

    async def add_account(self, account: Account) -> bool:
        cols = column_list(Account)
        rows = await self.db.rows(
            f"INSERT INTO accounts ({cols}, username_key) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING id",
            [*to_row(account), account.username.casefold()],
        )
        return bool(rows)

    async def account_by_id(self, account_id: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE id = ?", [account_id])

    async def account_by_username(self, username: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE username_key = ?", [username.casefold()])

    async def account_by_platform_id(self, platform_id: str) -> Account | None:
        return await self._one(Account, f"SELECT {column_list(Account)} FROM accounts "
                               "WHERE platform_id = ?", [platform_id])

    async def add_studio(self, studio: Studio) -> bool:
        return bool(await self.db.rows(_insert("studios", Studio, "(name)"), to_row(studio)))

    async def studio_by_id(self, studio_id: str) -> Studio | None:
        return await self._one(Studio, f"SELECT {column_list(Studio)} FROM studios "
                               "WHERE id = ?", [studio_id])

    async def studio_by_name(self, name: str) -> Studio | None:
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

    @staticmethod
    def _membership(row: tuple[Any, ...]) -> Membership:
        perms = {perm for perm, on in ((Permission.MANAGE_PRODUCTS, row[2]),
                                       (Permission.MANAGE_LICENSES, row[3])) if on}
        return Membership(row[0], row[1], frozenset(perms))

    async def membership(self, studio_id: str, account_id: str) -> Membership | None:
        rows = await self.db.rows(
            "SELECT studio_id, account_id, manage_products, manage_licenses FROM memberships "
            "WHERE studio_id = ? AND account_id = ?", [studio_id, account_id])
        return self._membership(rows[0]) if rows else None

    async def memberships_of(self, account_id: str) -> Sequence[Membership]:
        rows = await self.db.rows(
            "SELECT studio_id, account_id, manage_products, manage_licenses FROM memberships "
            "WHERE account_id = ? ORDER BY studio_id", [account_id])
        return [self._membership(r) for r in rows]

    # clients ------------------------------------------------------------------------------

    async def add_client(self, client: Client) -> bool:
        return bool(await self.db.rows(_insert("clients", Client, "(id)"), to_row(client)))

    async def client_by_id(self, client_id: str) -> Client | None:
        return await self._one(Client, f"SELECT {column_list(Client)} FROM clients "
                               "WHERE id = ?", [client_id])

    async def set_client_disabled(self, client_id: str, disabled: bool) -> bool:
        return await self.db.run("UPDATE clients SET disabled = ? WHERE id = ?",
                                 [disabled, client_id]) > 0

    # device authorizations ----------------------------------------------------------------

    async def add_device(self, device: DeviceAuthorization) -> bool:
        sql = _insert("device_authorizations", DeviceAuthorization, "(user_code)")
        return bool(await self.db.rows(sql, to_row(device)))

    async def device_by_code_digest(self, digest: str) -> DeviceAuthorization | None:
        return await self._one(DeviceAuthorization,
                               f"SELECT {column_list(DeviceAuthorization)} FROM "
                               "device_authorizations WHERE device_code_digest = ?", [digest])

    async def device_by_user_code(self, user_code: str) -> DeviceAuthorization | None:
        return await self._one(DeviceAuthorization,
                               f"SELECT {column_list(DeviceAuthorization)} FROM "
                               "device_authorizations WHERE user_code = ?", [user_code])

    async def replace_device(self, device: DeviceAuthorization, expected: DeviceState) -> bool:
        sql = _update("device_authorizations", DeviceAuthorization, "id = ? AND state = ?")
        return await self.db.run(sql, [*_without_id(device), device.id, expected.value]) == 1

    # API keys -----------------------------------------------------------------------------

    async def add_api_key(self, key: ApiKey) -> None:
        await self.db.run(_insert("api_keys", ApiKey), to_row(key))

    async def api_key_by_digest(self, digest: str) -> ApiKey | None:
        return await self._one(ApiKey, f"SELECT {column_list(ApiKey)} FROM api_keys "
                               "WHERE digest = ?", [digest])

    async def api_key_by_id(self, key_id: str) -> ApiKey | None:
        return await self._one(ApiKey, f"SELECT {column_list(ApiKey)} FROM api_keys "
                               "WHERE id = ?", [key_id])

    async def touch_api_key(self, key_id: str, now: int) -> None:
        await self.db.run("UPDATE api_keys SET last_used_at = ? WHERE id = ? "
                          "AND last_used_at < ?", [now, key_id, now])

    async def revoke_api_key(self, key_id: str, now: int) -> bool:
        return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? "
                                 "AND revoked_at IS NULL", [now, key_id]) == 1

    async def revoke_keys_of_client(self, client_id: str, now: int) -> int:
        return await self.db.run("UPDATE api_keys SET revoked_at = ? WHERE client_id = ? "
                                 "AND revoked_at IS NULL", [now, client_id])

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

    # products -----------------------------------------------------------------------------

    async def add_product(self, product: Product, slug_base: str) -> Product:
        sql = _insert("products", Product, "(slug)")
        row = to_row(product)
        slug_at = columns(Product).index("slug")
        for attempt in range(1, SLUG_ATTEMPTS):
            slug = slug_candidate(slug_base, attempt)
            row[slug_at] = slug
            if await self.db.rows(sql, row):
                return from_row(Product, row)
        raise RuntimeError("no free slug")  # 10,000 products with one title

    async def product_by_id(self, product_id: str) -> Product | None:
        return await self._one(Product, f"SELECT {column_list(Product)} FROM products "
                               "WHERE id = ?", [product_id])

    async def save_product(self, product: Product) -> None:
        await self.db.run(_update("products", Product, "id = ?"),
                          [*_without_id(product), product.id])

    async def products_of_studio(self, studio_id: str, limit: int | None,
                                 cursor: str | None) -> Page[Product]:
        return await self._page(partial(from_row, Product),
                                f"SELECT {column_list(Product)} FROM products WHERE studio_id = ?",
                                [studio_id], limit, cursor)

    async def listed_products(self) -> Sequence[tuple[Product, str]]:
        rows = await self.db.rows(
            f"SELECT {column_list(Product, 'p.')}, s.name FROM products p "
            "JOIN studios s ON s.id = p.studio_id WHERE p.discoverable = ? ORDER BY p.id",
            [True])
        n = len(columns(Product))
        return [(from_row(Product, r[:n]), r[n]) for r in rows]

    # licenses -----------------------------------------------------------------------------

    async def add_license(self, license: License) -> bool:
        sql = _insert("licenses", License, "(product_id, platform_id)")
        return bool(await self.db.rows(sql, to_row(license)))

    async def license_for(self, product_id: str, platform_id: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE product_id = ? AND platform_id = ?",
                               [product_id, platform_id])

    async def license_by_id(self, license_id: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE id = ?", [license_id])

    async def license_by_key_digest(self, digest: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE key_digest = ?", [digest])

    async def replace_license(self, license: License, expected: LicenseState) -> bool:
        sql = _update("licenses", License, "id = ? AND state = ?")
        return await self.db.run(sql, [*_without_id(license), license.id, expected.value]) == 1

    async def licenses_of_product(self, product_id: str, limit: int | None,
                                  cursor: str | None) -> Page[License]:
        return await self._page(partial(from_row, License),
                                f"SELECT {column_list(License)} FROM licenses WHERE product_id = ?",
                                [product_id], limit, cursor)

    async def library_of(self, platform_id: str, limit: int | None,
                         cursor: str | None) -> Page[LibraryEntry]:
        nl, np_ = len(columns(License)), len(columns(Product))

        def entry(r: tuple[Any, ...]) -> LibraryEntry:
            return LibraryEntry(from_row(License, r[:nl]), from_row(Product, r[nl:nl + np_]),
                                r[nl + np_])

        return await self._page(
            entry,
            f"SELECT {column_list(License, 'l.')}, {column_list(Product, 'p.')}, s.name "
            "FROM licenses l JOIN products p ON p.id = l.product_id "
            "JOIN studios s ON s.id = p.studio_id "
            "WHERE l.platform_id = ? AND l.state = 'active'",
            [platform_id], limit, cursor, id_column="l.id")

    async def runtime_batch(self, window_start: int,
                            requests: Sequence[RuntimeRequest]) -> list[tuple[list[int],
                                                                         RuntimeFacts]]:
        """Count every request and load every request's facts: two statements in all."""
        increments: dict[str, int] = {}
        for r in requests:
            for bucket in r.buckets:
                increments[bucket] = increments.get(bucket, 0) + 1
        totals = await self._add_hits(increments, window_start)
        # Each request sees the count as it stood when it arrived in the batch.
        seen: dict[str, int] = {}
        counts: list[list[int]] = []
        for r in requests:
            mine = []
            for bucket in r.buckets:
                seen[bucket] = seen.get(bucket, 0) + 1
                mine.append(totals[bucket] - increments[bucket] + seen[bucket])
            counts.append(mine)
        values = ", ".join("(CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), "
                           "CAST(? AS TEXT))" for _ in requests)
        params: list[Any] = [v for i, r in enumerate(requests)
                             for v in (i, r.key_digest, r.user_id, r.game_id)]
        rows = await self.db.rows(
            f"WITH req (i, digest, user_id, game_id) AS (VALUES {values}) "
            f"SELECT req.i, {column_list(License, 'l.')}, {column_list(Product, 'p.')}, "
            "s.place_limit, EXISTS (SELECT 1 FROM blacklist b WHERE b.studio_id = p.studio_id "
            "AND b.platform_id = req.user_id), "
            "(SELECT COUNT(*) FROM license_places lp WHERE lp.license_id = l.id), "
            "(SELECT lp.place_rank FROM license_places lp WHERE lp.license_id = l.id "
            "AND lp.game_id = req.game_id) "
            "FROM req JOIN licenses l ON l.key_digest = req.digest "
            "JOIN products p ON p.id = l.product_id JOIN studios s ON s.id = p.studio_id",
            params)
        facts = [RuntimeFacts(None, None, 0, False) for _ in requests]
        nl, np_ = len(columns(License)), len(columns(Product))
        n = 1 + nl + np_
        for row in rows:
            facts[int(row[0])] = RuntimeFacts(
                from_row(License, row[1:1 + nl]), from_row(Product, row[1 + nl:n]),
                int(row[n]), bool(row[n + 1]), int(row[n + 2]),
                None if row[n + 3] is None else int(row[n + 3]))
        return list(zip(counts, facts, strict=True))

    # versions and prepared copies ---------------------------------------------------------

    async def add_version(self, version: Version, data: bytes,
                          scripts: Sequence[VersionScript]) -> bool:
        taken = await self.db.rows("SELECT 1 FROM versions WHERE product_id = ? AND label = ?",
                                   [version.product_id, version.label])
        if taken:
            return False
        await self.db.run("INSERT INTO blobs (id, data) VALUES (?, ?)", [version.blob_id, data])
        if not await self.db.rows(_insert("versions", Version, "(product_id, label)"),
                                  to_row(version)):
            return False  # a concurrent upload took the label; the caller rolls back
        for script in scripts:
            await self.db.run(
                "INSERT INTO version_scripts (version_id, position, name, path, source) "
                "VALUES (?, ?, ?, ?, ?)", to_row(script))
        return True

    async def version_by_id(self, version_id: str) -> Version | None:
        return await self._one(Version, f"SELECT {column_list(Version)} FROM versions "
                               "WHERE id = ?", [version_id])

    async def mark_published(self, version_id: str) -> None:
        await self.db.run("UPDATE versions SET published = ? WHERE id = ?", [True, version_id])

    async def versions_of(self, product_id: str, published_only: bool, limit: int | None,
                          cursor: str | None) -> Page[Version]:
        sql = f"SELECT {column_list(Version)} FROM versions WHERE product_id = ?"
        params: list[Any] = [product_id]
        if published_only:
            sql += " AND published = ?"
            params.append(True)
        return await self._page(partial(from_row, Version), sql, params, limit, cursor)

    async def version_data(self, version: Version) -> bytes:
        rows = await self.db.rows("SELECT data FROM blobs WHERE id = ?", [version.blob_id])
        return bytes(rows[0][0])

    async def version_scripts(self, version_id: str,
                              name: str | None = None) -> Sequence[VersionScript]:
        sql = (f"SELECT {column_list(VersionScript)} FROM version_scripts "
               "WHERE version_id = ?")
        params = [version_id]
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        rows = await self.db.rows(sql + " ORDER BY position", params)
        return [from_row(VersionScript, r) for r in rows]

    async def prepared_copy(self, version_id: str, license_id: str,
                            key_generation: int) -> bytes | None:
        rows = await self.db.rows(
            "SELECT data FROM prepared_copies WHERE version_id = ? AND license_id = ? "
            "AND key_generation = ?", [version_id, license_id, key_generation])
        return bytes(rows[0][0]) if rows else None

    async def put_prepared_copy(self, version_id: str, license_id: str, key_generation: int,
                                data: bytes) -> None:
        await self.db.run(
            "INSERT INTO prepared_copies (version_id, license_id, key_generation, data) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (version_id, license_id) DO UPDATE SET "
            "key_generation = excluded.key_generation, data = excluded.data",
            [version_id, license_id, key_generation, data])

    async def drop_prepared_copies(self, *, license_id: str | None = None,
                                   product_id: str | None = None) -> None:
        if license_id is not None:
            await self.db.run("DELETE FROM prepared_copies WHERE license_id = ?", [license_id])
        if product_id is not None:
            await self.db.run(
                "DELETE FROM prepared_copies WHERE version_id IN "
                "(SELECT id FROM versions WHERE product_id = ?)", [product_id])

    # alerts, blacklist, nonces, places, rate limits ---------------------------------------

    async def raise_alert(self, alert: Alert, window: int) -> Alert:
        same = await self._one(
            Alert,
            f"SELECT {column_list(Alert)} FROM alerts WHERE kind = ? AND studio_id = ? "
            "AND product_id = ? AND license_id IS NOT DISTINCT FROM ? "
            "AND game_id IS NOT DISTINCT FROM ? AND last_seen_at >= ? "
            "ORDER BY last_seen_at DESC LIMIT 1",
            [alert.kind, alert.studio_id, alert.product_id, alert.license_id, alert.game_id,
             alert.last_seen_at - window])
        if same is None:
            await self.db.run(_insert("alerts", Alert), to_row(alert))
            return alert
        await self.db.run("UPDATE alerts SET count = count + ?, last_seen_at = ? WHERE id = ?",
                          [alert.count, alert.last_seen_at, same.id])
        bumped = await self._one(Alert, f"SELECT {column_list(Alert)} FROM alerts "
                                 "WHERE id = ?", [same.id])
        assert bumped is not None
        return bumped

    async def alerts_of_studio(self, studio_id: str, product_id: str | None,
                               limit: int | None, cursor: str | None) -> Page[Alert]:
        sql = f"SELECT {column_list(Alert)} FROM alerts WHERE studio_id = ?"
        params: list[Any] = [studio_id]
        if product_id is not None:
            sql += " AND product_id = ?"
            params.append(product_id)
        return await self._page(partial(from_row, Alert), sql, params, limit, cursor)

    async def set_blacklisted(self, studio_id: str, platform_id: str, on: bool,
                              now: int) -> None:
        if on:
            await self.db.run("INSERT INTO blacklist (studio_id, platform_id, created_at) "
                              "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                              [studio_id, platform_id, now])
        else:
            await self.db.run("DELETE FROM blacklist WHERE studio_id = ? AND platform_id = ?",
                              [studio_id, platform_id])

    async def is_blacklisted(self, studio_id: str, platform_id: str) -> bool:
        return bool(await self.db.rows("SELECT 1 FROM blacklist WHERE studio_id = ? "
                                       "AND platform_id = ?", [studio_id, platform_id]))

    async def sweep_expired(self, now: int, counters_before: int) -> int:
        gone = await self.db.run("DELETE FROM nonces WHERE expires_at <= ?", [now])
        # Window 0 marks a counter that never expires (a web session's sign-out, say).
        return gone + await self.db.run(
            "DELETE FROM rate_counters WHERE window_start < ? AND window_start > 0",
            [counters_before])

    async def blacklist_of(self, studio_id: str) -> Sequence[tuple[str, int]]:
        rows = await self.db.rows("SELECT platform_id, created_at FROM blacklist "
                                  "WHERE studio_id = ? ORDER BY created_at, platform_id",
                                  [studio_id])
        return [(str(r[0]), int(r[1])) for r in rows]

    async def use_nonce(self, license_id: str, nonce: str, expires_at: int, now: int) -> bool:
        return (await self.use_nonces(now, [NonceRequest(license_id, nonce, expires_at)]))[0]

    async def use_nonces(self, now: int, requests: Sequence[NonceRequest]) -> list[bool]:
        """Record each nonce; True where it was fresh. One statement for the whole batch.

        An expired row may be reused; otherwise a second use of a nonce is refused, also
        within one batch (a statement may not touch one row twice, so repeats never reach it).
        """
        first: dict[tuple[str, str], int] = {}
        for i, r in enumerate(requests):
            first.setdefault((r.license_id, r.nonce), i)
        unique = [requests[i] for i in first.values()]
        values = ", ".join("(?, ?, ?)" for _ in unique)
        rows = await self.db.rows(
            f"INSERT INTO nonces (license_id, nonce, expires_at) VALUES {values} "
            "ON CONFLICT (license_id, nonce) DO UPDATE SET expires_at = excluded.expires_at "
            "WHERE nonces.expires_at <= ? RETURNING license_id, nonce",
            [*(v for r in unique for v in (r.license_id, r.nonce, r.expires_at)), now])
        fresh = {(str(a), str(b)) for a, b in rows}
        return [(r.license_id, r.nonce) in fresh and first[(r.license_id, r.nonce)] == i
                for i, r in enumerate(requests)]

    async def record_place(self, license_id: str, game_id: str, now: int) -> int:
        await self.db.run(
            "INSERT INTO license_places (license_id, game_id, first_seen_at, place_rank) "
            "SELECT ?, ?, ?, COUNT(*) + 1 FROM license_places WHERE license_id = ? "
            "ON CONFLICT DO NOTHING", [license_id, game_id, now, license_id])
        rows = await self.db.rows("SELECT place_rank FROM license_places WHERE license_id = ? "
                                  "AND game_id = ?", [license_id, game_id])
        return int(rows[0][0])

    async def count_hits(self, buckets: Sequence[str], window_start: int) -> list[int]:
        increments: dict[str, int] = {}
        for bucket in buckets:
            increments[bucket] = increments.get(bucket, 0) + 1
        totals = await self._add_hits(increments, window_start)
        return [totals[b] for b in buckets]

    async def hit_count(self, bucket: str, window_start: int) -> int:
        rows = await self.db.rows("SELECT count FROM rate_counters WHERE bucket = ? "
                                  "AND window_start = ?", [bucket, window_start])
        return int(rows[0][0]) if rows else 0

    async def _add_hits(self, increments: dict[str, int], window_start: int) -> dict[str, int]:
        # One statement for every bucket: on the hot path each statement is a round trip.
        # A row may appear once per statement, hence the increments; RETURNING order is
        # unspecified, hence the bucket comes back too.
        values = ", ".join("(?, ?, ?)" for _ in increments)
        params = [v for b, n in increments.items() for v in (b, window_start, n)]
        rows = await self.db.rows(
            f"INSERT INTO rate_counters (bucket, window_start, count) VALUES {values} "
            "ON CONFLICT (bucket, window_start) DO UPDATE "
            "SET count = rate_counters.count + excluded.count RETURNING bucket, count", params)
        return {r[0]: int(r[1]) for r in rows}
