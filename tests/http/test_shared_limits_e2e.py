"""Two server processes on one database share the rate-limit counters."""

from __future__ import annotations

import httpx

from tests.http.e2e import auth, obtain_key, setup_people
from tests.support.server import next_window, running_server


def test_two_processes_share_the_per_key_limit(database_url: str) -> None:
    with running_server(database_url) as a, running_server(database_url) as b:
        people = setup_people(database_url, "8")
        key = obtain_key(a, people, "products:read", people.owner_id, people.studio_id)
        next_window(a, b)  # a fixed minute window: a fresh one, on both clocks
        with httpx.Client(headers=auth(key)) as c:
            statuses = [c.get(f"{(a, b)[i % 2].url}/v1/products").status_code
                        for i in range(120)]
            over_a = c.get(f"{a.url}/v1/products")
            over_b = c.get(f"{b.url}/v1/products")
        assert statuses == [200] * 120
        assert over_a.status_code == 429 and over_b.status_code == 429
        assert int(over_b.headers["retry-after"]) >= 1


def test_twenty_device_code_starts_a_minute_per_ip(database_url: str) -> None:
    with running_server(database_url) as a, running_server(database_url) as b:
        people = setup_people(database_url, "9")
        next_window(a, b)
        body = {"client_id": people.client_id, "scope": "library:read"}
        statuses = [httpx.post(f"{(a, b)[i % 2].url}/auth/device/code", json=body).status_code
                    for i in range(21)]
        assert statuses[:20] == [200] * 20
        assert statuses[20] == 429
