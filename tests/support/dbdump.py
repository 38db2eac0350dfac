"""Every row of every table, straight from the database file or server, for tests that must
see what is really stored (secrets at rest, "nothing written")."""

from __future__ import annotations

import sqlite3

import psycopg


def tables_and_rows(database_url: str, skip: tuple[str, ...] = ()) -> dict[str, list[str]]:
    if database_url.startswith("sqlite"):
        con = sqlite3.connect(database_url.removeprefix("sqlite:///"))
        try:
            names = [r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            return {t: sorted(repr(r) for r in con.execute(f"SELECT * FROM {t}"))
                    for t in names if t not in skip}
        finally:
            con.close()
    with psycopg.connect(database_url) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "ORDER BY tablename")]
        return {t: sorted(repr(r) for r in conn.execute(f"SELECT * FROM {t}"))
                for t in names if t not in skip}
