"""Storage fixtures: every storage test runs on SQLite and on PostgreSQL, and a test that
takes the `storage` fixture on the in-memory storage too.

With CI=true a PostgreSQL test never skips: if the server is unreachable the test fails.
Elsewhere it skips with a reason that says so. Each PostgreSQL test gets a schema of its own.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import psycopg
import pytest
import pytest_asyncio

from adapters_storage import MemoryStorage, open_storage
from licore.storage_ports import Storage
from tests.support import tls_once
from tests.support.ordering import longest_first, recorder

tls_once.install()

PG_URL = os.environ.get("LICORE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() == "true"


def _postgres_or_skip() -> None:
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        reason = f"PostgreSQL is not reachable at {PG_URL}: {exc}".splitlines()[0]
        if IN_CI:
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)


@contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    _postgres_or_skip()
    schema = "t_" + secrets.token_hex(6)
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in PG_URL else "?"
    try:
        yield f"{PG_URL}{sep}options=-csearch_path%3D{schema}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def pg_schema_url() -> Iterator[str]:
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture(scope="module",
                params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def module_database_url(request: pytest.FixtureRequest,
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One database for a whole module of end-to-end tests, on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'licore.db'}"
        return
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'licore.db'}"
    url: str = request.getfixturevalue("pg_schema_url")
    return url


@pytest_asyncio.fixture(params=["memory", "sqlite",
                                pytest.param("postgres", marks=pytest.mark.postgres)])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    async with migrated_storage(request, tmp_path) as store:
        yield store


@asynccontextmanager
async def migrated_storage(request: pytest.FixtureRequest,
                           tmp_path: Path) -> AsyncIterator[Storage]:
    """The store `request.param` names (memory, sqlite, postgres), migrated, closed after."""
    store: Storage
    if request.param == "memory":
        store = MemoryStorage()
    elif request.param == "sqlite":
        store = open_storage(f"sqlite:///{tmp_path / 'licore.db'}")
    else:
        store = open_storage(request.getfixturevalue("pg_schema_url"))
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


def pytest_configure(config: pytest.Config) -> None:
    recording = recorder()
    if recording is not None:
        config.pluginmanager.register(recording, "licore-durations")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)
