"""How many PostgreSQL connections a server process keeps is the operator's setting
(docs/operators.md, `LICORE_DATABASE_POOL_SIZE`), and it reaches the pool the composition root
opens."""

from __future__ import annotations

import pytest

from adapters_storage import PostgresStorage
from licore_cli import compose, settings

PG = "postgresql://postgres@127.0.0.1:5432/test"


def test_the_pool_size_defaults_to_8_and_can_be_set_from_1_to_100() -> None:
    empty = {"LICORE_CONFIG": ""}
    assert settings.load(empty).database_pool_size == 8
    assert settings.load({**empty, "LICORE_DATABASE_POOL_SIZE": "3"}).database_pool_size == 3
    for bad in ("0", "101", "many"):
        with pytest.raises(settings.SettingsError, match="LICORE_DATABASE_POOL_SIZE"):
            settings.load({**empty, "LICORE_DATABASE_POOL_SIZE": bad})


def test_the_composed_storage_opens_its_pool_at_that_size() -> None:
    loaded = settings.load({"LICORE_CONFIG": "", "LICORE_DATABASE_URL": PG,
                            "LICORE_DATABASE_POOL_SIZE": "3", "LICORE_KEK": "00" * 32})
    storage = compose.storage_for(loaded)
    assert isinstance(storage, PostgresStorage)
    assert storage.pool.max_size == 3 and storage.hot_pool.max_size == 2


def test_the_settings_defaults_are_the_storage_adapters_own() -> None:
    """settings.py writes the defaults out (it must not import the database drivers, which
    `licore --help` would then pay for): they must stay the adapters' own."""
    import adapters_storage

    loaded = settings.load({"LICORE_CONFIG": ""})
    assert loaded.database_pool_size == adapters_storage.POOL_SIZE
    assert loaded.database_busy_wait == adapters_storage.BUSY_WAIT
