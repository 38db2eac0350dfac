"""One real `licore serve` per test module and database backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.server import Server, running_server


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s
