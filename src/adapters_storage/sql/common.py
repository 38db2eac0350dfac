"""What every SQL repository shares: the executor it talks through, and row helpers.

Uniqueness conflicts are handled with `ON CONFLICT ... DO NOTHING RETURNING`, which never
aborts a PostgreSQL transaction, so the caller learns "taken" as a value and carries on in
the same unit of work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from adapters_storage.records import columns, from_row, to_row
from adapters_storage.schema import MIGRATIONS, statements
from licore.model import Page

T = TypeVar("T")


class Executor(Protocol):
    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    async def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...


# Rows passed as parameters, as a query that yields them: `INSERT INTO t (a, b) {source}`,
# `WITH r (a, b) AS ({source})`. Given the SQL type of each column and the rows, it returns
# the query's text and its parameters. The one place the batched statements of the runtime
# hot path differ by database; each adapter picks its own.
RowSource = Callable[[Sequence[str], Sequence[Sequence[Any]]], tuple[str, list[Any]]]


def values_rows(types: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
    """SQLite's: `VALUES (?, ?), (?, ?)`. The text grows with the rows, which costs little:
    sqlite3 caches statements by text, and a batch holds at most MAX_BATCH rows."""
    row = "(" + ", ".join("?" for _ in types) + ")"
    return "VALUES " + ", ".join(row for _ in rows), [v for r in rows for v in r]


def unnest_rows(types: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
    """PostgreSQL's: one array parameter per column, read back with `unnest`. The text is the
    same for any number of rows, so psycopg converts it once and, after a few executions,
    runs it as a prepared statement (no parse and plan per batch on the server)."""
    arrays = ", ".join(f"CAST(? AS {t}[])" for t in types)
    return (f"SELECT * FROM unnest({arrays})",
            [array_literal([r[k] for r in rows]) for k in range(len(types))])


def row_source(dialect: str) -> RowSource:
    """The database's way of passing a batch's rows: arrays on PostgreSQL, VALUES on SQLite."""
    return unnest_rows if dialect == "postgresql" else values_rows


def row_lock(dialect: str, mode: str = "UPDATE") -> str:
    """The clause that holds the rows a unit of work reads until it ends (`FOR UPDATE` or
    `FOR SHARE`): PostgreSQL's reads never wait without one. SQLite's unit of work holds the
    database's write lock from its start, so there it is nothing."""
    return f" FOR {mode}" if dialect == "postgresql" else ""


def array_literal(values: Sequence[str | int | None]) -> str:
    """`{"a","b",NULL}`: a PostgreSQL array as text, to be cast to its type by the statement.

    psycopg would adapt a list itself, but in Python code that inspects every list anew
    (tens of microseconds a list, more than the placeholder conversion this path saves on
    a small batch), and it types a list of ints by its largest value (int2[], int4[] ...),
    each type another prepared statement. A string parameter costs neither. Every element
    is quoted, so text such as `NULL`, `{`, `,` or spaces stays text; None is NULL."""
    if values and None not in values:
        texts = list(map(str, values))
        joined = "".join(texts)
        if '"' not in joined and "\\" not in joined:  # nothing to escape: join at C speed
            return '{"' + '","'.join(texts) + '"}'
    return "{" + ",".join(
        "NULL" if v is None else '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
        for v in values) + "}"


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


def insert(table: str, cls: type, conflict: str = "") -> str:
    cols = columns(cls)
    marks = ", ".join("?" for _ in cols)
    tail = f" ON CONFLICT {conflict} DO NOTHING RETURNING id" if conflict else ""
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks}){tail}"


def update(table: str, cls: type, where: str) -> str:
    sets = ", ".join(f"{c} = ?" for c in columns(cls) if c != "id")
    return f"UPDATE {table} SET {sets} WHERE {where}"


def without_id(record: Any) -> list[Any]:
    row = to_row(record)
    return row[1:]  # every record lists `id` first


class Repository:
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
