"""The rolling-upgrade rule (adapters_storage.schema): every migration from EXPAND_ONLY_FROM
on only expands the schema, unless CONTRACTIONS lists it with its reason; and the statement
classifier tells the two kinds apart."""

from __future__ import annotations

from adapters_storage.migration_kinds import contractions
from adapters_storage.schema import CONTRACTIONS, EXPAND_ONLY_FROM, MIGRATIONS


def test_new_migrations_expand_only_or_are_listed_as_contractions() -> None:
    for number, migration in enumerate(MIGRATIONS, start=1):
        if number < EXPAND_ONLY_FROM:
            continue
        found = contractions(migration)
        assert not found or number in CONTRACTIONS, (
            f"migration {number} contracts the schema ({found[0]!r}): release N, still "
            f"serving during a rolling upgrade, may read what it removes. Expand now and "
            f"contract one release later, listed in schema.CONTRACTIONS with why no release "
            f"serving beside it reads it")
    for number in CONTRACTIONS:  # no stale entries
        assert number >= EXPAND_ONLY_FROM and contractions(MIGRATIONS[number - 1]), number


def test_the_classifier_knows_expansions_from_contractions() -> None:
    expand = ["CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)", "CREATE INDEX t_n ON t(n)",
              "CREATE UNIQUE INDEX t_u ON old(id)", "ALTER TABLE old ADD COLUMN note TEXT",
              "ALTER TABLE old ADD COLUMN kind TEXT NOT NULL DEFAULT 'a'",
              "INSERT INTO t (id, n) SELECT id, 1 FROM old", "UPDATE old SET note = 'x'"]
    assert contractions(expand) == []
    for contract in ("DROP TABLE old", "ALTER TABLE old RENAME TO older",
                     "ALTER TABLE old DROP COLUMN note", "DELETE FROM old",
                     "ALTER TABLE old ADD COLUMN must TEXT NOT NULL",
                     "UPDATE old SET name = 'x'", "INSERT INTO old (id) VALUES ('a')",
                     "ALTER TABLE old ALTER COLUMN note SET NOT NULL"):
        assert contractions([*expand, contract]) == [contract], contract
    # the migrations released before the rule: the classifier finds their contractions
    before = MIGRATIONS[:EXPAND_ONLY_FROM - 1]
    assert [n for n, m in enumerate(before, 1) if contractions(m)] == [4, 6, 8, 12]


async def test_migrate_check_tells_what_an_upgrade_applies_and_changes_nothing(
        database_url: str) -> None:
    from adapters_storage import open_storage
    from licore_cli.migrate_check import check

    fresh, text = await check(database_url)
    assert [p["migration"] for p in fresh["pending"]] == list(range(1, len(MIGRATIONS) + 1))
    assert fresh["database_at"] == 0 and "would apply migration 1 (expand)" in text
    again, _ = await check(database_url)
    assert again == fresh  # nothing was applied by asking
    storage = open_storage(database_url)
    try:
        await storage.migrate()
        assert (await check(database_url))[0]["pending"] == []
        async with storage.unit_of_work() as uow:  # as a newer release would have left it
            await uow.db.run("INSERT INTO schema_migrations (version) VALUES (?)",
                             [len(MIGRATIONS) + 1])
        newer, text = await check(database_url)
        assert newer["newer"] == [len(MIGRATIONS) + 1] and "nothing to apply" in text
        assert "a newer release applied" in text
    finally:
        await storage.close()
