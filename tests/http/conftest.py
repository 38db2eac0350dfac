"""One real `licore serve` per test module and database backend, and every JSON answer a test
receives held to the server's OpenAPI document (tests/support/answers.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.answers import judged
from tests.support.server import Server, running_server


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


@pytest.fixture(autouse=True)
def answers_match_the_document() -> Iterator[None]:
    """Fails the test, at its end, when an answer it received differs from its schema."""
    with judged() as problems:
        yield
    assert not problems, "answers that differ from /openapi.json:\n" + "\n".join(problems)
