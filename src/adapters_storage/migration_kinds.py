"""Which migration statements expand the schema and which contract it (the rule in
`adapters_storage.schema`): what `licore migrate --check` reports and what
tests/contract/test_migration_rule.py holds new migrations to."""

from __future__ import annotations

import re
from typing import Any

_CREATE = re.compile(r"CREATE (?:UNIQUE )?(?:TABLE|INDEX) (?:IF NOT EXISTS )?(\w+)", re.I)
_ADD = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+)(.*)", re.I | re.S)
_INSERT = re.compile(r"INSERT INTO (\w+)", re.I)
_UPDATE = re.compile(r"UPDATE (\w+) SET (\w+) = [^,]*$", re.I | re.S)


def contractions(migration: list[str]) -> list[str]:
    """The statements of one migration that are not expansions, in order."""
    made: set[str] = set()  # tables this migration creates
    added: set[tuple[str, str]] = set()  # columns it adds
    return [text for text in (" ".join(s.split()) for s in migration)
            if not _expands(text, made, added)]


def _expands(text: str, made: set[str], added: set[tuple[str, str]]) -> bool:
    """Whether one statement expands; notes what it creates for the statements after it."""
    if (create := _CREATE.match(text)) is not None:
        made.add(create.group(1).lower())
        return True
    if (add := _ADD.match(text)) is not None:
        rest = add.group(3).upper()
        if "NOT NULL" in rest and "DEFAULT" not in rest:
            return False  # the release before inserts rows without it
        added.add((add.group(1).lower(), add.group(2).lower()))
        return True
    if (insert := _INSERT.match(text)) is not None:
        return insert.group(1).lower() in made
    if (update := _UPDATE.match(text)) is not None:
        return (update.group(1).lower(), update.group(2).lower()) in added
    return False


def kind(migration: list[str]) -> str:
    return "contract" if contractions(migration) else "expand"


async def applied(storage: Any, dialect: str) -> set[int]:
    """The migrations recorded in the database (none for a fresh one), changing nothing."""
    probe = ("SELECT to_regclass('schema_migrations') IS NOT NULL" if dialect == "postgresql"
             else "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'schema_migrations'")
    async with storage.unit_of_work() as uow:
        if not (await uow.db.rows(probe))[0][0]:
            return set()
        return {int(r[0]) for r in await uow.db.rows("SELECT version FROM schema_migrations")}
