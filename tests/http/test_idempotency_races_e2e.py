"""Issue 28's race target: a crowd of simultaneous grants with one Idempotency-Key against
`licore serve --workers 4` (a thousand on PostgreSQL, fewer on SQLite, whose one writer
at a time makes each request slower): exactly one license and one kept key, every answer
the same status and the same bytes, no 5xx."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from tests.http.e2e import People, auth, owner_key, setup_people
from tests.http.test_races_e2e import ALL, PATIENT, burst, rows
from tests.support.server import Server, running_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, **PATIENT) as s:
        yield s


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    people: People = setup_people(server.database_url, "6")
    return owner_key(server, people, ALL)


def test_one_keyed_grant_sent_a_thousand_times_grants_once_and_answers_alike(
        server: Server, key: str) -> None:
    attempts = 1000 if server.database_url.startswith("postgres") else 200
    product = httpx.post(f"{server.url}/v1/products", json={"title": "Receipt"},
                         headers=auth(key)).json()["id"]
    idem = f"purchase-{secrets.token_hex(8)}"
    body = {"product_id": product, "user": "9001", "source": "developer_product",
            "purchase_id": idem}
    answers = burst(server, "/v1/licenses", [body] * attempts,
                    auth(key) | {"Idempotency-Key": idem})
    got = Counter((a.status_code, a.content) for a in answers)
    assert len(got) == 1, (Counter(a.status_code for a in answers),
                           [a.text for a in answers if a.status_code != 200][:3])
    [(status, content)] = got
    assert status == 200, content
    replayed = Counter(a.headers.get("idempotent-replayed") for a in answers)
    assert replayed == {None: 1, "true": attempts - 1}
    assert rows(server, "SELECT COUNT(*) FROM licenses WHERE product_id = ?",
                (product,)) == [(1,)]
    assert rows(server, "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = ?",
                (idem,)) == [(1,)]
    license_id = rows(server, "SELECT id, source, purchase_id FROM licenses "
                      "WHERE product_id = ?", (product,))
    assert license_id == [(answers[0].json()["license"]["id"], "developer_product", idem)]
