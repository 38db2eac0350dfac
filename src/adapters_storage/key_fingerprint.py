"""The database's record of the key-encryption key its sealed keys were made with.

Kept beside the data it describes, so that a process holding another key (a host started
without the shared `LICORE_KEK`, a database restored under another install's key) is told at
start, instead of failing every buyer quietly.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage

FACT = "kek_fingerprint"


class Verdict(enum.Enum):
    MATCHES = "matches"  # the database names this key
    RECORDED = "recorded"  # it named none, and nothing sealed contradicts this key
    DIFFERS = "differs"  # it names another key
    CANNOT_OPEN = "cannot_open"  # it named none, and a sealed key does not open under this one


async def settle(storage: SqliteStorage | PostgresStorage, fingerprint: str,
                 opens: Callable[[bytes, str], bool]) -> Verdict:
    """Compare `fingerprint` with the one the database holds, recording it when there is
    none (a fresh database, or one made before fingerprints were kept) and either nothing
    is sealed yet or a sealed key opens with it (`opens(ciphertext, associated data)`).
    One transaction; when processes race on a fresh database the first to commit wins and
    the others are compared with it."""
    async with storage.unit_of_work() as uow:
        db = uow.db
        held = await db.rows("SELECT value FROM server_facts WHERE name = ?", [FACT])
        if held:
            return Verdict.MATCHES if held[0][0] == fingerprint else Verdict.DIFFERS
        sealed = [*await db.rows("SELECT key_ciphertext, id FROM licenses "
                                 "WHERE key_ciphertext IS NOT NULL ORDER BY id LIMIT 1"),
                  *await db.rows("SELECT secret_ciphertext, id FROM webhook_endpoints "
                                 "ORDER BY id LIMIT 1")]
        if not all(opens(bytes(blob), row_id) for blob, row_id in sealed):
            return Verdict.CANNOT_OPEN
        await db.run("INSERT INTO server_facts (name, value) VALUES (?, ?) "
                     "ON CONFLICT (name) DO NOTHING", [FACT, fingerprint])
        held = await db.rows("SELECT value FROM server_facts WHERE name = ?", [FACT])
    if held[0][0] != fingerprint:
        return Verdict.DIFFERS
    return Verdict.RECORDED
