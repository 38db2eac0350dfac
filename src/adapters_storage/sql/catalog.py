"""Products, their versions (build files and scripts), per-buyer prepared copies, licenses."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import partial
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
from licore.licenses import DAY, MAX_GRACE_DAYS, MAX_REMINDER_DAYS, LicenseState
from licore.model import License, Page, Plan, Product, Tier, Version, VersionScript
from licore.ports import LibraryEntry
from licore.products import slug_candidate, unique_slug
from licore.releases import Channel
from licore.storage_ports import Notice
from licore.update_files import FileForm, FileOwner, UpdateFile


class SqlProducts(Repository):
    def __init__(self, db: Executor, dialect: str = "sqlite") -> None:
        super().__init__(db)
        self.dialect = dialect

    async def add(self, product: Product, slug_base: str) -> Product:
        # Constant time whatever the number of twins: the base's twin counter, bumped in
        # this transaction (PostgreSQL holds its row until commit, so concurrent twins
        # queue on it and each gets its own number), names the slug. The unique index stays
        # the guard: a number taken by another title's slug ("foo 2" took foo-2) is skipped
        # once, then the product's own random id tail decides.
        sql = insert("products", Product, "(slug)")
        row = to_row(product)
        slug_at = columns(Product).index("slug")
        for _ in range(2):
            twins = await self.db.rows(
                "INSERT INTO slug_twins (base, taken) VALUES (?, 1) ON CONFLICT (base) "
                "DO UPDATE SET taken = slug_twins.taken + 1 RETURNING taken", [slug_base])
            row[slug_at] = slug_candidate(slug_base, int(twins[0][0]))
            if await self.db.rows(sql, row):
                return from_row(Product, row)
        row[slug_at] = unique_slug(slug_base, product.id)
        if await self.db.rows(sql, row):
            return from_row(Product, row)
        raise RuntimeError("no free slug")  # an id tail already used as a slug suffix

    async def by_id(self, product_id: str) -> Product | None:
        return await self._one(Product, f"SELECT {column_list(Product)} FROM products "
                               "WHERE id = ?", [product_id])

    async def hold(self, product_id: str) -> Product | None:
        return await self._one(Product, f"SELECT {column_list(Product)} FROM products "
                               f"WHERE id = ?{row_lock(self.dialect)}", [product_id])

    async def save(self, product: Product) -> None:
        await self.db.run(update("products", Product, "id = ?"),
                          [*without_id(product), product.id])

    async def of_studio(self, studio_id: str, limit: int | None,
                        cursor: str | None) -> Page[Product]:
        return await self._page(partial(from_row, Product),
                                f"SELECT {column_list(Product)} FROM products WHERE studio_id = ?",
                                [studio_id], limit, cursor)

    async def listed(self) -> Sequence[tuple[Product, str]]:
        rows = await self.db.rows(
            f"SELECT {column_list(Product, 'p.')}, s.name FROM products p "
            "JOIN studios s ON s.id = p.studio_id WHERE p.discoverable = ? ORDER BY p.id",
            [True])
        n = len(columns(Product))
        return [(from_row(Product, r[:n]), r[n]) for r in rows]

    async def set_tiers(self, product_id: str, tiers: Sequence[Tier]) -> None:
        await self.db.run("DELETE FROM product_tiers WHERE product_id = ?", [product_id])
        for tier in tiers:
            await self.db.run(
                "INSERT INTO product_tiers (product_id, name, unlock_data) VALUES (?, ?, ?)",
                [product_id, tier.name, tier.unlock_data.text])

    async def set_plans(self, product_id: str, plans: Sequence[Plan]) -> None:
        await self.db.run("DELETE FROM product_plans WHERE product_id = ?", [product_id])
        for plan in plans:
            await self.db.run(insert("product_plans", Plan), to_row(plan))

    async def plans(self, product_id: str) -> Sequence[Plan]:
        rows = await self.db.rows(
            f"SELECT {column_list(Plan)} FROM product_plans WHERE product_id = ? "
            "ORDER BY position, id", [product_id])
        return [from_row(Plan, r) for r in rows]

    async def tiers(self, product_id: str) -> Sequence[Tier]:
        rows = await self.db.rows(
            f"SELECT {column_list(Tier)} FROM product_tiers WHERE product_id = ? "
            "ORDER BY name", [product_id])
        return [from_row(Tier, r) for r in rows]


class SqlVersions(Repository):
    async def add(self, version: Version, data: bytes,
                  scripts: Sequence[VersionScript]) -> bool:
        taken = await self.db.rows("SELECT 1 FROM versions WHERE product_id = ? AND label = ?",
                                   [version.product_id, version.label])
        if taken:
            return False
        await self.db.run("INSERT INTO blobs (id, data) VALUES (?, ?)", [version.blob_id, data])
        if not await self.db.rows(insert("versions", Version, "(product_id, label)"),
                                  to_row(version)):
            return False  # a concurrent upload took the label; the caller rolls back
        for script in scripts:
            await self.db.run(
                "INSERT INTO version_scripts (version_id, position, name, path, source) "
                "VALUES (?, ?, ?, ?, ?)", to_row(script))
        return True

    async def by_id(self, version_id: str) -> Version | None:
        return await self._one(Version, f"SELECT {column_list(Version)} FROM versions "
                               "WHERE id = ?", [version_id])

    async def mark_published(self, version_id: str, channel: Channel) -> None:
        await self.db.run("UPDATE versions SET published = ?, channel = ? WHERE id = ?",
                          [True, channel.value, version_id])

    async def withdraw(self, version_id: str, at: int) -> bool:
        # PostgreSQL makes a concurrent second withdraw wait on the row, then finds it set.
        return await self.db.run("UPDATE versions SET withdrawn_at = ? WHERE id = ? "
                                 "AND withdrawn_at IS NULL", [at, version_id]) == 1

    async def newest_stable(self, product_id: str) -> Version | None:
        return await self._one(
            Version, f"SELECT {column_list(Version)} FROM versions WHERE product_id = ? "
            "AND published = ? AND channel = 'stable' AND withdrawn_at IS NULL "
            "ORDER BY created_at DESC, id DESC LIMIT 1", [product_id, True])

    async def of_product(self, product_id: str, published_only: bool, limit: int | None,
                         cursor: str | None, with_beta: bool = True) -> Page[Version]:
        sql = f"SELECT {column_list(Version)} FROM versions WHERE product_id = ?"
        params: list[Any] = [product_id]
        if published_only:
            sql += " AND published = ? AND withdrawn_at IS NULL"
            params.append(True)
            if not with_beta:
                sql += " AND channel = 'stable'"
        return await self._page(partial(from_row, Version), sql, params, limit, cursor)

    async def data(self, version: Version) -> bytes:
        rows = await self.db.rows("SELECT data FROM blobs WHERE id = ?", [version.blob_id])
        return bytes(rows[0][0])

    async def scripts(self, version_id: str,
                      name: str | None = None) -> Sequence[VersionScript]:
        sql = (f"SELECT {column_list(VersionScript)} FROM version_scripts "
               "WHERE version_id = ?")
        params = [version_id]
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        rows = await self.db.rows(sql + " ORDER BY position", params)
        return [from_row(VersionScript, r) for r in rows]


class SqlPreparedCopies(Repository):
    async def get(self, version_id: str, license_id: str,
                  key_generation: int) -> bytes | None:
        rows = await self.db.rows(
            "SELECT data FROM prepared_copies WHERE version_id = ? AND license_id = ? "
            "AND key_generation = ?", [version_id, license_id, key_generation])
        return bytes(rows[0][0]) if rows else None

    async def put(self, version_id: str, license_id: str, key_generation: int,
                  data: bytes) -> None:
        await self.db.run(
            "INSERT INTO prepared_copies (version_id, license_id, key_generation, data) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (version_id, license_id) DO UPDATE SET "
            "key_generation = excluded.key_generation, data = excluded.data, "
            "nodes_compact = NULL, nodes_tagged = NULL",
            [version_id, license_id, key_generation, data])
        # A copy made afresh (new rules, a re-key) has nodes of its own, so files of its own.
        await self.db.run("DELETE FROM update_files WHERE version_id = ? AND license_id = ?",
                          [version_id, license_id])

    async def nodes(self, version_id: str, license_id: str, key_generation: int,
                    compact: bool) -> bytes | None:
        column = "nodes_compact" if compact else "nodes_tagged"
        rows = await self.db.rows(
            f"SELECT {column} FROM prepared_copies WHERE version_id = ? AND license_id = ? "
            "AND key_generation = ?", [version_id, license_id, key_generation])
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    async def put_nodes(self, version_id: str, license_id: str, key_generation: int,
                        compact: bool, copy: bytes, nodes: bytes) -> None:
        column = "nodes_compact" if compact else "nodes_tagged"
        await self.db.run(
            f"UPDATE prepared_copies SET {column} = ? WHERE version_id = ? "
            "AND license_id = ? AND key_generation = ? AND data = ?",
            [nodes, version_id, license_id, key_generation, copy])

    async def file(self, version_id: str, license_id: str, key_generation: int,
                   form: FileForm) -> UpdateFile | None:
        rows = await self.db.rows(
            "SELECT name, text_sha256 FROM update_files WHERE version_id = ? "
            "AND license_id = ? AND form = ? AND key_generation = ?",
            [version_id, license_id, form.name, key_generation])
        return UpdateFile(rows[0][0], rows[0][1]) if rows else None

    async def put_file(self, version_id: str, license_id: str, key_generation: int,
                       form: FileForm, nodes: bytes, file: UpdateFile) -> None:
        column = "nodes_compact" if form.compact else "nodes_tagged"
        await self.db.run(
            "INSERT INTO update_files (version_id, license_id, form, key_generation, name, "
            "text_sha256) SELECT version_id, license_id, ?, key_generation, ?, ? "
            f"FROM prepared_copies WHERE version_id = ? AND license_id = ? "
            f"AND key_generation = ? AND {column} = ? "
            "ON CONFLICT (version_id, license_id, form) DO UPDATE SET "
            "key_generation = excluded.key_generation, name = excluded.name, "
            "text_sha256 = excluded.text_sha256",
            [form.name, file.name, file.text_sha256, version_id, license_id,
             key_generation, nodes])

    async def file_named(self, name: str) -> FileOwner | None:
        rows = await self.db.rows(
            "SELECT version_id, license_id, key_generation, form, text_sha256 "
            "FROM update_files WHERE name = ? LIMIT 1", [name])
        if not rows:
            return None
        version_id, license_id, key_generation, form, text_sha256 = rows[0]
        return FileOwner(version_id, license_id, key_generation, FileForm.named(form),
                         text_sha256)

    async def drop(self, *, license_id: str | None = None, product_id: str | None = None,
                   version_id: str | None = None) -> None:
        for table in ("prepared_copies", "update_files"):
            if version_id is not None:
                await self.db.run(f"DELETE FROM {table} WHERE version_id = ?", [version_id])
            if license_id is not None:
                await self.db.run(f"DELETE FROM {table} WHERE license_id = ?", [license_id])
            if product_id is not None:
                await self.db.run(
                    f"DELETE FROM {table} WHERE version_id IN "
                    "(SELECT id FROM versions WHERE product_id = ?)", [product_id])
        if version_id is not None:
            await self.db.run("DELETE FROM node_templates WHERE version_id = ?", [version_id])

    async def template(self, version_id: str, compact: bool) -> bytes | None:
        rows = await self.db.rows(
            "SELECT data FROM node_templates WHERE version_id = ? AND form = ?",
            [version_id, _form(compact)])
        return bytes(rows[0][0]) if rows else None

    async def put_template(self, version_id: str, compact: bool, data: bytes) -> None:
        await self.db.run(
            "INSERT INTO node_templates (version_id, form, data) VALUES (?, ?, ?) "
            "ON CONFLICT (version_id, form) DO UPDATE SET data = excluded.data",
            [version_id, _form(compact), data])


def _form(compact: bool) -> str:
    return "compact" if compact else "tagged"


class SqlLicenses(Repository):
    def __init__(self, db: Executor, dialect: str = "sqlite") -> None:
        super().__init__(db)
        self.dialect = dialect

    async def hold(self, product_id: str, platform_id: str) -> License | None:
        # A concurrent change of the row (a renewal, a transfer) waits for this unit and
        # then reads what it left.
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               f"WHERE product_id = ? AND platform_id = ?"
                               f"{row_lock(self.dialect)}", [product_id, platform_id])

    async def add(self, license: License) -> bool:
        sql = insert("licenses", License, "(product_id, platform_id)")
        return bool(await self.db.rows(sql, to_row(license)))

    async def for_user(self, product_id: str, platform_id: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE product_id = ? AND platform_id = ?",
                               [product_id, platform_id])

    async def by_id(self, license_id: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE id = ?", [license_id])

    async def by_ids(self, license_ids: Collection[str]) -> dict[str, License]:
        found: dict[str, License] = {}
        ids = sorted(set(license_ids))
        for at in range(0, len(ids), 500):  # within every database's parameter limit
            chunk = ids[at:at + 500]
            rows = await self.db.rows(f"SELECT {column_list(License)} FROM licenses WHERE id "
                                      f"IN ({', '.join('?' * len(chunk))})", chunk)
            found |= {lic.id: lic for lic in (from_row(License, r) for r in rows)}
        return found

    async def by_key_digest(self, digest: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License)} FROM licenses "
                               "WHERE key_digest = ?", [digest])

    async def replace(self, license: License, expected: LicenseState) -> bool:
        sql = update("licenses", License, "id = ? AND state = ?")
        return await self.db.run(sql, [*without_id(license), license.id, expected.value]) == 1

    async def move(self, old: License, expected: LicenseState, new: License) -> bool:
        return await self.replace(old, expected) and await self.add(new)

    async def of_product(self, product_id: str, limit: int | None,
                         cursor: str | None) -> Page[License]:
        return await self._page(partial(from_row, License),
                                f"SELECT {column_list(License)} FROM licenses WHERE product_id = ?",
                                [product_id], limit, cursor)

    async def library_of(self, platform_id: str, limit: int | None,
                         cursor: str | None, now: int | None = None) -> Page[LibraryEntry]:
        nl, np_ = len(columns(License)), len(columns(Product))

        def entry(r: tuple[Any, ...]) -> LibraryEntry:
            return LibraryEntry(from_row(License, r[:nl]), from_row(Product, r[nl:nl + np_]),
                                r[nl + np_])

        return await self._page(
            entry,
            f"SELECT {column_list(License, 'l.')}, {column_list(Product, 'p.')}, s.name "
            "FROM licenses l JOIN products p ON p.id = l.product_id "
            "JOIN studios s ON s.id = p.studio_id "
            "WHERE l.platform_id = ? AND l.state = 'active' "
            "AND (l.expires_at IS NULL OR l.expires_at + COALESCE(p.grace_days, 0) * ? > ?)",
            [platform_id, DAY, -1 if now is None else now], limit, cursor, id_column="l.id")

    async def due_notices(self, notice: Notice, now: int, limit: int) -> Sequence[License]:
        if notice is Notice.EXPIRED:
            # Told once the license leaves force: its end plus the product's grace.
            rows = await self.db.rows(
                f"SELECT {column_list(License, 'l.')} FROM licenses l "
                "JOIN products p ON p.id = l.product_id WHERE l.expires_at <= ? "
                "AND l.expires_at + COALESCE(p.grace_days, 0) * ? <= ? "
                "AND l.state IN ('active', 'paused') "
                "AND (l.expiry_told IS NULL OR l.expiry_told <> l.expires_at) "
                "ORDER BY l.expires_at, l.id LIMIT ?", [now, DAY, now, limit])
        elif notice is Notice.GRACE:
            # The second bound keeps the read on the expiry index: no grace is longer than
            # the longest a product may set.
            rows = await self.db.rows(
                f"SELECT {column_list(License, 'l.')} FROM licenses l "
                "JOIN products p ON p.id = l.product_id "
                "WHERE l.expires_at <= ? AND l.expires_at > ? "
                "AND p.grace_days > 0 AND l.expires_at + p.grace_days * ? > ? "
                "AND l.state = 'active' "
                "AND (l.grace_told IS NULL OR l.grace_told <> l.expires_at) "
                "ORDER BY l.expires_at, l.id LIMIT ?",
                [now, now - MAX_GRACE_DAYS * DAY, DAY, now, limit])
        else:
            # The first bound keeps the read on the expiry index: no reminder is longer
            # than the longest window a product may set.
            rows = await self.db.rows(
                f"SELECT {column_list(License, 'l.')} FROM licenses l "
                "JOIN products p ON p.id = l.product_id "
                "WHERE l.expires_at > ? AND l.expires_at <= ? "
                "AND p.reminder_days IS NOT NULL AND l.expires_at - p.reminder_days * ? <= ? "
                "AND l.state IN ('active', 'paused') "
                "AND (l.reminder_told IS NULL OR l.reminder_told <> l.expires_at) "
                "ORDER BY l.expires_at, l.id LIMIT ?",
                [now, now + MAX_REMINDER_DAYS * DAY, DAY, now, limit])
        return [from_row(License, r) for r in rows]

    async def mark_told(self, license_id: str, notice: Notice, expires_at: int) -> bool:
        # One conditional update: on PostgreSQL a concurrent second caller waits for the
        # first's row lock, then re-reads the row and finds it told; SQLite runs one writer.
        told = notice.value
        return await self.db.run(
            f"UPDATE licenses SET {told} = ? WHERE id = ? AND expires_at = ? "
            f"AND ({told} IS NULL OR {told} <> ?)",
            [expires_at, license_id, expires_at, expires_at]) == 1

    async def take_trial(self, product_id: str, platform_id: str, now: int) -> bool:
        return bool(await self.db.rows(
            "INSERT INTO license_trials (product_id, platform_id, started_at) "
            "VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING product_id",
            [product_id, platform_id, now]))

    async def remember_purchase(self, product_id: str, purchase_key: str, license_id: str,
                                now: int) -> None:
        await self.db.run(
            "INSERT INTO license_purchases (product_id, purchase_key, license_id, created_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [product_id, purchase_key, license_id, now])

    async def by_purchase(self, product_id: str, purchase_key: str) -> License | None:
        return await self._one(License, f"SELECT {column_list(License, 'l.')} FROM "
                               "license_purchases b JOIN licenses l ON l.id = b.license_id "
                               "WHERE b.product_id = ? AND b.purchase_key = ?",
                               [product_id, purchase_key])
