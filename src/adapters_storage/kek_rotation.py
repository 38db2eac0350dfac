"""Every stored secret re-sealed under a new key-encryption key (`licore kek rotate`,
docs/operators.md "Rotating the key-encryption key"), while servers keep serving: in batches,
one transaction each, each row written only if it still holds what was read (a server that
changed it meanwhile wins, and the next run takes its value). A row already sealed under the
new key is left alone, so a run that was interrupted is simply run again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from adapters_storage.key_fingerprint import FACT, REPLACED_FACT, ROOT_FACT
from licore.services.builds import copy_context, nodes_context

if TYPE_CHECKING:
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage

Row = tuple[Any, ...]


@attrs.frozen
class Sealed:
    """One table's sealed columns: `key` orders and names a row, `context(row, column)` is
    what the column's ciphertext is bound to, `blob` tells a stored copy from a key."""

    table: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    context: Callable[[Row, str], str]
    blob: bool = False
    extra: tuple[str, ...] = ()  # more columns the context needs, read after the key


def _copy(row: Row, column: str) -> str:
    version_id, license_id, generation = row[0], row[1], int(row[2])
    if column == "data":
        return copy_context(version_id, license_id, generation)
    return nodes_context(version_id, license_id, generation, column == "nodes_compact")


KINDS = (
    Sealed("licenses", ("id",), ("key_ciphertext",), lambda row, _: str(row[0])),
    Sealed("webhook_endpoints", ("id",), ("secret_ciphertext", "previous_ciphertext"),
           lambda row, _: str(row[0])),
    Sealed("prepared_copies", ("version_id", "license_id"),
           ("data", "nodes_compact", "nodes_tagged"), _copy, blob=True,
           extra=("key_generation",)),
)

# reseal(ciphertext, associated data, blob): the ciphertext sealed under the new key, or
# None when it already is
Reseal = Callable[[bytes, str, bool], "bytes | None"]


async def begin(storage: SqliteStorage | PostgresStorage, old: str, new: str,
                sealed_root: bytes) -> bool:
    """Name the new key as the database's, in one transaction, with the look-up root sealed
    under it and the old key's fingerprint kept as replaced. False when the database names
    neither key; True when it names the new one already (a run resumed)."""
    async with storage.unit_of_work() as uow:
        held = await uow.db.rows("SELECT value FROM server_facts WHERE name = ?", [FACT])
        if held and held[0][0] == new:
            return True
        if not held or held[0][0] != old:
            return False
        for name, value in ((FACT, new), (ROOT_FACT, sealed_root.hex()),
                            (REPLACED_FACT, old)):
            await uow.db.run("INSERT INTO server_facts (name, value) VALUES (?, ?) ON CONFLICT "
                             "(name) DO UPDATE SET value = excluded.value", [name, value])
    return True


@attrs.define
class Tally:
    rows: int = 0
    resealed: int = 0


async def reseal_table(storage: SqliteStorage | PostgresStorage, kind: Sealed, reseal: Reseal,
                       batch: int, progress: Callable[[str, int, int], None]) -> Tally:
    """Re-seal one table's columns, `batch` rows a transaction, saying how far it got."""
    async with storage.unit_of_work() as uow:
        total = int((await uow.db.rows(f"SELECT count(*) FROM {kind.table}"))[0][0])
    keys = ", ".join(kind.key)
    read = ", ".join((*kind.key, *kind.extra, *kind.columns))
    after: Row | None = None
    tally = Tally()
    while True:
        where = f"WHERE ({keys}) > ({', '.join('?' * len(kind.key))}) " if after else ""
        async with storage.unit_of_work() as uow:
            rows = await uow.db.rows(f"SELECT {read} FROM {kind.table} {where}"
                                     f"ORDER BY {keys} LIMIT ?", [*(after or ()), batch])
            for row in rows:
                tally.resealed += await _reseal_row(uow.db, kind, row, reseal)
        tally.rows += len(rows)
        progress(kind.table, tally.rows, max(total, tally.rows))
        if len(rows) < batch:
            return tally
        after = tuple(rows[-1][:len(kind.key)])


async def _reseal_row(db: Any, kind: Sealed, row: Row, reseal: Reseal) -> int:
    first = len(kind.key) + len(kind.extra)
    done = 0
    match = " AND ".join(f"{k} = ?" for k in kind.key)
    for column, value in zip(kind.columns, row[first:], strict=True):
        if value is None:
            continue
        fresh = reseal(bytes(value), kind.context(row, column), kind.blob)
        if fresh is None:
            continue
        done += await db.run(f"UPDATE {kind.table} SET {column} = ? WHERE {match} "
                             f"AND {column} = ?", [fresh, *row[:len(kind.key)], value])
    return done
