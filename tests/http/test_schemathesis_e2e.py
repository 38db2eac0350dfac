"""Schemathesis over `/openapi.json` against a real server, on SQLite and PostgreSQL, with a
valid studio key and a valid library key: whatever it generates, no answer is a 5xx.
A small budget per operation keeps the run short (docs/operators.md, "What is bounded")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.http.e2e import People, auth, obtain_key, owner_key, setup_people
from tests.support.server import Server, running_server

STUDIO = ("products:read products:write licenses:read licenses:write packages:read "
          "packages:write")


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, LICORE_PARTNER_RATE_LIMIT="100000",
                        LICORE_RUNTIME_IP_RATE_LIMIT="100000",
                        LICORE_RUNTIME_KEY_RATE_LIMIT="100000") as s:
        yield s


@pytest.fixture(scope="module")
def keys(server: Server) -> dict[str, str]:
    people: People = setup_people(server.database_url, "6")
    return {"studio": owner_key(server, people, STUDIO),
            "library": obtain_key(server, people, "library:read library:download",
                                  people.buyer_id, None)}


def test_no_generated_request_brings_a_server_error(server: Server,
                                                    keys: dict[str, str]) -> None:
    """Each operation in turn, a fixed small budget each (schemathesis' pytest loader cannot
    take the per-database server fixture, so Hypothesis is driven here directly)."""
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    tried = {"requests": 0}
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an Err would raise: wanted
        headers = auth(keys["library"] if "/library" in operation.path else keys["studio"])

        @given(case=operation.as_strategy())
        @settings(max_examples=12, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def one(case: Any) -> None:
            tried["requests"] += 1
            case.call_and_validate(base_url=server.url, headers=headers,  # noqa: B023
                                   checks=[not_a_server_error], timeout=30)

        one()
    print(f"\nschemathesis: {tried['requests']} requests, no server error")
    assert tried["requests"] > 50
    assert "Traceback" not in server.log()
