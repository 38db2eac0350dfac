"""The database's record of the key-encryption key its sealed keys were made with.

Kept beside the data it describes, so that a process holding another key (a host started
without the shared `LICORE_KEK`, a database restored under another install's key) is told at
start, instead of failing every buyer quietly.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from adapters_storage.postgres import PostgresStorage
    from adapters_storage.sqlite import SqliteStorage

FACT = "kek_fingerprint"
# After a rotation (`licore kek rotate`, docs/operators.md): the look-up root sealed under the
# current key (hex), and the fingerprint of the key the rotation replaced.
ROOT_FACT = "kek_lookup_root"
REPLACED_FACT = "kek_replaced"


class Verdict(enum.Enum):
    MATCHES = "matches"  # the database names this key (or the other one this process holds)
    RECORDED = "recorded"  # it named none, and nothing sealed contradicts this key
    DIFFERS = "differs"  # it names another key
    CANNOT_OPEN = "cannot_open"  # it named none, and a sealed key does not open under this one
    REPLACED = "replaced"  # it names another key, which a rotation put in this one's place


@attrs.frozen
class Settled:
    verdict: Verdict
    named: str = ""  # the fingerprint the database names, when this process holds it
    sealed_root: bytes | None = attrs.field(default=None, repr=False)


async def settle(storage: SqliteStorage | PostgresStorage, fingerprint: str,
                 opens: Callable[[bytes, str], bool], also: tuple[str, ...] = ()) -> Settled:
    """Compare `fingerprint` (or the `also` held beside it) with the one the database
    holds, recording it when there is none (a fresh database, or one made before
    fingerprints were kept) and either nothing is sealed yet or a sealed key opens with it
    (`opens(ciphertext, associated data)`). One transaction; when processes race on a
    fresh database the first to commit wins and the others are compared with it."""
    async with storage.unit_of_work() as uow:
        db = uow.db
        facts = dict(await db.rows("SELECT name, value FROM server_facts WHERE name IN "
                                   "(?, ?, ?)", [FACT, ROOT_FACT, REPLACED_FACT]))
        held = facts.get(FACT)
        if held is None:
            sealed = [*await db.rows("SELECT key_ciphertext, id FROM licenses "
                                     "WHERE key_ciphertext IS NOT NULL ORDER BY id LIMIT 1"),
                      *await db.rows("SELECT secret_ciphertext, id FROM webhook_endpoints "
                                     "ORDER BY id LIMIT 1")]
            if not all(opens(bytes(blob), row_id) for blob, row_id in sealed):
                return Settled(Verdict.CANNOT_OPEN)
            await db.run("INSERT INTO server_facts (name, value) VALUES (?, ?) "
                         "ON CONFLICT (name) DO NOTHING", [FACT, fingerprint])
            held = (await db.rows("SELECT value FROM server_facts WHERE name = ?",
                                  [FACT]))[0][0]
            if held == fingerprint:
                return Settled(Verdict.RECORDED, fingerprint)
    root = facts.get(ROOT_FACT)
    sealed_root = bytes.fromhex(root) if root else None
    if held in (fingerprint, *also):
        return Settled(Verdict.MATCHES, held, sealed_root)
    if facts.get(REPLACED_FACT) in (fingerprint, *also):
        return Settled(Verdict.REPLACED)
    return Settled(Verdict.DIFFERS)
